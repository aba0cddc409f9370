"""The CLI contract end to end on the embedded SQLite store: in-process, as its subprocess would
run (``tests/e2e/conftest.py``), and in subprocesses where a process is the point (start-up,
signals)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e import cli_cases
from tests.e2e.conftest import Cli
from tests.support.plans import SEED_002


def test_run_blog_chain_json(cli: Cli) -> None:
    cli_cases.check_run_blog_chain(cli)


def test_fail_forward_exit_code_and_statuses(cli: Cli) -> None:
    cli_cases.check_fail_forward(cli)


def test_kill_9_then_resume_does_not_rerun_finished_steps(cli: Cli) -> None:
    cli_cases.check_kill_and_resume(cli)


def test_human_output_shows_table_and_where_it_was_stored(cli: Cli) -> None:
    done = cli("run", "--file", cli_cases.BLOG_PLAN)
    assert done.code == 0, done.stderr
    assert "succeeded" in done.stdout and "createBlog" in done.stdout
    assert "stored in sqlite:///" in done.stdout
    assert "✓ author (createAuthor) succeeded" in done.stderr


def test_seed_002_plan_runs(cli: Cli) -> None:
    done = cli("run", "--file", cli.write_plan(SEED_002), "--json")
    assert done.code == 0, done.stderr
    steps = done.json()["steps"]
    assert [s["id"] for s in steps] == ["createAuthor", "createBlog"]
    assert steps[1]["resolvedParameters"]["authorId"] == steps[0]["output"]["_id"]


def test_submit_execute_show(cli: Cli) -> None:
    submitted = cli("submit", "--file", cli_cases.BLOG_PLAN, "--query", "make a blog", "--json")
    assert submitted.code == 0
    ref = submitted.json()
    assert set(ref) == {"requestId", "planId", "status", "estimate"} and ref["status"] == "planned"
    assert ref["estimate"]["basis"] == "default" and ref["estimate"]["costUsd"] is None
    assert cli.calls() == []

    not_run = cli("show", ref["planId"], "--json").json()
    assert not_run["execution"] is None and not_run["query"] == "make a blog"
    assert not_run["analysis"]["layers"] == [["author"], ["blog"], ["comment"]]

    executed = cli("execute", ref["planId"], "--json")
    assert executed.code == 0 and executed.json()["status"] == "succeeded"

    request = cli("show", ref["requestId"], "--json").json()
    assert request["kind"] == "request" and request["query"] == "make a blog"
    assert [p["planId"] for p in request["plans"]] == [ref["planId"]]
    assert request["plans"][0]["execution"]["status"] == "succeeded"

    human = cli("show", ref["requestId"])
    assert human.code == 0 and ref["planId"] in human.stdout and "critical path" in human.stdout


def test_invalid_plan_exit_2_lists_every_error_and_runs_nothing(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "a", "tool": "get_wether", "parameters": {"location": "x"}},
            {"id": "b", "tool": "echo", "parameters": {"value": "{{c}}"}},
            {"id": "c", "tool": "echo", "parameters": {"value": "{{b}}"}},
            {"id": "d", "tool": "execute_plan", "parameters": {}},
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan))
    assert done.code == 2
    assert "did you mean 'get_weather'" in done.stderr
    assert "dependency cycle: " in done.stderr
    assert "cannot call the plan executor itself" in done.stderr
    assert "Traceback" not in done.stderr
    assert cli.calls() == []

    as_json = cli("submit", "--file", cli.write_plan(plan), "--json")
    assert as_json.code == 2
    payload = as_json.json()
    assert payload["exitCode"] == 2 and len(payload["issues"]) == 3


def test_malformed_json_missing_file_and_bad_ids_exit_2(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for args in (
        ("run", "--file", str(bad)),
        ("run", "--file", str(tmp_path / "missing.json")),
        ("execute", "plan_1700000000_abcdef"),
        ("execute", "not-an-id"),
        ("show", "req_1700000000_abcdef"),
        ("run",),
    ):
        done = cli(*args)
        assert done.code == 2, (args, done.stderr)
        assert "error:" in done.stderr and "Traceback" not in done.stderr


def test_store_unavailable_exit_3_and_bad_uri_exit_2(cli: Cli) -> None:
    # A folder that exists but cannot hold the file: the store cannot be opened (exit 3). A
    # folder that does not exist is bad input (exit 2, naming it; test_read_only_commands.py).
    unavailable = cli("run", "--file", cli_cases.BLOG_PLAN, "--store", "sqlite:////proc/x.db")
    assert unavailable.code == 3, unavailable.stderr
    assert (
        "cannot open the SQLite store" in unavailable.stderr
        and "Traceback" not in unavailable.stderr
    )
    unsupported = cli("run", "--file", cli_cases.BLOG_PLAN, "--store", "redis://user:secret@host/0")
    assert unsupported.code == 2 and "secret" not in unsupported.stderr


def test_all_failed_is_status_failed_exit_1(cli: Cli) -> None:
    plan = {"steps": [{"id": "x", "tool": "business_error", "parameters": {"message": "nope"}}]}
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 1 and done.json()["status"] == "failed"


def test_concurrency_flag_caps_parallel_steps(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": f"s{i}", "tool": "sleepy", "parameters": {"label": str(i), "seconds": 0.02}}
            for i in range(4)
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan), "--concurrency", "1", "--json")
    assert done.code == 0
    events = [c["event"] for c in cli.calls()]
    assert events == ["start", "end"] * 4  # strictly one at a time

    cli.log.unlink()
    done = cli("run", "--file", cli.write_plan(plan), "--concurrency", "4", "--json")
    assert [c["event"] for c in cli.calls()][:4] == ["start"] * 4  # all four in flight together


def test_fail_fast_flag(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "bad", "tool": "business_error", "parameters": {"message": "x"}},
            {"id": "slow", "tool": "sleepy", "parameters": {"label": "s", "seconds": 10}},
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan), "--fail-fast", "--json")
    assert done.code == 1
    status = {s["id"]: s["status"] for s in done.json()["steps"]}
    assert status == {"bad": "failed", "slow": "skipped"}


def test_tools_lists_catalog_with_stats_and_tag_filter(cli: Cli) -> None:
    cli("run", "--file", cli_cases.BLOG_PLAN, "--json")
    listed = cli("tools", "--json", "--tag", "blog")
    assert listed.code == 0
    tools = {t["name"]: t for t in listed.json()["tools"]}
    assert set(tools) == {
        "createAuthor",
        "getAuthor",
        "createBlog",
        "createDraft",
        "createComment",
        "listBlogs",
    }
    assert tools["createAuthor"]["stats"]["calls"] == 1
    assert tools["createAuthor"]["stats"]["failureRate"] == 0
    assert tools["createBlog"]["parameters"]["required"] == ["authorId", "title", "content"]
    assert "stats" not in tools["getAuthor"]
    human = cli("tools")
    assert human.code == 0 and "get_weather" in human.stdout


def test_python_dash_m_entry_point(cli: Cli) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "toolplan", "--help"], capture_output=True, text=True, env=cli.env
    )
    assert done.returncode == 0 and "submit" in done.stdout
    _ = json
