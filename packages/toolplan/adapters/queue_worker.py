"""Workers: processes on one or many machines that share one queue of executions.

``toolplan execute PLAN_ID --enqueue`` queues an execution (:func:`enqueue_plan`). ``toolplan
worker`` runs a :class:`Worker` over a :class:`~toolplan.client.AsyncToolplan`: it claims queued
executions atomically (``Store.claim`` takes a lease) and runs each with the client's
:meth:`~toolplan.client.AsyncToolplan.execute` (what ``toolplan execute`` runs) under the client's
worker ID, so the lease the claim took is the lease the runner holds and heartbeats, and claims
more until told to stop.

Failure model:

- A worker that dies (``kill -9``, a lost machine) stops renewing its leases. When a lease expires,
  another worker claims the execution and resumes it from its step records: finished steps keep
  their outputs and are not called again; a step that was running is called again, with the same
  idempotency key.
- On SIGTERM or SIGINT a worker stops claiming, gives running executions ``shutdown_grace``
  seconds to finish, then cancels the rest and releases their leases so that another worker
  resumes them at once. A second signal cancels without waiting.
- While the store is unreachable the worker keeps polling, and reports the outage once.

Approval happens when a plan is queued: :func:`enqueue_plan` refuses a ``needs_review`` plan
unless approved, and workers run whatever is in the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from toolplan.client import AsyncToolplan
from toolplan.engine.observers import BestEffort
from toolplan.errors import ExecutionBusy, InvalidInput, StoreUnavailable, ToolsUnavailable
from toolplan.runs.queue import enqueue_plan
from toolplan.store.protocol import PlanRecord, utc_now
from toolplan.tools.sources import ToolSources

__all__ = [
    "Worker",
    "WorkerEvent",
    "WorkerEventKind",
    "WorkerOptions",
    "WorkerReport",
    "enqueue_plan",
]


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker process takes work from the queue."""

    concurrency: int = 1
    """Executions run at once by this process (each runs its own steps concurrently)."""
    poll_interval: float = 1.0
    """Seconds between claims while the queue is empty."""
    idle_exit: float | None = None
    """Exit after this many seconds with nothing to run (``0``: as soon as the queue is empty)."""
    max_plans: int | None = None
    """Exit after running this many executions."""
    shutdown_grace: float = 10.0
    """On SIGTERM, seconds running executions get to finish before they are released."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.poll_interval <= 0:
            raise ValueError(f"poll_interval must be positive, got {self.poll_interval}")
        if self.idle_exit is not None and self.idle_exit < 0:
            raise ValueError(f"idle_exit cannot be negative, got {self.idle_exit}")
        if self.max_plans is not None and self.max_plans < 1:
            raise ValueError(f"max_plans must be at least 1, got {self.max_plans}")
        if self.shutdown_grace < 0:
            raise ValueError(f"shutdown_grace cannot be negative, got {self.shutdown_grace}")


WorkerEventKind = Literal[
    "started", "claimed", "tools", "finished", "failed", "lost", "released", "unavailable", "reconnected",
    "stopping", "stopped",
]  # fmt: skip
"""``lost``: another worker took the lease over. ``released``: given back to the queue.
``tools``: the worker loads the tools recorded with a plan (it was given none)."""


@dataclass(frozen=True)
class WorkerEvent:
    """Something a worker did, for logs and progress displays."""

    kind: WorkerEventKind
    worker_id: str
    plan_id: str | None = None
    detail: str | None = None

    def __str__(self) -> str:
        subject = f" {self.plan_id}" if self.plan_id else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"worker {self.worker_id}: {self.kind}{subject}{detail}"


WorkerListener = Callable[[WorkerEvent], None]

StopReason = Literal["idle", "max_plans", "signal", "setup"]


@dataclass
class WorkerReport:
    """What one worker process did, printed by ``toolplan worker --json``."""

    worker_id: str
    finished: dict[str, str] = field(default_factory=dict)
    """Plan ID → final status of each execution this worker ran to the end."""
    failed: dict[str, str] = field(default_factory=dict)
    """Plan ID → why it could not run at all (marked ``failed`` in the store)."""
    released: list[str] = field(default_factory=list)
    """Executions given back to the queue at shutdown."""
    lost: list[str] = field(default_factory=list)
    """Executions whose lease another worker took over."""
    stopped_by: StopReason | None = None
    store_error: str | None = None
    """The store's error, if it was unreachable when the worker stopped."""
    setup_error: str | None = None
    """Why the worker stopped because it cannot load a plan's tools (the plan was queued
    again for a worker that can)."""

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON form."""
        return {
            "workerId": self.worker_id,
            "finished": self.finished,
            "failed": self.failed,
            "released": self.released,
            "lost": self.lost,
            "stoppedBy": self.stopped_by,
            "storeError": self.store_error,
            "setupError": self.setup_error,
        }

    def check(self) -> None:
        """Raise :class:`~toolplan.errors.StoreUnavailable` if the worker stopped while the
        store was unreachable, :class:`~toolplan.errors.ToolsUnavailable` if it stopped because
        it cannot load a plan's tools (its work is not done; the exit code, 3, must say so)."""
        if self.store_error is not None:
            raise StoreUnavailable(self.store_error, details=self.to_json())
        if self.setup_error is not None:
            raise ToolsUnavailable(self.setup_error, details=self.to_json())


class Worker:
    """Claims queued executions and runs them, ``options.concurrency`` at a time."""

    def __init__(
        self,
        client: AsyncToolplan,
        *,
        options: WorkerOptions | None = None,
        listener: WorkerListener | None = None,
    ) -> None:
        self.client = client
        """Store, tools, execution options and worker ID; when its tools were not chosen, each
        plan runs with the tools recorded with it."""
        self.store = client.store
        self.options = options or WorkerOptions()
        self.worker_id = client.worker_id
        """The claim takes the lease under this ID, so the run holds the lease it claimed."""
        self.listener = listener
        self._notify = BestEffort(listener, what=f"worker {self.worker_id}")
        """A failing listener (a closed stderr, say) never stops the worker or its runs."""
        self.report = WorkerReport(self.worker_id)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._stopping = False
        self._wake: asyncio.Event | None = None
        self._cancel_now: asyncio.Event | None = None
        self._outage = False

    # -- control -------------------------------------------------------------------------------

    def stop(self, *, now: bool = False) -> None:
        """Stop claiming work; with ``now``, also cancel running executions without grace.

        Safe to call from a signal handler on the worker's event loop.
        """
        if not self._stopping:
            self._stopping = True
            self._emit("stopping", detail="no new work; finishing or releasing current work")
        if self.report.stopped_by is None:
            self.report.stopped_by = "signal"
        if self._wake is not None:
            self._wake.set()
        if now and self._cancel_now is not None:
            self._cancel_now.set()

    async def serve(self) -> WorkerReport:
        """:meth:`run` with SIGTERM/SIGINT handlers: the first stops, the second cancels."""
        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT)

        def on_signal() -> None:
            self.stop(now=self._stopping)

        for sig in signals:
            loop.add_signal_handler(sig, on_signal)
        try:
            return await self.run()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)

    # -- the loop ------------------------------------------------------------------------------

    async def run(self) -> WorkerReport:
        """Claim and run executions until stopped, idle for ``idle_exit`` or ``max_plans`` ran
        (sharing one checkpointer connection, not one per execution)."""
        async with self.store.keep_checkpointer():
            return await self._run()

    async def _run(self) -> WorkerReport:
        options = self.options
        loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._cancel_now = asyncio.Event()
        started = 0
        idle_since: float | None = loop.time()
        self._emit("started", detail=f"store {self.store.uri}, concurrency {options.concurrency}")
        try:
            while not self._stopping:
                while (
                    not self._stopping
                    and len(self._running) < options.concurrency
                    and (options.max_plans is None or started < options.max_plans)
                ):
                    plan_id = await self._claim()
                    if plan_id is None:
                        break
                    if plan_id in self._running:
                        continue  # our own lease lapsed and we claimed it back: it still runs here
                    started += 1
                    self._running[plan_id] = asyncio.create_task(self._execute(plan_id))
                if self._running:
                    idle_since = None
                else:
                    if options.max_plans is not None and started >= options.max_plans:
                        self.report.stopped_by = "max_plans"
                        break
                    now = loop.time()
                    idle_since = now if idle_since is None else idle_since
                    if options.idle_exit is not None and now - idle_since >= options.idle_exit:
                        self.report.stopped_by = "idle"
                        break
                await self._wait(options.poll_interval)
        finally:
            await self._shutdown()
        self._emit("stopped", detail=self.report.stopped_by)
        return self.report

    async def _wait(self, timeout: float) -> None:
        """Until an execution finishes, :meth:`stop` is called, or ``timeout`` seconds pass."""
        assert self._wake is not None
        wake = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait(
                {wake, *self._running.values()},
                timeout=timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            wake.cancel()
        if not self._stopping:
            self._wake.clear()

    async def _claim(self) -> str | None:
        lease = self.client.settings.execution.lease_seconds
        try:
            plan_id = await asyncio.to_thread(self.store.claim, self.worker_id, lease)
        except StoreUnavailable as error:
            if not self._outage:
                self._emit("unavailable", detail=error.message)
            self._outage = True
            self.report.store_error = error.message
            return None
        if self._outage:
            self._emit("reconnected")
            self._outage = False
            self.report.store_error = None
        if plan_id is not None:
            self._emit("claimed", plan_id)
        return plan_id

    async def _execute(self, plan_id: str) -> None:
        """Run one claimed execution; every outcome is reported, none escapes but cancellation."""
        try:
            # Approval was checked when the plan was queued (enqueue_plan).
            result = await self.client.execute(plan_id, approve=True, on_tools=self._on_tools)
        except ExecutionBusy as error:
            self.report.lost.append(plan_id)
            self._emit("lost", plan_id, error.message)
        except StoreUnavailable as error:
            # Nothing can be written now; the lease expires and the execution is claimed again.
            # An outage like a failed claim's: the next successful claim reports the store back
            # (and clears the error, so a worker that recovered exits 0).
            self.report.store_error = error.message
            self._outage = True
            self._emit("unavailable", plan_id, error.message)
        except ToolsUnavailable as error:
            # This worker's setup lacks what the plan was made with (a module not installed
            # here): not the plan's fault. It goes back to the queue, saying why, for a worker
            # that has the tools; this one stops claiming (it would claim it again at once) and
            # exits 3, as on a store outage.
            await self._requeue(plan_id, error.message)
        except InvalidInput as error:
            # It cannot run here (e.g. a tool this worker lacks): fail it instead of letting
            # every worker claim it again forever.
            await self._fail(plan_id, error.message)
        except Exception as error:
            traceback.print_exc()
            await self._fail(plan_id, f"the worker crashed: {type(error).__name__}: {error}")
        else:
            self.report.finished[plan_id] = result.status
            self._emit("finished", plan_id, result.status)
        finally:
            self._running.pop(plan_id, None)

    def _on_tools(self, record: PlanRecord, sources: ToolSources) -> None:
        self._emit(
            "tools", record.plan_id, f"loading the tools recorded with it: {sources.describe()}"
        )

    async def _requeue(self, plan_id: str, message: str) -> None:
        self.report.setup_error = message
        self.report.released.append(plan_id)
        self._emit("released", plan_id, message)
        self.report.stopped_by = "setup"
        with contextlib.suppress(StoreUnavailable):
            # The reason is written while the lease is still ours, then the lease is given up:
            # `toolplan show` says why it waits, and the worker that finishes it clears it.
            await asyncio.to_thread(
                self.store.set_execution_status, plan_id, "running", error=message
            )
            await asyncio.to_thread(self.store.release, plan_id, self.worker_id)
        self.stop()

    async def _fail(self, plan_id: str, message: str) -> None:
        self.report.failed[plan_id] = message
        self._emit("failed", plan_id, message)
        with contextlib.suppress(StoreUnavailable):
            await asyncio.to_thread(
                self.store.set_execution_status,
                plan_id,
                "failed",
                error=message,
                finished_at=utc_now(),
            )
            await asyncio.to_thread(self.store.release, plan_id, self.worker_id)

    async def _shutdown(self) -> None:
        """Give running executions the grace period, then cancel and release the rest."""
        if not self._running:
            return
        assert self._cancel_now is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.shutdown_grace
        cancel_now = asyncio.ensure_future(self._cancel_now.wait())
        try:
            while self._running and not cancel_now.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                await asyncio.wait(
                    {cancel_now, *self._running.values()},
                    timeout=remaining,
                    return_when=asyncio.FIRST_COMPLETED,
                )
        finally:
            cancel_now.cancel()
        pending = dict(self._running)
        for task in pending.values():
            task.cancel()
        await asyncio.gather(*pending.values(), return_exceptions=True)
        for plan_id in pending:
            # The step that was running is recorded as running: the next worker calls it again
            # (same idempotency key); finished steps are kept.
            with contextlib.suppress(StoreUnavailable):
                await asyncio.to_thread(self.store.release, plan_id, self.worker_id)
            self.report.released.append(plan_id)
            self._emit("released", plan_id)

    def _emit(
        self, kind: WorkerEventKind, plan_id: str | None = None, detail: str | None = None
    ) -> None:
        if self.listener is not None:
            self._notify(WorkerEvent(kind, self.worker_id, plan_id, detail))
