"""Run (or resume) the steps of one stored plan under a lease, recording every transition.

This is what the execution graph's ``run_steps`` node does. Resume works from the durable step
records: steps that succeeded keep their outputs and are never called again; a step that was
running when the process died runs again (at-least-once), with the same idempotency key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolplan.analysis import Analysis, check_tools
from toolplan.engine.policies import ExecutionOptions
from toolplan.engine.recorder import EventListener, Recorder
from toolplan.engine.result import overall_status
from toolplan.engine.scheduler import StepOutcome, schedule
from toolplan.engine.step import StepRunner
from toolplan.errors import ExecutionBusy
from toolplan.plan import parse_plan
from toolplan.store.protocol import ExecutionRecord, PlanRecord, Store, utc_now
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from toolplan.config import Settings

__all__ = ["ExecutionBusy", "ExecutionContext", "new_worker_id", "run_plan_steps"]


def new_worker_id() -> str:
    """``host:pid:random``: unique per process, and tells whether a lease holder is still alive."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _owner_is_dead(owner: str | None) -> bool:
    """Whether a lease holder was a process on this host that no longer exists."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@dataclass
class ExecutionContext:
    """What the execution graph's nodes need; passed as ``config["configurable"]["toolplan"]``."""

    store: Store
    catalog: ToolCatalog
    options: ExecutionOptions = field(default_factory=ExecutionOptions)
    listener: EventListener | None = None
    worker_id: str = field(default_factory=new_worker_id)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        store: Store,
        catalog: ToolCatalog,
        listener: EventListener | None = None,
    ) -> ExecutionContext:
        """The context every entry point uses: the settings' execution options and limits."""
        return cls(
            store=store,
            catalog=catalog,
            options=settings.execution,
            listener=listener,
        )


async def _heartbeat(store: Store, plan_id: str, worker_id: str, lease: float) -> None:
    while True:
        await asyncio.sleep(lease / 3)
        if not await asyncio.to_thread(store.renew_lease, plan_id, worker_id, lease):
            raise ExecutionBusy(
                f"lost the lease on the execution of {plan_id!r} (another worker took it over)"
            )


async def run_plan_steps(ctx: ExecutionContext, record: PlanRecord) -> ExecutionRecord:
    """Run every unfinished step of a stored plan and store the final status."""
    store, plan_id = ctx.store, record.plan_id
    plan = parse_plan(record.plan)
    # The plan was fully validated when stored; only the catalog can have changed since.
    check_tools(plan, ctx.catalog)
    analysis = Analysis.from_json(record.analysis)
    pairs = [(step.id, step.tool) for step in plan.steps]
    execution = await asyncio.to_thread(store.create_execution, plan_id, pairs, status="running")
    expected = execution.worker_id if _owner_is_dead(execution.worker_id) else None
    lease = ctx.options.lease_seconds
    if not await asyncio.to_thread(
        store.acquire, plan_id, ctx.worker_id, lease, expected_owner=expected
    ):
        raise ExecutionBusy(
            f"plan {plan_id!r} is being executed by {execution.worker_id} right now; "
            "wait for it to finish, then run `toolplan show` to see the result"
        )
    current = await asyncio.to_thread(store.get_execution, plan_id)
    assert current is not None
    execution = current
    if execution.started_at is None:
        await asyncio.to_thread(
            store.set_execution_status, plan_id, "running", started_at=utc_now()
        )

    finished = {
        s.step_id: StepOutcome(s.status, output=s.output, error=s.error)
        for s in execution.steps
        if s.status in ("succeeded", "failed", "skipped")
    }
    outputs = {s.step_id: s.output for s in execution.steps if s.status == "succeeded"}
    recorder = Recorder(
        store, plan_id, output_limit_bytes=ctx.options.output_limit_bytes, listener=ctx.listener
    )
    runner = StepRunner(
        plan,
        ctx.catalog,
        recorder,
        ctx.options,
        request_id=record.request_id,
        plan_id=plan_id,
        store=store,
        outputs=outputs,
        prior_attempts={s.step_id: s.attempts for s in execution.steps if s.status == "running"},
    )
    tools = {step.id: step.tool for step in plan.steps}

    async def skip(step_id: str, reason: str) -> None:
        await recorder.skipped(step_id, tools[step_id], reason)

    work = asyncio.ensure_future(
        schedule(
            analysis.order,
            analysis.dependencies,
            runner.run,
            skip,
            concurrency=ctx.options.concurrency,
            fail_fast=ctx.options.fail_fast,
            finished=finished,
        )
    )
    heartbeat = asyncio.ensure_future(_heartbeat(store, plan_id, ctx.worker_id, lease))
    try:
        done, _ = await asyncio.wait({work, heartbeat}, return_when=asyncio.FIRST_COMPLETED)
        if heartbeat in done:
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            heartbeat.result()  # raises ExecutionBusy
        await work
    finally:
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await heartbeat
        if not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
        await asyncio.to_thread(recorder.close)

    final = await asyncio.to_thread(store.get_execution, plan_id)
    assert final is not None
    status = overall_status(final.steps)
    await asyncio.to_thread(
        store.set_execution_status,
        plan_id,
        status,
        finished_at=utc_now(),
    )
    await asyncio.to_thread(store.release, plan_id, ctx.worker_id)
    result = await asyncio.to_thread(store.get_execution, plan_id)
    assert result is not None
    return result
