"""``toolplan worker``: run queued executions; a thin layer over :mod:`toolplan.worker`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from toolplan.cli import (
    JsonOption,
    McpOption,
    StoreOption,
    ToolsOption,
    _emit_json,
    _guard,
    _run_async,
    _session,
    app,
    stderr,
)
from toolplan.errors import InvalidInput

if TYPE_CHECKING:
    from toolplan.worker import WorkerReport


@app.command()
def worker(
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Executions this process runs at once.")
    ] = 1,
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
) -> None:
    """Run queued executions (`toolplan execute PLAN_ID --enqueue`) until stopped.

    Start as many workers as you like, on as many machines as share the store. SIGTERM or Ctrl-C:
    stop claiming, let running executions finish for --grace seconds, then give the rest back to
    the queue (a second signal gives them back at once). Exit code 3 if the store was unreachable
    when the worker stopped.
    """
    from toolplan.worker import Worker, WorkerOptions

    def body() -> WorkerReport:
        try:
            options = WorkerOptions(
                concurrency=concurrency,
                poll_interval=poll_interval,
                idle_exit=0 if once else idle_exit,
                max_plans=max_plans,
                shutdown_grace=grace,
            )
        except ValueError as error:
            raise InvalidInput(str(error)) from None
        session = _session(store, tools, mcp=mcp)
        try:
            runner = Worker(
                session.store,
                session.catalog,
                execution=session.settings.execution,
                options=options,
                listener=lambda event: stderr.print(str(event), highlight=False),
                settings=session.settings,
            )
            report = _run_async(runner.serve())
        finally:
            session.close()
        report.check()
        return report

    report = _guard(body, as_json=as_json)
    if as_json:
        _emit_json(report.to_json())
