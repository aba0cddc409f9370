"""What a stored record says is data (issue 29), through the real ``toolplan`` console script:

- ``toolSources`` and the other keys toolplan records itself never come from a caller;
- an MCP config that a record names is never started;
- a worker that cannot load a plan's recorded tools puts it back in the queue (exit 3), saying
  why, and a worker that has them runs it;
- ``execute --resume`` of a cancelled plan loads the tools it was made with, the first time;
- ``tagged()`` takes a plain function;
- a store wiped under a running plan is a store fault (exit 3), not an internal error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, Cli
from tests.support.faults import GATED_PLAN, wait_for_call
from tests.support.user_tools import ECHO, USER_TOOLS
from toolplan.errors import InvalidInput
from toolplan.pipeline.flow import FromDocument, FromQuery
from toolplan.plan_format.ids import new_id
from toolplan.service import operations
from toolplan.store import PlanRecord, RequestRecord, Store, open_store, utc_now
from toolplan.tools import load_tool_modules

pytestmark = pytest.mark.e2e


@pytest.fixture
def store_uri(tmp_path: Path) -> str:
    """A SQLite store of the test's own. What these cases need from a store backend (meta kept as
    given, a released execution keeping the reason it waits, a step that is not there refused
    with ``KeyError``, a cancelled execution reopened) is checked on MongoDB by the store
    conformance tests (tests/unit/test_store_conformance.py)."""
    return f"sqlite:///{tmp_path / 'toolplan.db'}"


@pytest.fixture
def user_cli(tmp_path: Path, store_uri: str) -> Cli:
    """A CLI with no tools chosen anywhere, whose PYTHONPATH has the user's module folder."""
    modules = tmp_path / "user_modules"
    modules.mkdir()
    (modules / "tp_user_tools.py").write_text(USER_TOOLS)
    cli = Cli(tmp_path, store_uri=store_uri)
    del cli.env["TOOLPLAN_TOOLS"]
    cli.env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(modules)])
    return cli


def _without_user_modules(cli: Cli) -> dict[str, str]:
    return {**cli.env, "PYTHONPATH": str(REPO)}


@pytest.fixture
def store(store_uri: str) -> Iterator[Store]:
    opened = open_store(store_uri)
    yield opened
    opened.close()


# -- 1. meta is data: reserved keys never come from a caller --------------------------------------


@pytest.mark.parametrize(
    "meta",
    [
        {"toolSources": {"modules": ["evil_module"], "mcp": None}},
        {"estimate": {"durationMs": 1}},
        {"reusedFrom": "plan_x", "note": "kept"},
        # what the planner's rewrite rules changed: shown as the plan's record (issue 43)
        {"changes": [{"rule": "nulls", "step": "a", "before": "x", "after": "y"}]},
    ],
)
def test_python_api_refuses_reserved_meta_keys_and_stores_nothing(
    store: Store, meta: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput, match="set by toolplan itself"):
        FromDocument(ECHO, meta=meta)
    with pytest.raises(InvalidInput, match="set by toolplan itself"):
        FromQuery("do it", meta=meta)
    catalog = load_tool_modules(["blog"])
    plan = {"steps": [{"id": "a", "tool": "listBlogs", "parameters": {}}]}
    with pytest.raises(InvalidInput, match="set by toolplan itself"):
        operations.submit_plan(plan, store=store, catalog=catalog, max_steps=5, meta=meta)
    # A caller's own labels are kept, beside what toolplan records itself.
    ref = operations.submit_plan(
        plan, store=store, catalog=catalog, max_steps=5, meta={"ticket": "OPS-1"}
    )
    stored = store.get_plan(ref.plan_id)
    assert stored is not None and stored.meta["ticket"] == "OPS-1"
    assert "toolSources" not in stored.meta  # Python tool objects: nothing to record
    assert stored.meta["estimate"]["basis"] in ("default", "history", "mixed")


def test_the_agent_graph_input_has_no_way_to_set_tool_sources() -> None:
    from toolplan.agent.graph import AgentInput

    assert "meta" not in AgentInput.__annotations__


# -- 1. an MCP config named by a record is never started -------------------------------------------


def _plan_record_with(store: Store, meta: dict[str, Any]) -> str:
    """A plan written straight into the store, as a party with write access to it could."""
    plan_id = new_id("plan")
    request = RequestRecord(new_id("req"), "q", utc_now())
    store.save_plan(
        PlanRecord(
            plan_id=plan_id,
            request_id=request.request_id,
            plan=ECHO,
            analysis={"order": ["said"], "dependencies": {"said": []}, "layers": [["said"]]},
            status="planned",
            created_at=utc_now(),
            query="q",
            meta=meta,
        ),
        request,
    )
    return plan_id


def test_a_recorded_mcp_config_is_never_started(user_cli: Cli, store: Store) -> None:
    marker = user_cli.tmp / "server-started"
    starter = f"import pathlib; pathlib.Path({str(marker)!r}).touch()"
    config = user_cli.tmp / "evil.json"
    config.write_text(
        json.dumps({"mcpServers": {"evil": {"command": sys.executable, "args": ["-c", starter]}}})
    )
    plan_id = _plan_record_with(
        store, {"toolSources": {"modules": ["tp_user_tools"], "mcp": str(config)}}
    )
    ran = user_cli("execute", plan_id)
    assert ran.code == 3, ran.stderr
    assert "never starts MCP servers that a stored record names" in ran.stderr
    assert f"--mcp {config}" in ran.stderr  # how the operator runs it, if they trust it
    assert not marker.exists()
    assert store.get_execution(plan_id) is None  # nothing recorded: not the plan's failure
    assert "Traceback" not in ran.stderr


def test_a_recorded_module_name_that_is_not_a_python_name_is_ignored(
    user_cli: Cli, store: Store
) -> None:
    plan_id = _plan_record_with(store, {"toolSources": {"modules": ["../../etc/x"], "mcp": None}})
    ran = user_cli("execute", plan_id)
    assert ran.code == 2 and "unknown tool 'shout'" in ran.stderr, ran.stderr


# -- 4. a worker's setup fault is an infrastructure fault ----------------------------------------


def test_a_worker_without_the_plans_module_requeues_it_and_exits_3(
    user_cli: Cli, store: Store
) -> None:
    submitted = user_cli("submit", "--file", user_cli.write_plan(ECHO), "--tools", "tp_user_tools")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.stdout.split("stored plan ")[1].split()[0]
    assert user_cli("execute", plan_id, "--enqueue").code == 0

    lacking = Cli(user_cli.tmp, store_uri=user_cli.env["TOOLPLAN_STORE"])
    lacking.env = _without_user_modules(user_cli)
    worked = lacking("worker", "--once", "--json")
    assert worked.code == 3, worked.stderr
    report = json.loads(worked.stdout)
    assert report["exitCode"] == 3 and plan_id in report["released"], report
    assert "cannot load the tools recorded with plan" in report["error"]
    assert "tp_user_tools" in report["error"] and "Traceback" not in worked.stderr

    execution = store.get_execution(plan_id)
    assert execution is not None and execution.status == "queued"  # not failed
    assert {s.status for s in execution.steps} == {"pending"}
    shown = user_cli("show", plan_id)
    assert "reason: cannot load the tools recorded with plan" in shown.stdout, shown.stdout

    worked = user_cli("worker", "--once", "--json")  # a worker that has the module
    assert worked.code == 0, worked.stderr
    assert json.loads(worked.stdout)["finished"] == {plan_id: "succeeded"}
    shown_json = user_cli("show", plan_id, "--json").json()
    assert shown_json["execution"]["status"] == "succeeded"
    assert "error" not in shown_json["execution"]  # the reason it waited is gone
    assert shown_json["execution"]["outputs"]["said"] == "HI"


def test_a_bare_execute_without_the_plans_module_is_exit_3_and_records_nothing(
    user_cli: Cli, store: Store
) -> None:
    submitted = user_cli("submit", "--file", user_cli.write_plan(ECHO), "--tools", "tp_user_tools")
    plan_id = submitted.stdout.split("stored plan ")[1].split()[0]
    lacking = Cli(user_cli.tmp, store_uri=user_cli.env["TOOLPLAN_STORE"])
    lacking.env = _without_user_modules(user_cli)
    ran = lacking("execute", plan_id, "--json")
    assert ran.code == 3, ran.stderr
    assert ran.json()["exitCode"] == 3 and "no module named 'tp_user_tools'" in ran.json()["error"]
    assert store.get_execution(plan_id) is None


# -- 5. --resume after a cancel uses the recorded tools the first time ---------------------------


GATED = {
    "steps": [
        {"id": "a", "tool": "gate", "parameters": {"label": "a"}},
        {"id": "b", "tool": "echo", "parameters": {"value": "{{a.label}}"}},
    ]
}


def test_resume_after_cancel_loads_the_recorded_tools_the_first_time(
    user_cli: Cli, store: Store
) -> None:
    cli = user_cli
    submitted = cli("submit", "--file", cli.write_plan(GATED), "--tools", "tests.support.tools")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.stdout.split("stored plan ")[1].split()[0]
    running = cli.popen("execute", plan_id)
    wait_for_call(cli.calls, "a", running)
    assert cli("cancel", plan_id).code == 0
    running.communicate(timeout=60)
    execution = store.get_execution(plan_id)
    assert execution is not None and execution.status == "cancelled"

    wrong = cli("execute", plan_id, "--resume", "--tools", "blog")
    assert wrong.code == 2 and "unknown tool 'gate'" in wrong.stderr, wrong.stderr
    execution = store.get_execution(plan_id)
    assert execution is not None and execution.status == "cancelled"  # not left running

    cli.gate.touch()
    resumed = cli("execute", plan_id, "--resume")
    assert resumed.code == 0, resumed.stderr
    assert f"using the tools recorded with {plan_id}: --tools tests.support.tools" in (
        resumed.stderr
    )
    assert cli("show", plan_id, "--json").json()["execution"]["status"] == "succeeded"


# -- 6. tagged() takes a plain function -----------------------------------------------------------


def test_tagged_takes_a_plain_function_as_the_readme_shows(tmp_path: Path) -> None:
    (tmp_path / "tp_tagged_tools.py").write_text(
        '''
from toolplan import tagged


def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city}


def query_metric(name: str) -> float:
    """A metric's value."""
    return 1.0


tagged(get_weather, "read-only")                 # as a statement, like docs/tools.md
TOOLS = [get_weather, tagged(query_metric, "read-only", cache_ttl=60)]
'''
    )
    cli = Cli(tmp_path)
    cli.env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp_path)])
    listed = cli("tools", "--tools", "tp_tagged_tools", "--tag", "read-only", "--json")
    assert listed.code == 0, listed.stderr
    tools = {t["name"]: t for t in listed.json()["tools"]}
    assert sorted(tools) == ["get_weather", "query_metric"]
    assert tools["get_weather"]["tags"] == ["read-only"]


# -- 7. a store wiped under a running plan --------------------------------------------------------


def _wipe(store_uri: str, plan_id: str) -> None:
    """Delete the execution's records behind the running process's back (a database reset)."""
    import sqlite3

    with sqlite3.connect(store_uri.removeprefix("sqlite:///")) as db:
        db.execute("DELETE FROM tp_steps WHERE plan_id = ?", (plan_id,))
        db.execute("DELETE FROM tp_executions WHERE plan_id = ?", (plan_id,))


def test_a_store_wiped_mid_run_is_exit_3_saying_the_execution_is_gone(
    tmp_path: Path, store_uri: str
) -> None:
    cli = Cli(tmp_path, store_uri=store_uri)
    submitted = cli("submit", "--file", cli.write_plan(GATED_PLAN), "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    process = cli.popen("execute", plan_id, "--json")
    wait_for_call(cli.calls, "blocked", process)
    _wipe(store_uri, plan_id)
    cli.gate.touch()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3, (out, err)
    payload = json.loads(out)
    assert payload["exitCode"] == 3 and payload["resumable"] is False, payload
    assert f"the execution of {plan_id} is gone from the store" in payload["error"]
    assert "internal error" not in err and "Traceback" not in err
