"""The built wheel is complete: installed non-editable in a fresh venv, it plans and runs.

The wheel is built from a copy of the sources (so the checkout stays clean) and installed with
``--no-deps`` into a new venv whose dependencies come from this test run's own site-packages
(one ``.pth`` line): what is under test is the wheel's contents, not PyPI. The test then plans
through the scripted OpenAI server with the wheel's console script, from a directory outside
the repository and without ``PYTHONPATH``, so nothing can be read from the checkout. The store
conformance suite is in the same wheel, a package of its own that importing toolplan never loads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolplan_conformance
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "packages", "prompts")


def test_pyproject_lists_every_package_directory() -> None:
    """Packages are listed by hand (prompts/ is mapped in); a new package must not be left out."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join(path.parent.relative_to(REPO / "packages").parts)
        for path in (REPO / "packages").rglob("*")
        if path.suffix in (".py", ".json", ".html", ".js", ".css")
        and "__pycache__" not in path.parts
    }
    assert set(config["packages"]) == on_disk | {"toolplan.prompts"}
    assert config["package-dir"]["toolplan.prompts"] == "prompts"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name,
                source / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
            )
        else:
            shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("toolplan-*.whl")
    return built


def test_wheel_ships_the_prompts_and_examples(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for prompt in (REPO / "prompts").glob("*.md"):
        assert f"toolplan/prompts/{prompt.name}" in names
    assert "toolplan/examples/blog_chain.json" in names and "toolplan/py.typed" in names


def test_wheel_ships_the_plan_page(wheel: Path) -> None:
    """The plan page's files are package data (pyproject's package-data), not only in the
    checkout: ``toolplan serve`` from the wheel serves ``/ui/plans`` offline."""
    from toolplan.api.ui import ASSETS

    names = set(zipfile.ZipFile(wheel).namelist())
    on_disk = {path.name for path in (REPO / "packages/toolplan/api/ui_assets").iterdir()}
    assert on_disk == set(ASSETS)
    for name in ASSETS:
        assert f"toolplan/api/ui_assets/{name}" in names


def test_wheel_ships_the_conformance_suite_as_its_own_package(wheel: Path) -> None:
    """Store authors import ``toolplan_conformance`` from the installed wheel, beside toolplan."""
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    suite = REPO / "packages" / "toolplan_conformance"
    for module in suite.glob("*.py"):
        assert f"toolplan_conformance/{module.name}" in names
    assert "toolplan_conformance/py.typed" in names
    assert not any(name.startswith("toolplan/store/") and "conformance" in name for name in names)
    (metadata,) = (name for name in names if name.endswith(".dist-info/METADATA"))
    assert "Provides-Extra: conformance" in archive.read(metadata).decode().splitlines()


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Dependencies from this run's environment. A path added by a .pth line is not a site
    # directory, so the editable install's own .pth hook there is never run.
    (Path(purelib) / "toolplan_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", wheel],
        check=True,
        capture_output=True,
    )
    yield root


def first_line(prompt: str) -> str:
    """The first line of a prompt's text in the checkout, after its version header."""
    return (REPO / "prompts" / f"{prompt}.md").read_text().splitlines()[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLPLAN_", "OPENAI_"))}
    env.pop("PYTHONPATH", None)
    return {**env, **extra}


def test_installed_wheel_plans_through_an_openai_server(venv: Path, tmp_path: Path) -> None:
    python, script = venv / "bin" / "python", venv / "bin" / "toolplan"
    with FakeOpenAIServer(api_key="sk-test") as llm:
        llm.script(
            [
                # the default format: the plan as Python statements (its prompt must ship)
                Reply.content(
                    'author = createAuthor(name="Alice", email="alice@test.com")\n'
                    'blog = createBlog(authorId=author["_id"], title="Hello", content="about world")',
                    usage=(10, 5),
                ),
                Reply.structured({"action": "answer", "answer": "Alice blogs."}, usage=(10, 5)),
            ]
        )
        done = subprocess.run(
            [str(script), "run", QUERY, "--json"],
            cwd=tmp_path,
            env=_env(
                OPENAI_API_KEY="sk-test",
                OPENAI_BASE_URL=llm.base_url,
                TOOLPLAN_LLM_RETRIES="0",
                TOOLPLAN_STORE=f"sqlite:///{tmp_path / 'tp.db'}",
                TOOLPLAN_TOOLS="blog",
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded" and result["llmCalls"] == 2
    assert result["answer"] == "Alice blogs."
    system = "".join(m["content"] for m in llm.requests[0]["messages"] if m["role"] == "system")
    assert first_line("planner-python") in system and "def createAuthor(" in system
    respond = "".join(m["content"] for m in llm.requests[1]["messages"] if m["role"] == "system")
    assert first_line("respond") in respond

    where = subprocess.run(
        [str(python), "-c", "import toolplan.prompts as p; print(p.__file__)"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(venv)), where  # the wheel's copy, not the checkout

    described = subprocess.run(
        [str(python), "-c", "import toolplan; print(toolplan.plan_tool([]).description)"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert first_line("execute-plan") in described


def test_installed_toolplan_does_not_import_the_conformance_suite(
    venv: Path, tmp_path: Path
) -> None:
    """The suite is importable from the wheel, and importing toolplan never loads it."""
    script = (
        "import json, sys\n"
        "import toolplan, toolplan.store\n"
        "toolplan.store.open_store('sqlite:///' + sys.argv[1]).close()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'toolplan_conformance')\n"
        "import toolplan_conformance as suite\n"
        "tests = [n for n in suite.__all__ if n.startswith('test_')]\n"
        "print(json.dumps({'loaded': loaded, 'file': suite.__file__, 'tests': len(tests)}))\n"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script, str(tmp_path / "tp.db")],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    assert found["file"].startswith(str(venv)), found["file"]  # the wheel's copy
    assert found["tests"] == len(
        [name for name in toolplan_conformance.__all__ if name.startswith("test_")]
    )
