"""Streamed plan execution (``TOOLPLAN_STREAM_EXECUTION=1``, ``--stream``): read-only steps of a
Python plan start while the scripted model is still writing it; side effects and approval-gated
steps never do. The scripted server holds its answer between chunks until what the test waits
for happened (``Reply.hold``): no sleeps, no timing assertions.

``lookup`` (tests/support/tools.py) is tagged ``read-only``, ``echo`` is not (a side effect for
the planner), ``wire_money`` waits for approval; each logs its calls."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ON_BOTH_STORES, Cli, wait_for
from tests.support.fake_openai import FakeOpenAIServer, Reply
from toolplan.pipeline.early_start import EARLY_COLLECTION
from toolplan.store import open_store

pytestmark = [pytest.mark.e2e]

QUERY = "Look x up, then look its value up, then echo that value"

PLAN = """a = lookup(key="x")
b = lookup(key=a["value"])
e = echo(value=b["value"])
w = wire_money(to="acct", amount=5)
"""

HELD = 30.0
"""Seconds a held answer waits for what the test expects before giving up (a failure, not a
pace: the wait ends as soon as the condition holds)."""


def calls(cli: Cli) -> list[dict[str, Any]]:
    return cli.calls()


def held_at(at: int, condition: Callable[[], bool], seen: dict[str, Any], cli: Cli) -> Any:
    """A ``Reply.hold`` that holds event ``at`` until ``condition`` holds (``seen["held"]``:
    whether it did), and notes the tools' calls made before the answer's last event
    (``seen["before_end"]``)."""

    def hold(index: int) -> None:
        if index == at:
            deadline = time.monotonic() + HELD
            while not condition() and time.monotonic() < deadline:
                threading.Event().wait(0.01)
            seen["held"] = condition()
        seen["before_end"] = list(cli.calls())

    return hold


def event_of(text: str, part: str) -> int:
    """The index of the event that sends the first character of ``part`` (one character per
    chunk; event 0 is the role)."""
    return text.index(part) + 1


def streamed(text: str, hold: Callable[[int], None] | None = None) -> Reply:
    """``text`` sent one character per chunk, each chunk offered to ``hold`` first."""
    return Reply.content(text).with_(pieces=len(text), hold=hold)


def stream_cli(cli: Cli) -> Cli:
    cli.env.update({"TOOLPLAN_PLAN_FORMAT": "python", "TOOLPLAN_STREAM_EXECUTION": "1"})
    return cli


def looked_up(cli: Cli) -> list[str]:
    return [c["key_arg"] for c in cli.calls() if "key_arg" in c]


def early_records(cli: Cli) -> list[dict[str, Any]]:
    store = open_store(cli.env["TOOLPLAN_STORE"])
    try:
        return store.find_records(EARLY_COLLECTION, {})
    finally:
        store.close()


@ON_BOTH_STORES
def test_read_only_steps_start_while_the_model_writes_and_side_effects_wait(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    stream_cli(cli_llm)
    seen: dict[str, Any] = {}
    # `a` and `b` are complete once line 3 starts; hold the 4th line until both lookups ran
    at = event_of(PLAN, "w = ")
    hold = held_at(at, lambda: looked_up(cli_llm) == ["x", "X"], seen, cli_llm)
    llm.script([streamed(PLAN, hold)])
    done = cli_llm("run", QUERY, "--no-answer", "--yes", "--approve-all", "--json")
    assert done.code == 0, done.stderr
    assert seen["held"] is True  # both lookups ran before the model finished writing
    # no side effect, no gated call, before the whole answer was written (let alone validated)
    assert [c for c in seen["before_end"] if "key_arg" not in c] == []
    result = done.json()
    steps = {step["id"]: step for step in result["steps"]}
    assert steps["b"]["output"] == {"key": "X", "value": "X"}
    assert steps["e"]["output"] == "X"
    assert [(e["step"], e["status"]) for e in result["earlyStarts"]] == [
        ("a", "adopted"),
        ("b", "adopted"),
    ]
    assert result["savedMs"] >= 0
    # each read-only call made once: the execution adopted the early ones
    assert looked_up(cli_llm) == ["x", "X"]
    # the side effect and the gated step ran after the plan was stored, once each
    others = [c for c in cli_llm.calls() if "key_arg" not in c]
    assert len(others) == 2
    stored = [r for r in early_records(cli_llm) if r["status"] == "adopted"]
    assert {r["step"] for r in stored} == {"a", "b"}
    assert {r["planId"] for r in stored} == {result["planId"]}
    # the plan page marks them
    from toolplan.service.plan_view import plan_view

    store = open_store(cli_llm.env["TOOLPLAN_STORE"])
    try:
        view = plan_view(store, result["planId"])
    finally:
        store.close()
    marks = {step["id"]: step["marks"] for step in view["steps"]}
    assert "started early" in marks["a"] and "started early" in marks["b"]
    assert "started early" not in marks["e"] and "started early" not in marks["w"]
    assert {e["step"] for e in view["earlyStarts"]} == {"a", "b"}
    assert view["earlySavedMs"] is not None and view["earlySavedMs"] >= 0


def test_cli_progress_says_started_early(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    stream_cli(cli_llm)
    seen: dict[str, Any] = {}
    hold = held_at(event_of(PLAN, "w = "), lambda: looked_up(cli_llm) == ["x", "X"], seen, cli_llm)
    llm.script([streamed(PLAN, hold)])
    done = cli_llm("run", QUERY, "--no-answer", "--approve-all")
    assert done.code == 0, done.stderr
    assert 'a = lookup(key="x")  started early' in done.stderr
    assert "b = lookup(" in done.stderr and "adopted" not in done.stderr.split("started early")[0]
    assert "the plan has it, its tool is not called again" in done.stderr
    assert "s saved against plan-then-execute" in done.stderr
    assert "e = echo" not in done.stderr.replace("+ echo", "")  # never offered early


def test_without_the_switch_nothing_starts_early(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    stream_cli(cli_llm)
    seen: dict[str, Any] = {}
    llm.script([streamed(PLAN, held_at(-1, lambda: True, seen, cli_llm))])
    done = cli_llm("run", QUERY, "--no-answer", "--approve-all", "--no-stream")
    assert done.code == 0, done.stderr
    assert seen["before_end"] == []
    assert "started early" not in done.stderr
    assert looked_up(cli_llm) == ["x", "X"]


@ON_BOTH_STORES
def test_a_plan_whose_last_statement_is_invalid_stores_nothing_and_calls_no_side_effect(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    stream_cli(cli_llm)
    cli_llm.env["TOOLPLAN_MAX_REPAIRS"] = "0"
    bad = 'a = lookup(key="x")\ne = echo(value=a["value"])\nz = no_such_tool(q=1)\n'
    seen: dict[str, Any] = {}
    llm.script(
        [
            streamed(
                bad, held_at(event_of(bad, "z = "), lambda: bool(looked_up(cli_llm)), seen, cli_llm)
            )
        ]
    )
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 2, done.stderr
    assert seen["held"] is True  # the read-only step did start early
    assert [c for c in cli_llm.calls() if "key_arg" not in c] == []  # echo never ran
    settled = {
        r["step"]: r["status"]
        for r in early_records(cli_llm)
        if r["status"] in ("unused", "cancelled", "adopted")
    }
    assert settled == {"a": "unused"}  # it finished; nothing adopted it, the record says so
    store = open_store(cli_llm.env["TOOLPLAN_STORE"])
    try:
        plan_id = early_records(cli_llm)[0]["planId"]
        assert store.get_plan(plan_id) is None  # nothing stored under the plan ID
    finally:
        store.close()
    # a planning that ended (without a plan) is not an interrupted one: the same query again
    # calls the tool again, it does not reuse an output it dropped
    llm.script([streamed('a = lookup(key="x")\n')])
    again = cli_llm("run", QUERY, "--no-answer", "--json")
    assert again.code == 0, again.stderr
    assert looked_up(cli_llm) == ["x", "x"]


@ON_BOTH_STORES
def test_a_repair_that_drops_an_early_step_leaves_it_unused_and_adopts_the_rest(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    stream_cli(cli_llm)
    first = 'a = lookup(key="x")\nb = lookup(key="y")\nz = no_such_tool(q=1)\n'
    again = 'b = lookup(key="y")\ne = echo(value=b["value"])\n'
    seen: dict[str, Any] = {}
    both = lambda: sorted(looked_up(cli_llm)) == ["x", "y"]  # noqa: E731
    llm.script(
        [
            streamed(first, held_at(event_of(first, "z = ") + 1, both, seen, cli_llm)),
            streamed(again),
        ]
    )
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    assert seen["held"] is True
    assert sorted(looked_up(cli_llm)) == [
        "x",
        "y",
    ]  # y adopted by the repaired plan, not called again
    result = done.json()
    store = open_store(cli_llm.env["TOOLPLAN_STORE"])
    try:
        record = store.get_plan(result["planId"])
        assert record is not None
        early = {e["step"]: e["status"] for e in record.meta["earlyStarts"]}
        assert early == {"a": "unused", "b": "adopted"}
        assert [s["id"] for s in record.plan["steps"]] == ["b", "e"]  # the final validated plan
    finally:
        store.close()


def test_a_json_plan_asked_afresh_starts_nothing_early_and_adopts_what_python_started(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """The last attempt of a Python planning asks for a JSON plan (BENCHMARKS, *Data flow*).
    Its steps are not statements: nothing of it starts before it is validated; a call the
    Python answers started early is adopted when the JSON plan has it."""
    stream_cli(cli_llm)
    wrong = 'b = lookup(key="y")\nz = no_such_tool(q=1)\n'
    plan = {
        "steps": [
            {"id": "b", "tool": "lookup", "parameters": {"key": "y"}},
            {"id": "c", "tool": "lookup", "parameters": {"key": "z"}},
        ]
    }
    llm.script([streamed(wrong), streamed(wrong), Reply.structured(plan)])
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    assert sorted(looked_up(cli_llm)) == ["y", "z"]  # each call once
    result = done.json()
    assert {e["step"]: e["status"] for e in result["earlyStarts"]} == {"b": "adopted"}


@ON_BOTH_STORES
def test_kill_9_during_planning_then_resume_never_calls_a_finished_early_step_again(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    stream_cli(cli_llm)
    cli_llm.in_process = False
    released = threading.Event()

    def finished_early() -> bool:
        return any(r["status"] == "succeeded" for r in early_records(cli_llm))

    seen: dict[str, Any] = {}
    # the answer is held before `b` is complete until the process is gone
    hold = held_at(event_of(PLAN, "e = "), released.is_set, seen, cli_llm)
    llm.script([streamed(PLAN, hold)])
    process = cli_llm.popen("run", QUERY, "--no-answer", "--approve-all", "--json")
    try:
        wait_for(finished_early, "a finished early call", process)
    finally:
        process.kill()  # SIGKILL: no cleanup, mid-planning
        process.communicate()
        released.set()
    assert looked_up(cli_llm) == ["x"]
    # the same query again: the finished early call is adopted, the tool is not called again
    llm.script([streamed(PLAN)])
    done = cli_llm("run", QUERY, "--no-answer", "--approve-all", "--json")
    assert done.code == 0, done.stderr
    assert looked_up(cli_llm) == ["x", "X"]
    steps = {s["id"]: s for s in done.json()["steps"]}
    assert steps["a"]["output"] == {"key": "x", "value": "X"} and steps["e"]["output"] == "X"


ANSWER = {"action": "answer", "answer": "The value is X."}


@ON_BOTH_STORES
def test_the_agent_graph_runs_a_streamed_plan_and_answers(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """``toolplan run QUERY`` (with an answer) is the agent graph: its planner node starts the
    read-only steps early, its executor node adopts them."""
    stream_cli(cli_llm)
    plan = PLAN.replace('w = wire_money(to="acct", amount=5)\n', "")
    seen: dict[str, Any] = {}
    hold = held_at(
        event_of(plan, "e = ") + 1, lambda: looked_up(cli_llm) == ["x", "X"], seen, cli_llm
    )
    llm.script([streamed(plan, hold), Reply.structured(ANSWER)])
    done = cli_llm("run", QUERY, "--json")
    assert done.code == 0, done.stderr
    assert seen["held"] is True
    assert [c for c in seen["before_end"] if "key_arg" not in c] == []
    assert done.json()["answer"] == "The value is X."
    assert looked_up(cli_llm) == ["x", "X"]
    assert len([c for c in cli_llm.calls() if "key_arg" not in c]) == 1


async def test_toolplan_argument_and_the_events_say_started_early(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Toolplan(stream_execution=True)`` turns it on; the planning events carry ``early``
    (started, finished, adopted, and the time saved), as LangGraph's custom stream and the
    API's ``planningEvents`` do."""
    from tests.e2e.conftest import as_model_endpoint
    from toolplan.client import AsyncToolplan
    from toolplan.config import Settings
    from toolplan.pipeline.flow import FromQuery
    from toolplan.planning.progress import PlanningEvent

    as_model_endpoint(llm, monkeypatch)
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "python")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.setenv("TOOLPLAN_TOOLS", "tests.support.tools")
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    plan = 'a = lookup(key="x")\nb = lookup(key="y")\n'
    llm.script([streamed(plan)])
    events: list[PlanningEvent] = []
    client = AsyncToolplan(settings=settings, stream_execution=True)
    try:
        outcome = await client.run(FromQuery(QUERY), on_planning=events.append)
    finally:
        client.close()
    assert outcome.result is not None and outcome.result.status == "succeeded"
    early = [(e.step or {}).get("id", "") + ":" + str(e.early) for e in events if e.kind == "early"]
    assert "a:started" in early and "a:adopted" in early and "b:adopted" in early
    (saved,) = [e for e in events if e.kind == "early" and e.early == "saved"]
    assert saved.duration_ms is not None and saved.to_json()["early"] == "saved"
    record = client.store.get_plan(outcome.planned.ref.plan_id)
    assert record is not None and record.plan_id == outcome.planned.ref.plan_id
    assert [e["status"] for e in record.meta["earlyStarts"]] == ["adopted", "adopted"]


@ON_BOTH_STORES
def test_planning_that_fails_cancels_an_early_call_still_running(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    stream_cli(cli_llm)
    cli_llm.env["TOOLPLAN_MAX_REPAIRS"] = "0"
    bad = 'h = held_read(label="h")\ne = echo(value=1)\nz = no_such_tool(q=1)\n'

    def started() -> bool:
        return any(c["event"] == "start" for c in cli_llm.calls())

    seen: dict[str, Any] = {}
    llm.script([streamed(bad, held_at(event_of(bad, "z = "), started, seen, cli_llm))])
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 2, done.stderr
    assert seen["held"] is True
    assert [c["event"] for c in cli_llm.calls()] == ["start", "released"]  # cancelled, no echo
    settled = {r["step"]: r["status"] for r in early_records(cli_llm) if r["status"] != "running"}
    assert settled == {"h": "cancelled"}


def test_an_identical_replan_that_is_not_run_leaves_its_early_calls_unused(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """The agent graph does not run a replan that makes the very calls of the plan that failed:
    what that plan adopted while the model wrote it is recorded ``unused``, not ``adopted``."""
    stream_cli(cli_llm)
    failing = 'a = lookup(key="x")\nb = lookup(key="bad")\n'
    replan = {"action": "replan", "reason": "b failed"}
    llm.script([streamed(failing), Reply.structured(replan), streamed(failing), streamed(failing)])
    done = cli_llm("run", QUERY, "--json")
    plans = done.json()["plans"]
    assert [p["status"] for p in plans] == ["partial", "identical", "identical"], done.stderr
    plan_ids = [p["planId"] for p in plans]
    by_plan: dict[str, dict[str, str]] = {}
    for record in early_records(cli_llm):
        by_plan.setdefault(record["planId"], {})[record["step"]] = record["status"]
    ran, skipped = plan_ids[0], plan_ids[1]
    assert by_plan[ran]["a"] == "adopted"
    assert by_plan[skipped]["a"] == "unused"  # the last record of the step says what became of it


def test_early_calls_keep_to_the_executions_concurrency(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """``--concurrency 1``: the second read-only call waits for the first, early or not."""
    stream_cli(cli_llm)
    text = 'a = held_read(label="a")\nb = held_read(label="b")\ne = echo(value=1)\n'
    seen: dict[str, Any] = {}

    def started() -> bool:
        return any(c["event"] == "start" for c in cli_llm.calls())

    def hold(index: int) -> None:
        if index == len(text) + 1:  # the answer's end: `b` was offered when line 3 started
            held_at(index, started, seen, cli_llm)(index)
            seen["starts"] = [c["label"] for c in cli_llm.calls() if c["event"] == "start"]
            cli_llm.gate.touch()

    llm.script([streamed(text, hold)])
    done = cli_llm("run", QUERY, "--no-answer", "--concurrency", "1", "--json")
    assert done.code == 0, done.stderr
    assert seen["held"] is True and seen["starts"] == ["a"]
    events = [(c["event"], c.get("label")) for c in cli_llm.calls() if c["event"] != "call"]
    assert events == [("start", "a"), ("end", "a"), ("start", "b"), ("end", "b")]


def test_a_step_whose_early_call_outlasts_its_timeout_is_retried_with_a_call_of_its_own(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """The first attempt adopts the early call and times out waiting for it; the retry calls
    the tool itself, as any retried attempt does (it is not tied to the early call)."""
    stream_cli(cli_llm)
    cli_llm.in_process = False
    cli_llm.env["TOOLPLAN_TIMEOUT"] = "1"
    text = 'h = held_read(label="h")\ne = echo(value=1)\n'
    llm.script([streamed(text)])
    process = cli_llm.popen("run", QUERY, "--no-answer", "--json")
    try:
        # the early call, then the retry's own call, both held; then let them end
        wait_for(
            lambda: [c["event"] for c in cli_llm.calls()].count("start") == 2,
            "the retry's own call",
            process,
        )
        cli_llm.gate.touch()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    steps = {s["id"]: s for s in json.loads(out)["steps"]}
    assert steps["h"]["status"] == "succeeded" and steps["h"]["attempts"] == 2
    starts = [c for c in cli_llm.calls() if c["event"] == "start"]
    assert [c["key"].endswith(":early") for c in starts] == [True, False]
