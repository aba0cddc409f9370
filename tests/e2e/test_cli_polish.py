"""What a new user sees, through the real ``toolplan`` console script at 80 columns."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import time
from typing import Any

import pytest

from tests.e2e.conftest import REPO, Cli
from toolplan import __version__

FALLBACK_PLAN = {
    "steps": [
        {"id": "author", "tool": "createAuthor", "parameters": {"name": "A", "email": "a@x.io"}},
        {
            "id": "blog",
            "tool": "createBlog",
            "parameters": {"authorId": "nobody", "title": "T", "content": "c"},
            "fallback": {"tool": "createDraft", "parameters": {"title": "T", "content": "c"}},
        },
        {"id": "bad", "tool": "getAuthor", "parameters": {"authorId": "nobody"}},
        {"id": "after", "tool": "getAuthor", "parameters": {"authorId": "{{bad._id}}"}},
    ]
}


@pytest.fixture
def cli80(cli: Cli) -> Cli:
    cli.env["COLUMNS"] = "80"
    return cli


def test_version_and_short_help(cli80: Cli) -> None:
    version = cli80("--version")
    assert version.code == 0 and version.stdout.strip() == f"toolplan {__version__}"
    for args in (["-h"], ["execute", "-h"], ["tools", "-h"]):
        shown = cli80(*args)
        assert shown.code == 0, shown.stderr
        assert shown.stdout.startswith("Usage: toolplan")


def test_help_reads_cleanly_at_80_columns(cli80: Cli) -> None:
    for command in (
        "submit",
        "execute",
        "run",
        "plan",
        "show",
        "tools",
        "batch",
        "serve",
        "worker",
        "cancel",
    ):
        text = cli80(command, "--help").stdout
        assert not re.search(r"<(bool|str|int|float|path|list)", text), (command, text)
        assert "{" not in text.splitlines()[0], text  # usage names arguments like PLAN_ID
        cut = [line for line in text.splitlines() if line.rstrip().endswith(("...", "…"))]
        assert not [line for line in cut if "[ARGS]..." not in line], (command, cut)
        assert all(len(line) <= 80 for line in text.splitlines()), (command, text)
    execute = cli80("execute", "--help").stdout
    assert "Usage: toolplan execute [OPTIONS] PLAN_ID" in execute
    assert "--tools MODULE" in execute and "--store URI" in execute
    assert ".toolplan/toolplan.db" in execute
    top = cli80("--help").stdout
    commands = top.split("Commands:")[1].splitlines()
    assert not [line for line in commands if line.endswith("...")]  # one whole line each


def test_tools_at_80_columns_never_cut_a_name(cli80: Cli) -> None:
    names = [t["name"] for t in cli80("tools", "--json").json()["tools"]]
    assert len(names) > 10
    listed = cli80("tools")
    assert listed.code == 0, listed.stderr
    assert all(len(line) <= 80 for line in listed.stdout.splitlines())
    for name in names:
        assert re.search(rf"│ {re.escape(name)} +│", listed.stdout), name
    # the description's first sentence, not one word per line
    assert "Create an author" in listed.stdout


def test_tools_name_shows_one_tool_in_full(cli80: Cli) -> None:
    shown = cli80("tools", "check_threshold")
    assert shown.code == 0, shown.stderr
    out = shown.stdout
    assert out.splitlines()[0] == "check_threshold"
    assert "crosses a threshold" in out  # the whole description
    assert "returns: {metric: string, value: number, threshold: number" in out  # declared output
    for cell in ("metric_name", "string", "number", '"gt"', "yes", "no"):
        assert cell in out, cell
    assert "observed: not called in this store yet" in out
    as_json = cli80("tools", "check_threshold", "--json").json()
    assert as_json["name"] == "check_threshold" and "properties" in as_json["parameters"]
    unknown = cli80("tools", "check_treshold")
    assert unknown.code == 2 and "did you mean 'check_threshold'" in unknown.stderr


def test_a_tag_that_matches_nothing_says_so(cli80: Cli) -> None:
    none = cli80("tools", "--tag", "nope")
    assert none.code == 2
    assert "no tool has the tag 'nope'" in none.stderr and "blog" in none.stderr


def test_status_fallback_and_skip_read_clearly(cli80: Cli) -> None:
    ran = cli80("run", "--file", cli80.write_plan(FALLBACK_PLAN))
    assert ran.code == 1
    assert "skipped: skipped" not in ran.stderr
    assert "- after (getAuthor) skipped because dependency 'bad' failed" in ran.stderr
    assert "retrying" not in ran.stderr
    assert "calling its fallback 'createDraft'" in ran.stderr
    assert "✓ blog (createBlog) succeeded with its fallback" in ran.stderr
    blog_row = next(line for line in ran.stdout.splitlines() if line.startswith("│ blog "))
    assert "fallback:" in blog_row
    assert "execution status: partial" in ran.stdout

    plan_id = re.search(r"toolplan show (plan_\w+)", ran.stdout)
    assert plan_id is not None
    shown = cli80("show", plan_id.group(1))
    assert "plan status: planned (validated and stored" in shown.stdout
    assert "execution status: partial (some steps succeeded" in shown.stdout
    assert "\nstatus: planned" not in shown.stdout
    assert re.search(
        r"blog +succeeded +[\d.]+ s \((?:plan|history|default)\) +fallback:", shown.stdout
    )

    again = cli80("execute", plan_id.group(1))
    assert again.code == 1
    assert "already finished (partial)" in again.stderr
    assert "no tool was called" in again.stderr


def test_a_running_step_shows_no_python_none(cli80: Cli) -> None:
    plan = {"steps": [{"id": "a", "tool": "gate", "parameters": {"label": "a"}}]}
    plan_id = cli80("submit", "--file", cli80.write_plan(plan), "--json").json()["planId"]
    process = cli80.popen("execute", plan_id)
    deadline = time.monotonic() + 30
    while not any(c["step"] == "a" for c in cli80.calls()):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    shown = cli80("show", plan_id)
    assert "execution status: running (running now, or interrupted" in shown.stdout
    assert "None" not in shown.stdout


def test_model_errors_say_what_toolplan_accepts(cli80: Cli) -> None:
    nonsense = cli80("plan", "do it", "--model", "nonsense")
    assert nonsense.code == 2
    assert "give provider:model, e.g. openai:gpt-4o-mini" in nonsense.stderr
    assert "model_provider" not in nonsense.stderr
    if importlib.util.find_spec("langchain_xai") is not None:
        pytest.skip("langchain-xai is installed here")
    missing = cli80("plan", "do it", "--model", "xai:grok-2")
    assert missing.code == 3
    assert "needs the langchain-xai package: pip install langchain-xai" in missing.stderr
    assert missing.stderr.count("pip install") == 1


def test_store_accepts_a_bare_sqlite_file_path(cli: Cli) -> None:
    """``--store runs.db`` is the SQLite file ``runs.db`` here (named by its absolute path),
    not "unsupported store URI"; a string that is neither a URI nor such a path is refused."""
    plan = cli.tmp / "plan.json"
    plan.write_text(json.dumps(FALLBACK_PLAN))
    submitted = cli("submit", "--file", str(plan), "--store", "runs.db", "--json")
    assert submitted.code == 0, submitted.stderr
    assert (cli.tmp / "runs.db").is_file()
    plan_id = submitted.json()["planId"]
    done = cli("execute", plan_id, "--store", str(cli.tmp / "runs.db"))
    assert done.code == 1, done.stderr  # the plan's own failures, in that same file
    assert f"stored in sqlite:///{cli.tmp / 'runs.db'}" in done.stdout
    cli.env["TOOLPLAN_STORE"] = "runs.db"
    assert cli("show", plan_id, "--json").json()["planId"] == plan_id

    refused = cli("show", plan_id, "--store", "runs")
    assert refused.code == 2 and "Traceback" not in refused.stderr
    assert "unsupported store URI 'runs'" in refused.stderr
    assert "a path ending in .db" in refused.stderr


def _documented_json_shape() -> dict[str, Any]:
    page = (REPO / "docs" / "cli.md").read_text()
    anchor = page.index("with `--json`, stdout holds exactly one JSON object")
    block = page[anchor:].split("```json\n", 1)[1].split("```", 1)[0]
    return json.loads(block)


def test_the_documented_json_shape_is_the_real_one(cli: Cli) -> None:
    cli.env["TOOLPLAN_OUTPUT_LIMIT_BYTES"] = "40"  # the author's output is stored truncated
    real = cli("run", "--file", cli.write_plan(FALLBACK_PLAN), "--json").json()
    documented = _documented_json_shape()
    assert set(real) == set(documented)
    real_step_keys = set().union(*(set(step) for step in real["steps"]))
    assert real_step_keys == set(documented["steps"][0])
    statuses = set(documented["status"].split("|"))
    assert real["status"] in statuses
    assert {s["status"] for s in real["steps"]} <= set(documented["steps"][0]["status"].split("|"))
    by_id = {s["id"]: s for s in real["steps"]}
    assert by_id["blog"]["usedFallback"] is True and "usedFallback" not in by_id["bad"]
    assert by_id["author"]["outputTruncated"] is True
