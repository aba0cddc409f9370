"""The Temporal backend against a real Temporal server, with a worker in this process.

Each test runs plans through :func:`toolplan.service.operations.execute_stored_plan` with the Temporal
backend (the same call the CLI, the API and the Python API make) and a worker built by
``toolplan.temporal.worker.build_worker``; tools log their calls to ``$TOOLPLAN_TEST_LOG``.
Semantics are compared with the in-process engine on the same plans.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from toolplan.config import TemporalSettings
from toolplan.config.policies import ExecutionOptions, RetryPolicy, TimeoutPolicy
from toolplan.engine.recorder import StepEvent
from toolplan.runs import ExecutionContext
from toolplan.service.operations import (
    cancel_execution,
    describe,
    enqueue_execution,
    execute_stored_plan,
    submit_plan,
)
from toolplan.store.protocol import CANCELLED_BEFORE_START, CANCELLED_WHILE_RUNNING
from toolplan.store.sqlite import SqliteStore
from toolplan.temporal import TemporalBackend, workflow_id
from toolplan.temporal.client import connect
from toolplan.temporal.worker import build_worker
from toolplan.temporal.workflow import PlanWorkflow
from toolplan.tools import ToolCatalog, load_tool_modules

pytestmark = pytest.mark.temporal

OPTIONS = ExecutionOptions(
    default_timeout=10, retry=RetryPolicy(initial_backoff=0.01, jitter=0), graph_checkpoints=False
)

SEMANTICS = {
    "steps": [
        {"id": "author", "tool": "createAuthor", "parameters": {"name": "A", "email": "a@x.io"}},
        {
            "id": "blog",
            "tool": "createBlog",
            "parameters": {
                "authorId": "{{author._id}}",
                "title": "T",
                "content": "by {{author.name}}",
            },
        },
        # echo's output is undeclared (Any), so the validator cannot reject these templates early:
        # they fail at run time, as templates into outputs of unknown shape do
        {"id": "raw", "tool": "echo", "parameters": {"value": {"title": "T"}}},
        {"id": "flaky", "tool": "flaky", "parameters": {"failures": 2}},
        {"id": "business", "tool": "business_error", "parameters": {"message": "no such order"}},
        {
            "id": "bad_args",
            "tool": "sleepy",
            "parameters": {"label": "x", "seconds": "{{raw.title}}"},
        },
        {"id": "exhausted", "tool": "flaky", "parameters": {"failures": 9}, "maxAttempts": 2},
        {
            "id": "rescued",
            "tool": "business_error",
            "parameters": {"message": "down"},
            "fallback": {"tool": "echo", "parameters": {"value": "{{author.name}}"}},
        },
        {
            "id": "both_fail",
            "tool": "flaky",
            "parameters": {"failures": 9},
            "maxAttempts": 1,
            "fallback": {"tool": "business_error", "parameters": {"message": "fallback down"}},
        },
        {"id": "slow", "tool": "hang", "parameters": {}, "timeout": 0.3, "maxAttempts": 2},
        {"id": "missing", "tool": "echo", "parameters": {"value": "{{raw.nope}}"}},
        {"id": "after", "tool": "echo", "parameters": {"value": "{{business}}"}},
    ]
}
"""Every kind of step ending: success, templates, retries, business and argument errors,
exhausted retries, fallbacks, a timeout, an unresolvable template and a skipped dependent."""

SKEW = {
    "steps": [
        {"id": "slow", "tool": "gate", "parameters": {"label": "slow"}},
        {"id": "a", "tool": "echo", "parameters": {"value": 1}},
        {"id": "b", "tool": "echo", "parameters": {"value": "{{a}}"}},
        {"id": "c", "tool": "echo", "parameters": {"value": "{{b}}"}},
        {"id": "join", "tool": "echo", "parameters": {"value": ["{{slow.label}}", "{{c}}"]}},
    ]
}


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[dict[str, Any]]]:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(tmp_path / "gate.open"))

    def calls() -> list[dict[str, Any]]:
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    return calls


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


@pytest.fixture
def catalog() -> ToolCatalog:
    return load_tool_modules(["blog", "tests.support.tools", "tests.support.odd_outputs"])


@pytest.fixture
async def worker(
    temporal_settings: TemporalSettings, store: SqliteStore, catalog: ToolCatalog
) -> AsyncIterator[None]:
    client = await connect(temporal_settings)
    async with build_worker(client, temporal_settings, store, catalog, concurrency=20, grace=0):
        yield


def temporal_ctx(
    store: SqliteStore,
    catalog: ToolCatalog,
    settings: TemporalSettings,
    *,
    options: ExecutionOptions = OPTIONS,
    listener: Callable[[StepEvent], None] | None = None,
) -> ExecutionContext:
    return ExecutionContext(
        store=store,
        catalog=catalog,
        options=options,
        listener=listener,
        backend=TemporalBackend(settings, poll_seconds=0.05),
    )


def outcomes(result: Any) -> dict[str, tuple[str, int, str | None, bool]]:
    return {s.step_id: (s.status, s.attempts, s.error, s.used_fallback) for s in result.steps}


async def wait_for(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.02)


async def test_steps_end_as_in_the_in_process_engine(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    local = submit_plan(SEMANTICS, store=store, catalog=catalog, max_steps=50)
    in_process = await execute_stored_plan(
        local.plan_id, ExecutionContext(store=store, catalog=catalog, options=OPTIONS)
    )
    local_calls = [c for c in log() if c["event"] in ("call", "start")]

    events: list[StepEvent] = []
    ref = submit_plan(SEMANTICS, store=store, catalog=catalog, max_steps=50)
    result = await execute_stored_plan(
        ref.plan_id, temporal_ctx(store, catalog, temporal_settings, listener=events.append)
    )

    assert result.status == in_process.status == "partial"
    assert outcomes(result) == outcomes(in_process)
    got = outcomes(result)
    assert got["flaky"] == ("succeeded", 3, None, False)  # retried twice, then succeeded
    assert got["business"][:2] == ("failed", 1)  # ToolException: never retried
    assert "reported an error: no such order" in (got["business"][2] or "")
    assert got["bad_args"][:2] == ("failed", 1) and "rejected its arguments" in got["bad_args"][2]
    assert got["exhausted"][:3] == (
        "failed",
        2,
        "tool 'flaky' raised ConnectionError: transient failure on attempt 2 (after 2 attempts)",
    )
    assert got["rescued"] == ("succeeded", 1, None, True)
    assert result.step("rescued").output == "A"
    assert "fallback 'business_error' failed too" in (got["both_fail"][2] or "")
    assert got["slow"][:3] == (
        "failed",
        2,
        "tool 'hang' timed out after 0.3s and was cancelled (after 2 attempts)",
    )
    assert got["missing"][0] == "failed" and "raw.nope" in (got["missing"][2] or "")
    assert got["after"] == ("skipped", 0, "skipped because dependency 'business' failed", False)
    # The same effective timeouts, recorded with their source.
    timeouts = {s.step_id: (s.timeout, s.timeout_source) for s in result.steps}
    assert timeouts == {s.step_id: (s.timeout, s.timeout_source) for s in in_process.steps}
    assert timeouts["slow"] == (0.3, "plan") and timeouts["flaky"] == (10, "default")

    # The same tool calls, with the same idempotency keys and attempt numbers.
    temporal_calls = [c for c in log() if c["event"] in ("call", "start")][len(local_calls) :]

    def shape(calls: list[dict[str, Any]], plan_id: str) -> list[tuple[str, int, str]]:
        return sorted((c["step"], c["attempt"], c["key"].replace(plan_id, "P")) for c in calls)

    assert shape(temporal_calls, ref.plan_id) == shape(local_calls, local.plan_id)
    # toolplan show reads the same records; the listener got the steps' events.
    shown = describe(store, ref.plan_id)["execution"]
    assert shown == result.to_json()
    assert {(e.step_id, e.kind) for e in events} >= {("flaky", "succeeded"), ("after", "skipped")}

    again = await execute_stored_plan(ref.plan_id, temporal_ctx(store, catalog, temporal_settings))
    assert again.to_json() == result.to_json()  # finished: returned as stored, nothing runs


ODD_OUTPUTS = {
    "steps": [
        {"id": "nan", "tool": "not_a_number", "parameters": {}},
        {"id": "png", "tool": "raw_bytes", "parameters": {}, "maxAttempts": 3},
        {
            "id": "each",
            "tool": "huge_integer",
            "forEach": [1, 2],
            "parameters": {},
            "maxAttempts": 3,
        },
    ]
}


async def test_outputs_the_record_cannot_hold_fail_once_on_temporal_as_in_process(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    local = submit_plan(ODD_OUTPUTS, store=store, catalog=catalog, max_steps=50)
    in_process = await execute_stored_plan(
        local.plan_id, ExecutionContext(store=store, catalog=catalog, options=OPTIONS)
    )
    ref = submit_plan(ODD_OUTPUTS, store=store, catalog=catalog, max_steps=50)
    result = await execute_stored_plan(ref.plan_id, temporal_ctx(store, catalog, temporal_settings))
    assert outcomes(result) == outcomes(in_process)
    assert result.step("nan").output == {"ratio": None, "high": None, "low": None, "ok": 1.5}
    png = result.step("png")
    assert (png.status, png.attempts) == ("failed", 1)
    assert "returned an output the record cannot hold: bytes" in (png.error or "")
    assert [(i.status, i.attempts) for i in result.step("each").items or []] == [("failed", 1)] * 2
    called = [c["step"] for c in log() if c["key"].startswith(ref.plan_id)]
    assert sorted(called) == ["each", "each", "nan", "png"]  # nothing ran twice


async def test_an_adaptive_timeout_from_history_applies_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    options = replace(OPTIONS, timeouts=TimeoutPolicy(min_observations=2))
    warm = {
        "steps": [{"id": f"w{i}", "tool": "sleepy", "parameters": {"label": "w"}} for i in (0, 1)]
    }
    ref = submit_plan(warm, store=store, catalog=catalog, max_steps=50)
    await execute_stored_plan(
        ref.plan_id, ExecutionContext(store=store, catalog=catalog, options=options)
    )
    slow = {
        "steps": [
            {
                "id": "slow",
                "tool": "sleepy",
                "parameters": {"label": "s", "seconds": 1.5},
                "maxAttempts": 1,
            }
        ]
    }
    ref = submit_plan(slow, store=store, catalog=catalog, max_steps=50)
    result = await execute_stored_plan(
        ref.plan_id, temporal_ctx(store, catalog, temporal_settings, options=options)
    )
    step = result.step("slow")
    assert (step.status, step.timeout, step.timeout_source) == ("failed", 1.0, "history")
    assert "timed out after 1s" in (step.error or "")


async def test_eager_scheduling_holds_a_step_starts_while_a_slow_sibling_runs(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    ref = submit_plan(SKEW, store=store, catalog=catalog, max_steps=50)
    run = asyncio.create_task(
        execute_stored_plan(ref.plan_id, temporal_ctx(store, catalog, temporal_settings))
    )
    await wait_for(lambda: any(c["step"] == "c" for c in log()), "c was called")
    # a -> b -> c all ran while the unrelated "slow" still runs: no waves, no supersteps.
    assert [(c["step"], c["event"]) for c in log() if c["step"] == "slow"] == [("slow", "start")]
    (tmp_path / "gate.open").touch()
    result = await run
    assert result.status == "succeeded"
    assert result.step("join").output == ["slow", 1]

    # The workflow is deterministic: its recorded history replays without a mismatch.
    client = await connect(temporal_settings)
    history = await client.get_workflow_handle(workflow_id(ref.plan_id)).fetch_history()
    replayer = Replayer(
        workflows=[PlanWorkflow],
        workflow_runner=SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("toolplan")
        ),
    )
    await replayer.replay_workflow(history)


async def test_one_workflow_per_plan_whoever_starts_it(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    ref = submit_plan(SKEW, store=store, catalog=catalog, max_steps=50)
    queued = await enqueue_execution(ref.plan_id, temporal_ctx(store, catalog, temporal_settings))
    assert queued.status == "queued"
    starters = [
        asyncio.create_task(
            execute_stored_plan(ref.plan_id, temporal_ctx(store, catalog, temporal_settings))
        )
        for _ in range(2)
    ]
    await wait_for(lambda: any(c["step"] == "c" for c in log()), "c was called")
    again = await enqueue_execution(ref.plan_id, temporal_ctx(store, catalog, temporal_settings))
    assert again.status == "running"  # joined, not queued a second time
    (tmp_path / "gate.open").touch()
    first, second = await asyncio.gather(*starters)
    assert first.to_json() == second.to_json() and first.status == "succeeded"

    calls = [c["step"] for c in log() if c["event"] in ("call", "start")]
    assert sorted(calls) == ["a", "b", "c", "join", "slow"]  # each step once
    client = await connect(temporal_settings)
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{workflow_id(ref.plan_id)}'")]
    assert len(runs) == 1 and runs[0].status == WorkflowExecutionStatus.COMPLETED


async def test_a_cancel_request_in_the_store_cancels_the_workflow_and_resume_continues_it(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    ref = submit_plan(SKEW, store=store, catalog=catalog, max_steps=50)
    ctx = temporal_ctx(store, catalog, temporal_settings)
    run = asyncio.create_task(execute_stored_plan(ref.plan_id, ctx))
    await wait_for(lambda: any(c["step"] == "c" for c in log()), "c was called")
    await wait_for(
        lambda: (
            (e := store.get_execution(ref.plan_id)) is not None
            and e.step("c").status == "succeeded"
        ),
        "c was recorded",
    )

    # The backend-neutral cancel: a request in the store, noticed by the running step's activity.
    cancelled = await cancel_execution(ref.plan_id, store, wait=20)
    assert cancelled.status == "cancelled"
    steps = outcomes(cancelled)
    assert [steps[s][0] for s in ("a", "b", "c")] == ["succeeded"] * 3  # finished steps kept
    assert steps["slow"][:3] == ("cancelled", 1, CANCELLED_WHILE_RUNNING)
    assert steps["join"][:3] == ("cancelled", 0, CANCELLED_BEFORE_START)
    assert (await run).to_json() == cancelled.to_json()  # the waiting starter sees the same
    client = await connect(temporal_settings)
    described = await client.get_workflow_handle(workflow_id(ref.plan_id)).describe()
    assert described.status == WorkflowExecutionStatus.CANCELED
    # Cancelled now: cancelling again, or executing it, returns it as stored.
    assert (await cancel_execution(ref.plan_id, store, wait=1)).to_json() == cancelled.to_json()
    assert (await execute_stored_plan(ref.plan_id, ctx)).to_json() == cancelled.to_json()

    # --resume runs a new workflow (same ID): the finished steps are not called again.
    (tmp_path / "gate.open").touch()
    resumed = await execute_stored_plan(ref.plan_id, ctx, resume=True)
    assert resumed.status == "succeeded"
    assert resumed.step("join").output == ["slow", 1]
    calls = sorted(c["step"] for c in log() if c["event"] in ("call", "start"))
    assert calls == ["a", "b", "c", "join", "slow", "slow"]


async def test_a_cancel_requested_while_queued_on_temporal_runs_nothing(
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    ref = submit_plan(SKEW, store=store, catalog=catalog, max_steps=50)
    ctx = temporal_ctx(store, catalog, temporal_settings)
    assert (await enqueue_execution(ref.plan_id, ctx)).status == "queued"  # no worker yet
    cancelled = await cancel_execution(ref.plan_id, store, wait=0)
    assert cancelled.status == "cancelled"
    client = await connect(temporal_settings)
    async with build_worker(client, temporal_settings, store, catalog, concurrency=4, grace=0):
        result = await client.get_workflow_handle(workflow_id(ref.plan_id)).result()
    assert result == "cancelled"  # the workflow saw the record and ran nothing
    assert log() == []


async def test_fail_fast_cancels_running_steps_as_in_process(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    plan = {
        "steps": [
            {"id": "slow", "tool": "gate", "parameters": {"label": "x"}},
            {"id": "boom", "tool": "business_error", "parameters": {"message": "no"}},
            {"id": "next", "tool": "echo", "parameters": {"value": "{{slow}}"}},
        ]
    }
    options = ExecutionOptions(fail_fast=True, graph_checkpoints=False)
    results = []
    for backend in ("in-process", "temporal"):
        ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
        ctx = (
            ExecutionContext(store=store, catalog=catalog, options=options)
            if backend == "in-process"
            else temporal_ctx(store, catalog, temporal_settings, options=options)
        )
        results.append(outcomes(await execute_stored_plan(ref.plan_id, ctx)))
    assert results[0] == results[1]
    assert results[1]["slow"][0] == "skipped" and "--fail-fast" in (results[1]["slow"][2] or "")


async def test_a_listener_that_raises_does_not_fail_a_run_on_temporal(
    worker: None, store: SqliteStore, catalog: ToolCatalog, temporal_settings: TemporalSettings
) -> None:
    # The events of a Temporal run are read from the step records while it runs; a listener
    # that fails on each of them (a progress printer whose pipe is gone) changes nothing.
    heard: list[StepEvent] = []

    def broken(event: StepEvent) -> None:
        heard.append(event)
        raise BrokenPipeError(32, "Broken pipe")

    plan = {
        "steps": [
            {"id": "a", "tool": "echo", "parameters": {"value": "x"}},
            {"id": "b", "tool": "echo", "parameters": {"value": "{{a}}"}},
        ]
    }
    ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
    result = await execute_stored_plan(
        ref.plan_id, temporal_ctx(store, catalog, temporal_settings, listener=broken)
    )

    assert result.status == "succeeded"
    assert outcomes(result) == {
        "a": ("succeeded", 1, None, False),
        "b": ("succeeded", 1, None, False),
    }
    assert ("b", "succeeded") in {(e.step_id, e.kind) for e in heard}  # told of every event


MAP_AND_BRANCH = {
    "steps": [
        {"id": "labels", "tool": "echo", "parameters": {"value": {"items": ["a", "b", "c"]}}},
        {
            "id": "each",
            "tool": "lookup",
            "forEach": "{{labels.items}}",
            "parameters": {"key": "{{$index}}-{{$item}}"},
        },
        {
            "id": "some_bad",
            "tool": "lookup",
            "forEach": ["x", "bad"],
            "parameters": {"key": "{{$item}}"},
        },
        {"id": "when_true", "tool": "echo", "when": "{{each[2]}}", "parameters": {"value": 1}},
        # Text is no yes/no: skipped (condition-not-boolean), a dependent with it, as in-process.
        {"id": "when_text", "tool": "echo", "when": "{{each[2].key}}", "parameters": {"value": 3}},
        {"id": "after_text", "tool": "echo", "parameters": {"value": "{{when_text}}"}},
        {
            "id": "when_false",
            "tool": "echo",
            "when": {"not": "{{each}}"},
            "parameters": {"value": 2},
        },
        {"id": "after_false", "tool": "echo", "parameters": {"value": "{{when_false}}"}},
    ]
}


async def test_a_map_and_a_branch_run_as_in_process_each_item_an_activity(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    options = replace(OPTIONS, cache=False)
    local = submit_plan(MAP_AND_BRANCH, store=store, catalog=catalog, max_steps=50)
    in_process = await execute_stored_plan(
        local.plan_id, ExecutionContext(store=store, catalog=catalog, options=options)
    )
    ref = submit_plan(MAP_AND_BRANCH, store=store, catalog=catalog, max_steps=50)
    result = await execute_stored_plan(
        ref.plan_id, temporal_ctx(store, catalog, temporal_settings, options=options)
    )

    def shape(run: Any) -> dict[str, Any]:
        def items(step: dict[str, Any]) -> Any:
            return [
                {k: v for k, v in item.items() if k != "durationMs"}
                for item in step.get("items") or []
            ]

        return {
            s["id"]: (s["status"], s["output"], s["error"], s.get("reason"), items(s))
            for s in run.to_json()["steps"]
        }

    assert shape(result) == shape(in_process)
    assert result.status == in_process.status == "partial"  # some_bad failed
    each = result.step("each")
    assert [o["key"] for o in each.output] == ["0-a", "1-b", "2-c"]
    assert [i.status for i in each.items or []] == ["succeeded"] * 3
    assert result.step("when_true").status == "succeeded"
    assert (result.step("when_false").status, result.step("when_false").reason) == (
        "skipped",
        "condition",
    )
    assert result.step("after_false").reason == "condition"
    assert [
        (result.step(s).status, result.step(s).reason) for s in ("when_text", "after_text")
    ] == [("skipped", "condition-not-boolean")] * 2
    assert result.step("some_bad").error.startswith("item 1 of 2 failed")  # type: ignore[union-attr]
    keys = sorted(c["key"] for c in log() if c["step"] == "each")
    assert keys == sorted(
        [f"{local.plan_id}:each[{i}]" for i in range(3)]
        + [f"{ref.plan_id}:each[{i}]" for i in range(3)]
    )


WIRE = {
    "steps": [
        {"id": "account", "tool": "echo", "parameters": {"value": {"iban": "NO12"}}},
        {"id": "pay", "tool": "wire_money", "parameters": {"to": "{{account.iban}}", "amount": 5}},
        {"id": "receipt", "tool": "echo", "parameters": {"value": "{{pay.sent}}"}},
        {"id": "report", "tool": "text", "parameters": {"value": "independent"}},
    ]
}


async def _workflow(settings: TemporalSettings, plan_id: str) -> tuple[str, Any]:
    """The run ID and status of the plan's latest workflow run."""
    client = await connect(settings)
    described = await client.get_workflow_handle(workflow_id(plan_id)).describe()
    return described.run_id, described.status


async def test_a_gated_step_waits_on_a_signal_and_an_approval_finishes_it_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    """The workflow waits (running, in one run) while a step waits for approval; the client's
    approve records the decision and signals it; the same run calls the tool once, with the
    arguments that were shown."""
    from toolplan.client import AsyncToolplan

    ref = submit_plan(WIRE, store=store, catalog=catalog, max_steps=50)
    backend = TemporalBackend(temporal_settings, poll_seconds=0.05)
    tp = AsyncToolplan(store=store, tools=catalog, backend=backend)
    waiting = await tp.execute(ref.plan_id, options=OPTIONS)
    assert (waiting.status, waiting.exit_code) == ("waiting", 4)
    assert waiting.step("pay").status == "waiting_approval"
    shown = waiting.step("pay").resolved_parameters
    assert shown == {"to": "NO12", "amount": 5}
    assert waiting.step("report").status == "succeeded"
    assert [c for c in log() if c["step"] == "pay"] == []
    # The workflow did not end: it waits, durably, for the decision signal.
    run_id, status = await _workflow(temporal_settings, ref.plan_id)
    assert status == WorkflowExecutionStatus.RUNNING

    done = await tp.approve(ref.plan_id, ["pay"], by="ada", options=OPTIONS)
    assert done.status == "succeeded"
    assert done.step("receipt").output == 5
    [call] = [c for c in log() if c["step"] == "pay" and c["event"] == "call"]
    assert {"to": call["to"], "amount": call["amount"]} == shown
    # Signalled, not restarted: the same run finished the plan.
    assert await _workflow(temporal_settings, ref.plan_id) == (
        run_id,
        WorkflowExecutionStatus.COMPLETED,
    )


async def test_a_denial_signals_the_waiting_workflow_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    from toolplan.client import AsyncToolplan

    ref = submit_plan(WIRE, store=store, catalog=catalog, max_steps=50)
    tp = AsyncToolplan(
        store=store, tools=catalog, backend=TemporalBackend(temporal_settings, poll_seconds=0.05)
    )
    assert (await tp.execute(ref.plan_id, options=OPTIONS)).status == "waiting"
    run_id, _ = await _workflow(temporal_settings, ref.plan_id)

    done = await tp.deny(ref.plan_id, "pay", "wrong account", by="ada", options=OPTIONS)
    assert done.status == "partial"
    assert done.step("pay").status == "denied"
    assert done.step("receipt").status == "skipped"
    assert "'pay' was denied" in (done.step("receipt").error or "")
    assert [c for c in log() if c["step"] == "pay"] == []
    assert await _workflow(temporal_settings, ref.plan_id) == (
        run_id,
        WorkflowExecutionStatus.COMPLETED,
    )


async def test_a_decision_recorded_with_no_workflow_running_starts_one_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    """The store is the truth: the waiting workflow is gone (terminated by an operator), the
    approval is recorded anyway, and executing the plan starts a workflow that takes it in."""
    from toolplan.runs.approvals import approve_steps

    ref = submit_plan(WIRE, store=store, catalog=catalog, max_steps=50)
    ctx = temporal_ctx(store, catalog, temporal_settings)
    waiting = await execute_stored_plan(ref.plan_id, ctx)
    assert waiting.status == "waiting"
    client = await connect(temporal_settings)
    first, _ = await _workflow(temporal_settings, ref.plan_id)
    await client.get_workflow_handle(workflow_id(ref.plan_id)).terminate("operator")

    approve_steps(store, ref.plan_id, ["pay"], by="ada")
    done = await execute_stored_plan(ref.plan_id, ctx)
    assert done.status == "succeeded"
    [call] = [c for c in log() if c["step"] == "pay" and c["event"] == "call"]
    assert (call["to"], call["amount"]) == ("NO12", 5)
    second, status = await _workflow(temporal_settings, ref.plan_id)
    assert (second != first, status) == (True, WorkflowExecutionStatus.COMPLETED)


async def test_cancelling_a_waiting_plan_ends_its_waiting_workflow_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    from toolplan.client import AsyncToolplan

    ref = submit_plan(WIRE, store=store, catalog=catalog, max_steps=50)
    backend = TemporalBackend(temporal_settings, poll_seconds=0.05)
    tp = AsyncToolplan(store=store, tools=catalog, backend=backend)
    assert (await tp.execute(ref.plan_id, options=OPTIONS)).status == "waiting"

    cancelled = await tp.cancel(ref.plan_id)
    assert cancelled.status == "cancelled"
    assert cancelled.step("pay").status == "cancelled"
    client = await connect(temporal_settings)
    assert await client.get_workflow_handle(workflow_id(ref.plan_id)).result() == "cancelled"
    assert [c for c in log() if c["step"] == "pay"] == []


def _stored_unchecked(store: SqliteStore, plan: dict[str, Any]) -> str:
    """``plan`` written straight into the store (no validation on the way in), as a version
    from before the gated-fallback check could have left it."""
    from toolplan.plan_format.ids import new_id
    from toolplan.store.protocol import PlanRecord, RequestRecord, utc_now

    plan_id = new_id("plan")
    request = RequestRecord(new_id("req"), "q", utc_now())
    order = [step["id"] for step in plan["steps"]]
    store.save_plan(
        PlanRecord(
            plan_id=plan_id,
            request_id=request.request_id,
            plan=plan,
            analysis={
                "order": order,
                "dependencies": {step: [] for step in order},
                "layers": [order],
                "criticalPath": order[:1],
            },
            status="planned",
            created_at=utc_now(),
            query="q",
            meta={},
        ),
        request,
    )
    return plan_id


GATED_FALLBACKS = {
    "steps": [
        {
            "id": "x",
            "tool": "business_error",
            "parameters": {"message": "primary fails"},
            "fallback": {"tool": "wire_money", "parameters": {"to": "ATTACKER", "amount": 1000}},
        },
        {
            "id": "each",
            "tool": "business_error",
            "forEach": ["a", "b"],
            "parameters": {"message": "{{$item}} fails"},
            "fallback": {"tool": "wire_money", "parameters": {"to": "ATTACKER", "amount": 1}},
        },
    ]
}


async def test_a_gated_fallback_is_never_called_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    """Issue 42, item 1, on Temporal: the fallback activity and each item's activity refuse a
    gated fallback as the in-process engine does (validation refuses such a plan; this one was
    written straight into the store)."""
    plan_id = _stored_unchecked(store, GATED_FALLBACKS)
    result = await execute_stored_plan(plan_id, temporal_ctx(store, catalog, temporal_settings))
    assert result.status == "failed"
    x, each = result.step("x"), result.step("each")
    assert x.status == "failed" and not x.used_fallback
    assert x.error is not None and "fallback 'wire_money' was not called" in x.error
    assert each.status == "failed" and each.items is not None
    assert all(item.error and "was not called" in item.error for item in each.items)
    assert [call for call in log() if "to" in call] == []


async def test_approve_all_records_its_decision_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    ref = submit_plan(WIRE, store=store, catalog=catalog, max_steps=50)
    options = replace(OPTIONS, approve_all=True, approver="ops")
    ctx = temporal_ctx(store, catalog, temporal_settings, options=options)
    result = await execute_stored_plan(ref.plan_id, ctx)
    assert result.status == "succeeded"
    decision = result.step("pay").decision
    assert decision is not None
    assert (decision.kind, decision.by, decision.via) == ("approved", "ops", "approveAll")
    assert len([c for c in log() if c["step"] == "pay" and c["event"] == "call"]) == 1


ORDERED = {
    "steps": [
        {"id": "before", "tool": "get", "parameters": {"key": "k"}},
        {"id": "write", "tool": "put", "parameters": {"key": "k", "value": "new", "seconds": 0.2}},
        {"id": "after", "tool": "get", "parameters": {"key": "k"}},
    ]
}
"""A read, a write and the same read again, with no edge written: program order on ``kv``."""


async def test_program_order_and_fresh_reads_hold_on_temporal(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Callable[[], list[dict[str, Any]]],
) -> None:
    """The workflow keeps the order edges, and a write in an activity makes what was cached
    before it stale, for this execution and the next (``get`` is cached for an hour)."""
    ctx = temporal_ctx(store, catalog, temporal_settings, options=replace(OPTIONS, cache=True))
    ref = submit_plan(ORDERED, store=store, catalog=catalog, max_steps=50)
    result = await execute_stored_plan(ref.plan_id, ctx)
    assert result.status == "succeeded"
    assert result.step("before").output == {"key": "k", "value": None}
    assert result.step("after").output == {"key": "k", "value": "new"}
    assert not result.step("after").cached
    events = [(c["event"], c["step"]) for c in log() if c["event"] in ("start", "end")]
    assert events == [
        ("start", "before"),
        ("end", "before"),
        ("start", "write"),
        ("end", "write"),
        ("start", "after"),
        ("end", "after"),
    ]
    again = submit_plan(
        {"steps": [{"id": "read", "tool": "get", "parameters": {"key": "k"}}]},
        store=store,
        catalog=catalog,
        max_steps=50,
    )
    cached = await execute_stored_plan(again.plan_id, ctx)
    assert cached.step("read").cached and cached.step("read").output["value"] == "new"
