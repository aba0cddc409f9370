"""Every code example of the README and of the documentation site (``docs/**/*.md``) runs,
against the tools it names, on a fresh SQLite store: an example that breaks fails the suite.

What runs:

- a ``json`` block holding a plan (``"steps"``): ``toolplan run --file`` with the built-in
  toolsets and ``examples.tools``; it must succeed, and every ``forEach`` step must have mapped
  over at least one item (an example that maps over nothing shows nothing);
- a ``json`` block holding one step (``"id"`` and ``"tool"``): its shape is checked, as a plan of
  that step (it names steps of a plan around it, so it is not run);
- a ``bash`` or ``console`` block with a ``toolplan`` command: each command, in order, in a
  folder where ``examples/`` is this repository's. In a ``console`` block the lines starting
  ``$ `` are the commands; ``echo $?`` checks the exit code the README prints, and every other
  command must exit 0. A ``plan_...`` ID in a command means the latest plan the block made (a
  block that made none first submits ``examples/blog_chain.json``, as it does before a
  ``--last``, which follows a block that ran a plan). The README's own commands name no plan ID:
  a reader's store has none of them (``toolplan show --last`` instead). In ``a && b`` chains the
  set-up before the first ``toolplan`` command (a venv, ``pip install``) is skipped: the suite
  runs in one;
- a ``python`` block: run as a program (``python -c``, in its own process, so that what one
  example sets up, an event loop or a tracer provider, cannot leak into another), in that same
  folder; it must exit 0. A ``python`` block preceded by ``<!-- plan.py -->`` is a plan written in
  Python: it is run as a plan file, ``toolplan run --file plan.py``, like a ``json`` plan;
- a ``toml`` block: parsed.

A shell block preceded by ``<!-- scripted-model: ... -->`` plans with a model: its commands run
against a scripted OpenAI-compatible server (tests/support/fake_openai.py) that answers with the
ideal plan of tests/support/plans.py's query, then an answer.

A block preceded by ``<!-- no-run: REASON -->`` is not run: it needs a model or servers, or it
shows output, not a plan; a ``python`` one is still compiled, so it cannot hold a syntax error.
Other blocks (JSON that is neither a plan nor a step; shell without a ``toolplan`` command; text,
Mermaid, GraphQL) are not examples of either.

Sybil and pytest-examples were the alternatives: both run Python blocks in-process, and neither
runs a ``console`` transcript's exit codes or a plan through the real CLI, which most of these
examples are; so this one small extractor does every kind, with one marker syntax.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer, Reply
from toolplan.plan_format.plan import parse_plan

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted([README, *(REPO / "docs").rglob("*.md")])
"""The README and every page of the documentation site."""
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
NO_RUN = re.compile(r"<!--\s*no-run:\s*(.+?)\s*-->\s*$")
PYTHON_PLAN = re.compile(r"<!--\s*plan\.py\s*-->\s*$")
SCRIPTED_MODEL = re.compile(r"<!--\s*scripted-model\b.*-->\s*$")
PLAN_ID = re.compile(r"plan_\d{9,11}_[a-z0-9]{6,32}")
SHELLS = ("bash", "sh", "shell", "console")
TOOLS = "blog,metrics,weather,examples.tools"
TIMEOUT = 120


@dataclass(frozen=True)
class Block:
    """One fenced block of a Markdown file."""

    line: int
    lang: str
    text: str
    no_run: str | None
    source: str = "README.md"
    python_plan: bool = False
    scripted_model: bool = False

    @property
    def name(self) -> str:
        return f"{self.source}:{self.line}:{self.lang}"


def readme_blocks(text: str | None = None, source: str = "README.md") -> list[Block]:
    """Every fenced block, with the reason it is not run when a ``no-run`` comment precedes it."""
    text = README.read_text() if text is None else text
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NO_RUN.search(before)
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(
            Block(
                line,
                match.group(1),
                match.group(2),
                reason and reason.group(1),
                source,
                bool(PYTHON_PLAN.search(before)),
                bool(SCRIPTED_MODEL.search(before)),
            )
        )
    return blocks


def doc_blocks() -> list[Block]:
    """The fenced blocks of the README and of every documentation page."""
    return [
        block
        for path in DOCS
        for block in readme_blocks(path.read_text(), str(path.relative_to(REPO)))
    ]


def _setup_dropped(line: str) -> str:
    """The command line from its first ``toolplan`` command on (``a && b`` chains)."""
    parts = [part.strip() for part in line.split("&&")]
    for index, part in enumerate(parts):
        if _is_toolplan(part):
            return " && ".join(parts[index:])
    return line


def _is_toolplan(command: str) -> bool:
    words = [w for w in command.split() if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", w)]
    return bool(words) and words[0] == "toolplan"


def commands(block: Block) -> list[tuple[str, str | None]]:
    """The block's commands, each with the output the README shows after it (console only)."""
    lines = block.text.splitlines()
    if block.lang != "console":
        return [(_setup_dropped(line), None) for line in lines if line.strip()]
    found: list[tuple[str, str | None]] = []
    for line in lines:
        if line.startswith("$ "):
            found.append((_setup_dropped(line[2:]), ""))
        elif found:
            command, shown = found[-1]
            found[-1] = (command, f"{shown}{line}\n")
    return found


def kind(block: Block) -> str | None:
    """``plan``, ``step``, ``commands``, ``python``, ``python-plan`` or ``toml`` for a block that is
    an example of one; else None."""
    if block.lang == "python":
        return "python-plan" if block.python_plan else "python"
    if block.lang == "toml":
        return "toml"
    if block.lang == "json":
        try:
            value = json.loads(block.text)
        except ValueError:
            return "unparsed"
        if isinstance(value, dict) and "steps" in value:
            return "plan"
        if isinstance(value, dict) and {"id", "tool"} <= set(value):
            return "step"
        return None
    if block.lang in SHELLS and any(_is_toolplan(c) for c, _ in commands(block)):
        return "commands"
    return None


EXAMPLES = [block for block in doc_blocks() if kind(block) is not None]


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("TOOLPLAN_", "OPENAI_"))
    }
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(tmp_path),  # examples.tools, as `PYTHONPATH=.` from the root
            "TOOLPLAN_STORE": f"sqlite:///{tmp_path / 'readme.db'}",
            "COLUMNS": "200",
        }
    )
    return env


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder whose ``examples/`` is the repository's (commands name ``examples/...``)."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    return tmp_path


def _shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``command`` run by bash in a session of its own, which is ended afterwards: nothing a
    README command starts in the background outlives it."""
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        out, err = "", f"timed out after {TIMEOUT} s"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _run_plan(block: Block, workdir: Path) -> None:
    plan = workdir / ("plan.py" if block.python_plan else "plan.json")
    plan.write_text(block.text)
    env = {**_environment(workdir), "TOOLPLAN_TOOLS": TOOLS}
    done = _shell(f"toolplan run --file {plan} --json", workdir, env)
    assert done.returncode == 0, f"{block.name}: exit {done.returncode}\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["status"] == "succeeded", (block.name, result)
    steps = {step["id"]: step for step in result["steps"]}
    mapped = (
        [step for step in result["steps"] if "items" in step]  # a Python plan's for loops
        if block.python_plan
        else [step for step in json.loads(block.text)["steps"] if "forEach" in step]
    )
    for step in mapped:
        output = steps[step["id"]]["output"]
        assert isinstance(output, list) and output, (
            f"{block.name}: forEach step {step['id']!r} mapped over no item; give the "
            "example data to map over"
        )


def _run_commands(block: Block, workdir: Path, model: dict[str, str] | None = None) -> None:
    env = {**_environment(workdir), **(model or {})}
    latest: str | None = None
    previous: subprocess.CompletedProcess[str] | None = None
    steps = commands(block)
    for index, (command, shown) in enumerate(steps):
        if command.strip() == "echo $?":
            assert previous is not None and shown is not None, block.name
            expected = int(shown.split()[0])
            assert previous.returncode == expected, (
                f"{block.name}: {previous.args[-1]!r} exited {previous.returncode}, "
                f"the README shows {expected}\n{previous.stderr[-3000:]}"
            )
            continue
        if PLAN_ID.search(command) or "--last" in command.split():
            if latest is None:
                made = _shell(
                    "toolplan submit --file examples/blog_chain.json --json", workdir, env
                )
                assert made.returncode == 0, made.stderr
                latest = json.loads(made.stdout)["planId"]
            command = PLAN_ID.sub(latest, command)
        done = _shell(command, workdir, env)
        ids = PLAN_ID.findall(done.stdout + done.stderr)
        latest = ids[-1] if ids else latest
        checked_next = index + 1 < len(steps) and steps[index + 1][0].strip() == "echo $?"
        if not checked_next:
            assert done.returncode == 0, (
                f"{block.name}: {command!r} exited {done.returncode}\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            )
        previous = done


def _run_python(block: Block, workdir: Path) -> None:
    env = _environment(workdir)
    done = subprocess.run(
        [sys.executable, "-c", block.text],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, (
        f"{block.name}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )


@pytest.mark.parametrize("block", EXAMPLES, ids=[block.name for block in EXAMPLES])
def test_readme_example_runs(block: Block, workdir: Path) -> None:
    if block.lang == "python":
        # Even an example that cannot run here (it needs a model) must be valid Python; top-level
        # ``await`` is allowed, as in an async REPL or a notebook.
        compile(block.text, block.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if block.no_run:
        pytest.skip(f"no-run: {block.no_run}")
    what = kind(block)
    if what == "unparsed":
        pytest.fail(
            f"{block.name}: a json block that does not parse; fix it, or mark it "
            "<!-- no-run: REASON --> when it shows a fragment",
            pytrace=False,
        )
    elif what in ("plan", "python-plan"):
        _run_plan(block, workdir)
    elif what == "python":
        _run_python(block, workdir)
    elif what == "toml":
        tomllib.loads(block.text)
    elif what == "step":
        parse_plan({"steps": [json.loads(block.text)]})
    elif block.scripted_model:
        _run_with_scripted_model(block, workdir)
    else:
        _run_commands(block, workdir)


BLOG_PLAN_PY = """```python
author = createAuthor(name="Alice", email="alice@test.com")
blog = createBlog(authorId=author["_id"], title="Hello", content="about world")
```"""
"""The ideal plan of the README's query, as the model writes it in the default format."""


def _run_with_scripted_model(block: Block, workdir: Path) -> None:
    """A block that plans with a model, against a scripted OpenAI-compatible server that answers
    the planning call with the ideal plan of tests/support/plans.py's query, in the default plan
    format (Python statements), and the answer call with an answer; both calls must have been
    made, the first without a schema."""
    with FakeOpenAIServer(api_key="sk-test") as server:
        server.script(
            [
                Reply.content(BLOG_PLAN_PY),
                Reply.structured({"action": "answer", "answer": "Alice has a blog, Hello."}),
            ]
        )
        model = {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "TOOLPLAN_LLM_RETRIES": "0",
        }
        _run_commands(block, workdir, model)
        assert len(server.requests) == 2, f"{block.name}: {len(server.requests)} model calls"
        first = server.requests[0]
        assert "response_format" not in first and "tools" not in first, block.name


def test_the_examples_that_matter_are_found_and_few_are_skipped() -> None:
    # The extractor must see the quick starts, the approval walk-through, the forEach plan and
    # the Python plan (so a change to the pages' markup cannot silently leave them out), every
    # page of the site, and the no-run set stays small.
    runnable = [block for block in EXAMPLES if not block.no_run]
    assert any(kind(b) == "commands" and "toolplan approve" in b.text for b in runnable)
    assert any(kind(b) == "plan" and '"forEach"' in b.text for b in runnable)
    assert any(kind(b) == "python-plan" and "for " in b.text for b in runnable)
    readme = [b for b in runnable if b.source == "README.md"]
    assert any(b.scripted_model and 'toolplan run "' in b.text for b in readme)
    assert any(kind(b) == "commands" and "toolplan run --file" in b.text for b in readme)
    assert any(kind(b) == "python" and "Toolplan" in b.text for b in readme)
    pages = {path.name for path in DOCS}
    assert {"plans.md", "planning.md", "cli.md", "python.md", "operations.md"} <= pages
    skipped = [b.name for b in doc_blocks() if b.no_run]
    assert not [name for name in skipped if name.startswith("README.md")], skipped
    assert len(skipped) <= 14, skipped


def test_the_readmes_commands_name_no_plan_id() -> None:
    # A plan ID written into the README cannot be in a reader's store: `toolplan show
    # plan_1732200000_ef34gh56ij` said "does not exist" (issue 52). A console transcript may show
    # the ID its own run printed; a command to copy must work as written.
    placeholders = [
        (block.name, command)
        for block in readme_blocks()
        if kind(block) == "commands" and block.lang != "console"
        for command, _ in commands(block)
        if PLAN_ID.search(command)
    ]
    assert placeholders == []


def test_the_extractor_reads_markers_chains_and_console_output() -> None:
    text = (
        'intro\n\n<!-- no-run: needs a model -->\n```bash\ntoolplan run "q"\n```\n\n'
        "```console\n$ python3 -m venv v && toolplan run --file x.json\nout\n$ echo $?\n4\n```\n"
    )
    first, second = readme_blocks(text)
    assert first.no_run == "needs a model" and second.no_run is None
    assert commands(second) == [("toolplan run --file x.json", "out\n"), ("echo $?", "4\n")]
    assert kind(second) == "commands"
