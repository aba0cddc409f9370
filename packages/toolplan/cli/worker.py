"""``toolplan worker``: run queued executions; a thin layer over :mod:`toolplan.adapters.queue_worker`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from toolplan.cli.options import (
    JsonOption,
    McpOption,
    StoreOption,
    TemporalAddressOption,
    ToolsOption,
)
from toolplan.cli.output import emit_json, guard, run_async, stderr
from toolplan.cli.session import new_client
from toolplan.errors import InvalidInput

if TYPE_CHECKING:
    from toolplan.adapters.queue_worker import WorkerReport
    from toolplan.client import AsyncToolplan
    from toolplan.temporal.worker import TemporalWorkerReport

__all__ = ["worker"]

TEMPORAL_CONCURRENCY = 10
"""Steps a Temporal worker runs at once unless --concurrency says otherwise."""


def worker(
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            min=1,
            help="Executions this process runs at once (default 1); with --temporal, steps "
            f"(default {TEMPORAL_CONCURRENCY}).",
        ),
    ] = None,
    poll_interval: Annotated[
        float,
        typer.Option("--poll-interval", min=0.01, help="Seconds between polls of an empty queue."),
    ] = 1.0,
    idle_exit: Annotated[
        float | None,
        typer.Option(
            "--idle-exit", min=0, help="Exit after this many seconds with nothing to run."
        ),
    ] = None,
    max_plans: Annotated[
        int | None,
        typer.Option("--max-plans", min=1, help="Exit after running this many executions."),
    ] = None,
    once: Annotated[
        bool, typer.Option("--once", help="Drain the queue, then exit (same as --idle-exit 0).")
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            "--grace", min=0, help="On SIGTERM, seconds running executions get to finish."
        ),
    ] = 10.0,
    as_json: JsonOption = False,
    temporal: Annotated[
        bool,
        typer.Option(
            "--temporal",
            help="Be a Temporal worker: run plan workflows and their steps from the Temporal "
            "task queue ($TOOLPLAN_TEMPORAL_ADDRESS or --temporal-address).",
        ),
    ] = False,
    temporal_address: TemporalAddressOption = None,
) -> None:
    """Run queued executions (`toolplan execute PLAN_ID --enqueue`) until stopped.

    Start as many workers as you like, on as many machines as share the store. SIGTERM or Ctrl-C:
    stop claiming, let running executions finish for --grace seconds, then give the rest back to
    the queue (a second signal gives them back at once). Exit code 3 if the store was unreachable
    when the worker stopped.

    With --temporal, the worker serves plan workflows and step activities from Temporal instead
    of the store's lease queue, until SIGTERM or Ctrl-C (running steps get --grace seconds, then
    Temporal retries them elsewhere). Exit code 3 if the Temporal server cannot be reached.
    """
    from toolplan.adapters.queue_worker import Worker, WorkerOptions

    if temporal:
        refused = [
            flag
            for flag, given in (
                ("--idle-exit", idle_exit is not None),
                ("--max-plans", max_plans is not None),
                ("--once", once),
            )
            if given
        ]
        report_t = guard(
            lambda: _temporal_worker(
                new_client(store, tools, mcp=mcp, temporal_address=temporal_address),
                refused,
                concurrency=concurrency or TEMPORAL_CONCURRENCY,
                grace=grace,
            ),
            as_json=as_json,
        )
        if as_json:
            emit_json(report_t.to_json())
        return

    def body() -> WorkerReport:
        try:
            options = WorkerOptions(
                concurrency=concurrency or 1,
                poll_interval=poll_interval,
                idle_exit=0 if once else idle_exit,
                max_plans=max_plans,
                shutdown_grace=grace,
            )
        except ValueError as error:
            raise InvalidInput(str(error)) from None
        with new_client(store, tools, mcp=mcp) as client:
            runner = Worker(
                client,
                options=options,
                listener=lambda event: stderr.print(str(event), highlight=False),
            )
            report = run_async(runner.serve())
        report.check()
        return report

    report = guard(body, as_json=as_json)
    if as_json:
        emit_json(report.to_json())


def _temporal_worker(
    client: AsyncToolplan, refused: list[str], *, concurrency: int, grace: float
) -> TemporalWorkerReport:
    """``toolplan worker --temporal``: serve until a signal stops it."""
    settings = client.settings.temporal
    if refused:
        raise InvalidInput(
            f"{', '.join(refused)} apply to the store's lease queue, not to --temporal workers "
            "(a Temporal worker serves until SIGTERM or Ctrl-C)"
        )
    if not settings.enabled:
        raise InvalidInput(
            "--temporal needs the Temporal server's address: set TOOLPLAN_TEMPORAL_ADDRESS or "
            "pass --temporal-address host:port"
        )
    from toolplan.temporal.worker import run_temporal_worker

    def started(worker_id: str) -> None:
        stderr.print(
            f"worker {worker_id}: started: temporal {settings.address} namespace "
            f"{settings.namespace} task queue {settings.task_queue}, store {client.store.uri}, "
            f"{concurrency} steps at once",
            highlight=False,
        )

    try:
        report = run_async(
            run_temporal_worker(
                settings,
                client.store,
                client.catalog,
                concurrency=concurrency,
                grace=grace,
                on_started=started,
                tool_settings=client.settings,
            )
        )
    finally:
        client.close()
    stderr.print(f"worker {report.worker_id}: stopped: {report.stopped_by}", highlight=False)
    return report
