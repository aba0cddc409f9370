"""Observers of a run are told best-effort: a listener that raises on every event (a progress
printer whose reader went away, a broken event subscriber) changes neither what the run does nor
what it records, on every store; the failure is logged once, not once per event.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.observers import OverflowingHub
from toolplan.adapters.queue_worker import Worker, WorkerEvent, WorkerOptions, enqueue_plan
from toolplan.api.runs import BackgroundRuns
from toolplan.client import AsyncToolplan
from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.recorder import EventListener, StepEvent
from toolplan.runs.context import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store import Store, open_store
from toolplan.tools import ToolCatalog, load_tool_modules

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=10)

BLOG_CHAIN = Path(__file__).resolve().parents[2] / "examples" / "blog_chain.json"
PLAN: dict[str, Any] = {
    "steps": [
        # author -> blog -> comment: each step's dependents wait for it to succeed.
        *json.loads(BLOG_CHAIN.read_text())["steps"],
        # Fails once, then succeeds: a listener failing on "retrying" must not end the step.
        {"id": "flaky", "tool": "flaky", "parameters": {"failures": 1}, "maxAttempts": 2},
    ]
}
STEPS = [step["id"] for step in PLAN["steps"]]

FAILURES = [
    pytest.param(BrokenPipeError(32, "Broken pipe"), id="broken-pipe"),
    pytest.param(RuntimeError("the subscriber crashed"), id="bug"),
    # What rich's Console.on_broken_pipe raises by default: an observer cannot end the run either.
    pytest.param(SystemExit(1), id="system-exit"),
]


@pytest.fixture(params=["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    uri = (
        f"sqlite:///{tmp_path / 'toolplan.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("mongodb_uri")
    )
    opened = open_store(uri)
    yield opened
    opened.close()


@pytest.fixture
def catalog() -> ToolCatalog:
    return load_tool_modules(["blog", "tests.support.tools"])


def _failing_on_every_event(error: BaseException, heard: list[StepEvent]) -> EventListener:
    def listener(event: StepEvent) -> None:
        heard.append(event)
        raise error

    return listener


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("error", FAILURES)
async def test_a_listener_that_raises_on_every_event_changes_nothing(
    store: Store,
    catalog: ToolCatalog,
    error: BaseException,
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[StepEvent] = []
    ref = submit_plan(PLAN, store=store, catalog=catalog, max_steps=50)
    ctx = ExecutionContext(
        store=store,
        catalog=catalog,
        options=FAST,
        listener=_failing_on_every_event(error, heard),
    )
    with caplog.at_level(logging.WARNING):
        result = await execute_stored_plan(ref.plan_id, ctx)

    assert result.status == "succeeded"
    assert {s.step_id: s.status for s in result.steps} == dict.fromkeys(STEPS, "succeeded")
    assert result.step("flaky").attempts == 2
    stored = store.get_execution(ref.plan_id)
    assert stored is not None and stored.status == "succeeded"
    assert {s.step_id: (s.status, s.error) for s in stored.steps} == dict.fromkeys(
        STEPS, ("succeeded", None)
    )
    # Told of every transition all the same (a failure is ignored, the listener is kept)...
    assert [(e.step_id, e.kind) for e in heard if e.step_id == "flaky"] == [
        ("flaky", "started"),
        ("flaky", "retrying"),
        ("flaky", "started"),
        ("flaky", "succeeded"),
    ]
    assert [e.kind for e in heard].count("succeeded") == len(STEPS)
    # ...and the failure is logged once, naming the plan and what went wrong.
    logged = _warnings(caplog)
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert ref.plan_id in logged[0].getMessage()
    assert type(error).__name__ in logged[0].getMessage()


async def test_a_failing_listener_does_not_hide_a_real_failure(
    store: Store, catalog: ToolCatalog
) -> None:
    plan = {
        "steps": [
            {"id": "bad", "tool": "business_error", "parameters": {"message": "no such order"}},
            {"id": "after", "tool": "echo", "parameters": {"value": "{{bad.x}}"}},
        ]
    }
    ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
    ctx = ExecutionContext(
        store=store,
        catalog=catalog,
        options=FAST,
        listener=_failing_on_every_event(BrokenPipeError(32, "Broken pipe"), []),
    )
    result = await execute_stored_plan(ref.plan_id, ctx)

    assert result.status == "failed"
    assert "no such order" in (result.step("bad").error or "")
    assert result.step("after").error == "skipped because dependency 'bad' failed"


async def test_the_api_runs_a_plan_whose_event_fan_out_fails(
    store: Store, catalog: ToolCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate.open"
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(gate))
    hub = OverflowingHub()

    def context(listener: EventListener | None) -> ExecutionContext:
        return ExecutionContext(store=store, catalog=catalog, options=FAST, listener=listener)

    runs = BackgroundRuns(context, store, hub)
    gated = {
        "steps": [{"id": "wait", "tool": "gate", "parameters": {"label": "go"}}, *PLAN["steps"]]
    }
    ref = submit_plan(gated, store=store, catalog=catalog, max_steps=50)

    # Without waiting, the call returns once the first step has started, although publishing
    # its event failed; the gate holds the run there until then.
    first = await runs.execute(ref.plan_id, wait=False)
    assert first.status == "running"
    gate.touch()
    result = await runs.execute(ref.plan_id, wait=True)  # joins the run going on

    assert result.status == "succeeded"
    assert {s.step_id: s.status for s in result.steps} == dict.fromkeys(
        ["wait", *STEPS], "succeeded"
    )
    # A subscriber still gets every event (replayed: the run has ended).
    events = [event async for event in hub.subscribe(ref.plan_id)]
    assert [e.kind for e in events].count("succeeded") == len(STEPS) + 1


async def test_a_worker_whose_listener_raises_runs_the_queue_all_the_same(
    store: Store, catalog: ToolCatalog
) -> None:
    heard: list[WorkerEvent] = []

    def broken(event: WorkerEvent) -> None:  # `toolplan worker` printing to a closed stderr
        heard.append(event)
        raise BrokenPipeError(32, "Broken pipe")

    ref = submit_plan(PLAN, store=store, catalog=catalog, max_steps=50)
    enqueue_plan(store, ref.plan_id)
    client = AsyncToolplan(store=store, tools=catalog, settings=Settings(execution=FAST))
    worker = Worker(client, options=WorkerOptions(max_plans=1, poll_interval=0.01), listener=broken)
    report = await worker.run()

    assert report.stopped_by == "max_plans"
    stored = store.get_execution(ref.plan_id)
    assert stored is not None and stored.status == "succeeded"
    assert {s.step_id: s.status for s in stored.steps} == dict.fromkeys(STEPS, "succeeded")
    assert (heard[0].kind, heard[-1].kind) == ("started", "stopped")
