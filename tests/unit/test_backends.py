"""The execution-backend seam: another backend plugs in through ExecutionContext.backend and reuses
the engine's parts (schedule, StepRunner, Recorder, StoreInputs), not copies of them.

``StepByStepBackend`` has the shape of a durable-workflow backend: the "workflow" runs
``schedule()``; each step runs like an activity in a fresh ``StepRunner`` that shares nothing in
memory with the others and reads its template inputs from the store.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from toolplan.config.policies import ExecutionOptions
from toolplan.engine.inputs import StoreInputs
from toolplan.engine.recorder import Recorder, StepEvent
from toolplan.engine.scheduler import StepOutcome, schedule
from toolplan.engine.step import StepRunner
from toolplan.runs import (
    ExecutionBackend,
    ExecutionContext,
    InProcessBackend,
    ResumeState,
    finish_execution,
    start_execution,
)
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.protocol import ExecutionRecord, PlanRecord
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog, load_tool_modules

CHAIN = {
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
        {"id": "bad", "tool": "getAuthor", "parameters": {"authorId": "nobody"}},
        {"id": "after_bad", "tool": "getAuthor", "parameters": {"authorId": "{{bad._id}}"}},
    ]
}


class StepByStepBackend:
    """Each step in its own runner (as an activity would be), inputs from the store."""

    def __init__(self) -> None:
        self.steps_run: list[str] = []

    async def run(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        plan, analysis, execution = await start_execution(ctx.store, ctx.catalog, record)
        resume = ResumeState.of(execution)

        async def activity(step_id: str) -> StepOutcome:
            self.steps_run.append(step_id)
            recorder = Recorder(
                ctx.store,
                record.plan_id,
                output_limit_bytes=ctx.options.output_limit_bytes,
                listener=ctx.listener,
            )
            try:
                runner = StepRunner(
                    plan,
                    ctx.catalog,
                    recorder,
                    ctx.options,
                    request_id=record.request_id,
                    plan_id=record.plan_id,
                    store=ctx.store,
                    inputs=StoreInputs(ctx.store, record.plan_id),
                    prior_attempts=resume.prior_attempts,
                )
                return await runner.run(step_id)
            finally:
                await asyncio.to_thread(recorder.close)

        async def skip(step_id: str, reason: str, kind: object = None) -> None:
            recorder = Recorder(ctx.store, record.plan_id, output_limit_bytes=1_000_000)
            await recorder.skipped(step_id, plan.step(step_id).tool, reason)
            await asyncio.to_thread(recorder.close)

        await schedule(
            analysis.order,
            analysis.dependencies,
            activity,
            skip,
            concurrency=ctx.options.concurrency,
            finished=resume.finished,
        )
        await finish_execution(ctx.store, record.plan_id)
        final = await asyncio.to_thread(ctx.store.get_execution, record.plan_id)
        assert final is not None
        return final


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


@pytest.fixture
def catalog() -> ToolCatalog:
    return load_tool_modules(["blog"])


@pytest.mark.parametrize("graph_checkpoints", [True, False])
async def test_another_backend_plugs_in_and_reuses_the_engine_parts(
    store: SqliteStore, catalog: ToolCatalog, graph_checkpoints: bool
) -> None:
    backend = StepByStepBackend()
    assert isinstance(backend, ExecutionBackend) and isinstance(
        InProcessBackend(), ExecutionBackend
    )
    events: list[StepEvent] = []
    ref = submit_plan(CHAIN, store=store, catalog=catalog, max_steps=50)
    ctx = ExecutionContext(
        store=store,
        catalog=catalog,
        options=ExecutionOptions(graph_checkpoints=graph_checkpoints),
        listener=events.append,
        backend=backend,
    )
    result = await execute_stored_plan(ref.plan_id, ctx)

    assert sorted(backend.steps_run) == ["author", "bad", "blog"]
    assert result.status == "partial"
    author, blog = result.step("author").output, result.step("blog")
    assert blog.resolved_parameters == {"authorId": author["_id"], "title": "T", "content": "by A"}
    assert result.step("after_bad").error == "skipped because dependency 'bad' failed"
    assert [e.kind for e in events if e.step_id == "blog"] == ["started", "succeeded"]

    again = await execute_stored_plan(ref.plan_id, ctx)  # finished: returned as stored
    assert again.to_json() == result.to_json() and len(backend.steps_run) == 3


async def test_without_graph_checkpoints_no_checkpoint_is_written(
    store: SqliteStore, catalog: ToolCatalog
) -> None:
    async def checkpoints(plan_id: str) -> int:
        async with store.checkpointer() as saver:
            return len([c async for c in saver.alist({"configurable": {"thread_id": plan_id}})])

    for graph_checkpoints in (False, True):
        ref = submit_plan(CHAIN, store=store, catalog=catalog, max_steps=50)
        options = ExecutionOptions(graph_checkpoints=graph_checkpoints)
        ctx = ExecutionContext(store=store, catalog=catalog, options=options)
        result = await execute_stored_plan(ref.plan_id, ctx)
        assert result.status == "partial"
        assert (await checkpoints(ref.plan_id) > 0) == graph_checkpoints


async def test_store_inputs_read_what_an_earlier_runner_recorded(
    store: SqliteStore, catalog: ToolCatalog
) -> None:
    """A step run by a fresh runner (another process) resolves templates from the store."""
    ref = submit_plan(CHAIN, store=store, catalog=catalog, max_steps=50)
    record = store.get_plan(ref.plan_id)
    assert record is not None
    ctx = ExecutionContext(store=store, catalog=catalog)
    plan, _, _ = await start_execution(store, catalog, record)

    async def one_step(step_id: str) -> StepOutcome:
        recorder = Recorder(store, ref.plan_id, output_limit_bytes=1_000_000)
        runner = StepRunner(
            plan,
            catalog,
            recorder,
            ctx.options,
            request_id=ref.request_id,
            plan_id=ref.plan_id,
            store=store,
            inputs=StoreInputs(store, ref.plan_id),
        )
        try:
            return await runner.run(step_id)
        finally:
            recorder.close()

    author = await one_step("author")
    blog = await one_step("blog")
    assert blog.status == "succeeded"
    assert json.loads(json.dumps(blog.output))["authorId"] == author.output["_id"]
    unresolved = await one_step("after_bad")  # "bad" never ran: nothing stored to read
    assert unresolved.status == "failed" and "bad" in (unresolved.error or "")


async def test_events_of_a_run_elsewhere_are_read_from_the_step_records(
    store: SqliteStore, catalog: ToolCatalog
) -> None:
    from toolplan.runs.events import watch_step_events

    ref = submit_plan(CHAIN, store=store, catalog=catalog, max_steps=50)
    pid = ref.plan_id
    assert [e async for e in watch_step_events(store, pid)] == []  # never executed
    store.create_execution(pid, [(s["id"], s["tool"]) for s in CHAIN["steps"]], status="running")
    store.update_step(pid, "author", {"status": "succeeded", "attempts": 3, "duration_ms": 5.0})
    store.update_step(pid, "blog", {"status": "running", "attempts": 1})
    watch = watch_step_events(store, pid, poll_seconds=0.01)
    first = [await anext(watch) for _ in range(7)]
    assert [(e.kind, e.step_id, e.attempt) for e in first] == [
        ("started", "author", 1),
        ("retrying", "author", 1),
        ("started", "author", 2),
        ("retrying", "author", 2),
        ("started", "author", 3),
        ("succeeded", "author", 3),
        ("started", "blog", 1),
    ]
    store.update_step(pid, "blog", {"status": "failed", "attempts": 1, "error": "boom"})
    for step in ("bad", "after_bad"):
        store.update_step(pid, step, {"status": "skipped", "error": "not run"})
    store.set_execution_status(pid, "partial")
    rest = [e async for e in watch]
    assert [(e.kind, e.step_id, e.error) for e in rest] == [
        ("failed", "blog", "boom"),
        ("skipped", "bad", "not run"),
        ("skipped", "after_bad", "not run"),
    ]
    assert [e async for e in watch_step_events(store, pid)] == []  # finished: nothing to follow


async def test_a_dead_lease_holder_is_taken_over_whatever_its_worker_id(
    store: SqliteStore, catalog: ToolCatalog
) -> None:
    """The holder's host and process come from typed fields the store recorded, not from
    parsing ``host:pid`` out of its worker ID (an API server or a custom worker names itself)."""
    import subprocess
    import sys

    ref = submit_plan(CHAIN, store=store, catalog=catalog, max_steps=50)
    store.create_execution(
        ref.plan_id, [(s["id"], s["tool"]) for s in CHAIN["steps"]], status="running"
    )
    holder = (
        "import sys; from toolplan.store import open_store; "
        "assert open_store(sys.argv[1]).acquire(sys.argv[2], 'api-server', 3600, expected_owner=None)"
    )
    subprocess.run([sys.executable, "-c", holder, store.uri, ref.plan_id], check=True)
    held = store.get_execution(ref.plan_id)
    assert held is not None and held.worker_id == "api-server" and held.owner_pid is not None

    result = await execute_stored_plan(ref.plan_id, ExecutionContext(store=store, catalog=catalog))
    assert result.status == "partial"  # ran at once, although the lease had an hour left
