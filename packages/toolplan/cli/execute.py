"""``toolplan execute PLAN_ID``: run a stored plan, resume it, or queue it for workers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from toolplan.cli.options import (
    ConcurrencyOption,
    FailFastOption,
    JsonOption,
    McpOption,
    NoCacheOption,
    StoreOption,
    TemporalAddressOption,
    ToolsOption,
    YesOption,
)
from toolplan.cli.output import emit_json, finish_execution, guard, run_async, stderr, stdout
from toolplan.cli.session import Session, new_session, shown_store_uri
from toolplan.service import operations

__all__ = ["execute"]


def execute(
    plan_id: Annotated[
        str, typer.Argument(metavar="PLAN_ID", help="The plan to run or resume (plan_...).")
    ],
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    concurrency: ConcurrencyOption = None,
    fail_fast: FailFastOption = False,
    no_cache: NoCacheOption = False,
    yes: YesOption = False,
    as_json: JsonOption = False,
    enqueue: Annotated[
        bool,
        typer.Option(
            "--enqueue",
            help="Queue it for `toolplan worker` processes (Temporal workers with "
            "--temporal-address) instead of waiting for it.",
        ),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue a cancelled execution: its finished steps are kept, the rest run.",
        ),
    ] = False,
    temporal_address: TemporalAddressOption = None,
) -> None:
    """Run a stored plan, or resume it after a crash. A finished plan prints its stored result.

    With a Temporal address the plan runs as a Temporal workflow on `toolplan worker --temporal`
    processes, and this command waits for it (or only queues it, with --enqueue).
    """

    def open_session() -> Session:
        return new_session(
            store,
            tools,
            concurrency=concurrency,
            fail_fast=fail_fast or None,
            mcp=mcp,
            no_cache=no_cache,
            temporal_address=temporal_address,
        )

    if enqueue:
        _enqueue(plan_id, open_session, yes=yes, as_json=as_json, resume=resume)
        return

    def body() -> operations.ExecutionResult:
        session = open_session()
        try:
            finished = operations.finished_status(session.store, plan_id)
            if finished == "cancelled" and resume:
                session.use_plan_tools(plan_id)  # it runs again: with the tools it was made with
            elif finished is not None:
                stderr.print(
                    f"{plan_id} already finished ({finished}): this is its stored result; "
                    "no tool was called (submit the plan again to run it anew)",
                    highlight=False,
                )
            else:
                session.use_plan_tools(plan_id)
            return run_async(
                operations.execute_stored_plan(
                    plan_id, session.context(as_json=as_json), approve=yes, resume=resume
                )
            )
        finally:
            session.close()

    finish_execution(
        guard(body, as_json=as_json, plan_id=lambda: plan_id),
        as_json=as_json,
        store_uri=shown_store_uri(store),
    )


def _enqueue(
    plan_id: str,
    open_session: Callable[[], Session],
    *,
    yes: bool,
    as_json: bool,
    resume: bool,
) -> None:
    def body() -> tuple[Any, str]:
        session = open_session()
        try:
            if session.settings.temporal.enabled:
                session.use_plan_tools(plan_id)
                record = run_async(
                    operations.enqueue_execution(
                        plan_id, session.context(as_json=True), approve=yes, resume=resume
                    )
                )
                return record, f"on Temporal ({session.settings.temporal.address})"
            from toolplan.service.queue_worker import enqueue_plan

            record = enqueue_plan(session.store, plan_id, approve=yes, resume=resume)
            return record, f"in {shown_store_uri(session.settings.store_uri)}"
        finally:
            session.close()

    record, where = guard(body, as_json=as_json)
    if as_json:
        emit_json({"planId": record.plan_id, "status": record.status})
    elif record.status == "queued":
        stdout.print(f"queued {record.plan_id} {where}; a `toolplan worker` will run it")
    else:
        stdout.print(
            f"{record.plan_id} is {record.status}, not queued again; see: toolplan show {record.plan_id}"
        )
