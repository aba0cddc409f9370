"""The CLI contract end to end, with ``TOOLPLAN_STORE`` pointing at MongoDB: in-process, and in
subprocesses for the runs that are interrupted.

The shared cases (``cli_cases``) run on the session's MongoDB server (jongodb, or the real server
named by ``TOOLPLAN_TEST_MONGODB_URI``). The outage tests start a jongodb of their own, because
they stop it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import cli_cases
from tests.e2e.conftest import Cli
from tests.support.mongo_server import JongoServer, fresh_db_name
from tests.support.ports import free_port

pytestmark = [pytest.mark.mongodb, pytest.mark.e2e]


@pytest.fixture
def cli(tmp_path: Path, mongodb_uri: str) -> Cli:
    return Cli(tmp_path, store_uri=mongodb_uri)


@pytest.fixture
def own_server() -> Iterator[JongoServer]:
    """A jongodb this test may stop; always local, even when an external server is configured."""
    with JongoServer() as server:
        yield server


def _wait_for_gate(cli: Cli, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not any(c["step"] == "blocked" for c in cli.calls()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the gate step never started"
        time.sleep(0.02)


GATED_PLAN = {
    "steps": [
        {"id": "first", "tool": "sleepy", "parameters": {"label": "first"}},
        {"id": "blocked", "tool": "gate", "parameters": {"label": "{{first.label}}"}},
        {"id": "last", "tool": "echo", "parameters": {"value": "{{blocked.label}}"}},
    ]
}


# -- the shared cases -----------------------------------------------------------------------------


def test_run_blog_chain_json(cli: Cli) -> None:
    cli_cases.check_run_blog_chain(cli)


def test_fail_forward_exit_code_and_statuses(cli: Cli) -> None:
    cli_cases.check_fail_forward(cli)


def test_kill_9_then_resume_does_not_rerun_finished_steps(cli: Cli) -> None:
    cli_cases.check_kill_and_resume(cli)


def test_submit_show_tools_and_human_output_name_the_store(cli: Cli, mongodb_uri: str) -> None:
    submitted = cli("submit", "--file", cli_cases.BLOG_PLAN, "--query", "make a blog", "--json")
    assert submitted.code == 0, submitted.stderr
    ref = submitted.json()
    executed = cli("execute", ref["planId"])
    assert executed.code == 0, executed.stderr
    assert f"stored in {mongodb_uri}" in executed.stdout
    request = cli("show", ref["requestId"], "--json").json()
    assert [p["planId"] for p in request["plans"]] == [ref["planId"]]
    assert request["plans"][0]["execution"]["status"] == "succeeded"
    tools = {t["name"]: t for t in cli("tools", "--json", "--tag", "blog").json()["tools"]}
    assert tools["createAuthor"]["stats"]["calls"] == 1
    assert tools["createAuthor"]["stats"]["failureRate"] == 0


# -- an unreachable or failing server -------------------------------------------------------------


def test_unreachable_server_exit_3_with_password_hidden(tmp_path: Path) -> None:
    uri = f"mongodb://alice:s3cret-pw@127.0.0.1:{free_port()}/toolplan"
    cli = Cli(tmp_path, store_uri=uri)
    cli.env["TOOLPLAN_MONGO_TIMEOUT_MS"] = "300"
    for args in (("run", "--file", cli_cases.BLOG_PLAN), ("worker", "--once")):
        done = cli(*args)
        assert done.code == 3, done.stderr
        assert "cannot reach the MongoDB store 'mongodb://alice:***@127.0.0.1:" in done.stderr
        assert "s3cret-pw" not in done.stderr + done.stdout
        assert "Traceback" not in done.stderr
    as_json = cli("show", "plan_1700000000_abcdef", "--json")
    assert as_json.code == 3 and as_json.json()["exitCode"] == 3
    assert "s3cret-pw" not in as_json.stdout


def test_server_killed_mid_run_exit_3_then_restart_is_empty(
    tmp_path: Path, own_server: JongoServer
) -> None:
    """The server process dies while a step runs: the run stops with exit 3 and a clear message.

    jongodb keeps everything in memory, so the restarted server is empty and the plan is gone
    (a clear "does not exist", exit 2). Resuming after an outage with the data intact is tested
    below with a paused server, which is what a restarted persistent MongoDB looks like to us.
    """
    uri = own_server.uri_for(fresh_db_name("kill"))
    cli = Cli(tmp_path, store_uri=uri)
    cli.env.update({"TOOLPLAN_LEASE_SECONDS": "1.5", "TOOLPLAN_MONGO_TIMEOUT_MS": "500"})
    plan_id = cli("submit", "--file", cli.write_plan(GATED_PLAN), "--json").json()["planId"]
    process = cli.popen("execute", plan_id)
    _wait_for_gate(cli, process)

    own_server.kill()
    _, err = process.communicate(timeout=30)
    assert process.returncode == 3, err
    assert f"cannot reach the MongoDB store {uri!r}" in err
    assert "Traceback" not in err

    own_server.restart()
    gone = cli("execute", plan_id)
    assert gone.code == 2 and "does not exist" in gone.stderr


def test_server_paused_mid_run_exit_3_then_resume_completes(
    tmp_path: Path, own_server: JongoServer
) -> None:
    """MongoDB stops answering in the middle of a run; after it is back, resume completes.

    Why a pause (SIGSTOP/SIGCONT) and not a restart: jongodb is in-memory, so a restarted jongodb
    is empty, unlike a restarted mongod, which keeps its data. From toolplan's side, a stopped
    and restarted persistent server is "unreachable for a while, then the same data again", and
    that is exactly what a paused jongodb gives: the client times out (exit 3, clear message),
    and after SIGCONT the data is intact and ``toolplan execute`` resumes from the step records.
    The killed-server test above covers a server process that is really gone.
    """
    assert own_server.pid is not None
    uri = own_server.uri_for(fresh_db_name("pause"))
    cli = Cli(tmp_path, store_uri=uri)
    cli.env.update({"TOOLPLAN_LEASE_SECONDS": "1.5", "TOOLPLAN_MONGO_TIMEOUT_MS": "500"})
    plan_id = cli("submit", "--file", cli.write_plan(GATED_PLAN), "--json").json()["planId"]
    process = cli.popen("execute", plan_id, "--json")
    _wait_for_gate(cli, process)

    os.kill(own_server.pid, signal.SIGSTOP)
    try:
        out, err = process.communicate(timeout=30)
    finally:
        os.kill(own_server.pid, signal.SIGCONT)
    assert process.returncode == 3, err
    assert f"cannot reach the MongoDB store {uri!r}" in err and "Traceback" not in err
    payload = json.loads(out)
    assert payload["exitCode"] == 3

    cli.gate.touch()
    resumed = cli("execute", plan_id, "--json")
    assert resumed.code == 0, resumed.stderr
    result = resumed.json()
    assert result["status"] == "succeeded" and result["outputs"]["last"] == "first"
    starts = [c["step"] for c in cli.calls() if c["event"] in ("start", "call")]
    assert starts.count("first") == 1  # finished before the outage: not called again
    assert starts.count("blocked") == 2  # interrupted: called again, with the same key
    assert {c["key"] for c in cli.calls() if c["step"] == "blocked"} == {f"{plan_id}:blocked"}
