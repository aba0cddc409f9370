"""``toolplan worker --temporal``: a Temporal worker for plan workflows and their activities.

Start any number, on any number of machines, pointed at the same Temporal namespace and task
queue and the same toolplan store, with the same tool modules. Temporal hands each workflow task
and each step's activity to one of them; a worker that dies stops heartbeating, and its running
steps are retried on another worker after the heartbeat timeout, with the same idempotency key.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from toolplan.config import Settings, TemporalSettings
from toolplan.runs.context import new_worker_id
from toolplan.store.protocol import Store
from toolplan.temporal.activities import PlanActivities
from toolplan.temporal.client import connect, temporal_errors
from toolplan.temporal.workflow import PlanWorkflow
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "HEARTBEAT_THROTTLE_SECONDS",
    "TemporalWorkerReport",
    "build_worker",
    "run_temporal_worker",
]

HEARTBEAT_THROTTLE_SECONDS = 1.0
"""Most seconds between two heartbeats a running step sends to Temporal: how late it can learn
that its workflow was cancelled."""


@dataclass
class TemporalWorkerReport:
    """What ``toolplan worker --temporal --json`` prints."""

    worker_id: str
    address: str
    namespace: str
    task_queue: str
    stopped_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON form."""
        return {
            "workerId": self.worker_id,
            "backend": "temporal",
            "temporalAddress": self.address,
            "namespace": self.namespace,
            "taskQueue": self.task_queue,
            "stoppedBy": self.stopped_by,
        }


class _ExpectedFailures(logging.Filter):
    """A tool's failure is the step's, recorded in the store: log it on one line, without the
    SDK's traceback (which is for bugs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], ApplicationError):
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {error.type}: {error.message}"
            record.args = ()
            record.exc_info = None
        return True


def _quiet_expected_failures() -> None:
    logging.getLogger("temporalio.activity").addFilter(_ExpectedFailures())


def build_worker(
    client: Client,
    settings: TemporalSettings,
    store: Store,
    catalog: ToolCatalog,
    *,
    concurrency: int,
    grace: float = 10.0,
    identity: str | None = None,
    tool_settings: Settings | None = None,
) -> Worker:
    """A Temporal worker for plan workflows and their activities on ``settings.task_queue``.

    With ``tool_settings`` choosing no tools, each plan runs with the tools recorded with it."""
    activities = PlanActivities(store, catalog, tool_settings)
    # toolplan's own modules are deterministic where the workflow uses them (the scheduler) and
    # import LangChain elsewhere: pass them through instead of re-importing them per workflow.
    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("toolplan")
    )
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[PlanWorkflow],
        activities=activities.definitions(),
        workflow_runner=runner,
        max_concurrent_activities=concurrency,
        graceful_shutdown_timeout=timedelta(seconds=grace),
        # A dead worker's cached workflows move to another worker as soon as its steps do.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=settings.heartbeat_seconds),
        # A cancelled workflow's running steps learn it from a heartbeat's response; the SDK
        # sends one at most every 80% of the heartbeat timeout (8 s by default), which made a
        # cancel take ~7.7 s. One heartbeat per running step per second bounds it by ~1 s.
        max_heartbeat_throttle_interval=timedelta(seconds=HEARTBEAT_THROTTLE_SECONDS),
        identity=identity,
    )


async def run_temporal_worker(
    settings: TemporalSettings,
    store: Store,
    catalog: ToolCatalog,
    *,
    concurrency: int,
    grace: float,
    on_started: Callable[[str], None] | None = None,
    tool_settings: Settings | None = None,
) -> TemporalWorkerReport:
    """Serve plan workflows and step activities until SIGTERM/SIGINT.

    ``concurrency`` caps the steps (activities) this process runs at once. On the first signal
    the worker stops polling and gives running steps ``grace`` seconds to finish; Temporal retries
    the others on another worker. Raises :class:`~toolplan.errors.TemporalUnavailable` when the
    server cannot be reached at start.
    """
    assert settings.address is not None
    report = TemporalWorkerReport(
        new_worker_id(), settings.address, settings.namespace, settings.task_queue
    )
    _quiet_expected_failures()
    client = await connect(settings)
    worker = build_worker(
        client,
        settings,
        store,
        catalog,
        concurrency=concurrency,
        grace=grace,
        identity=report.worker_id,
        tool_settings=tool_settings,
    )
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)

    shutdowns: list[asyncio.Task[None]] = []

    def stop() -> None:
        report.stopped_by = "signal"
        if not shutdowns:
            shutdowns.append(loop.create_task(worker.shutdown()))

    for sig in signals:
        loop.add_signal_handler(sig, stop)
    try:
        if on_started is not None:
            on_started(report.worker_id)
        with temporal_errors(settings):
            await worker.run()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
    return report
