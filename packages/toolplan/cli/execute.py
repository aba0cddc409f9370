"""``toolplan execute PLAN_ID``: run a stored plan, resume it, or queue it for workers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from toolplan.cli.options import (
    ApproveAllOption,
    ConcurrencyOption,
    FailFastOption,
    JsonOption,
    McpOption,
    NoCacheOption,
    NoInputOption,
    StoreOption,
    TemporalAddressOption,
    ToolsOption,
    YesOption,
)
from toolplan.cli.output import emit_json, finish_execution, guard, run_async, stderr, stdout
from toolplan.cli.session import (
    approval_prompt,
    new_client,
    progress,
    say_recorded_tools,
    shown_store_uri,
)

if TYPE_CHECKING:
    from toolplan.client import AsyncToolplan
    from toolplan.engine.result import ExecutionResult
    from toolplan.store.protocol import ExecutionRecord

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
    approve_all: ApproveAllOption = False,
    no_input: NoInputOption = False,
) -> None:
    """Run a stored plan, or resume it after a crash. A finished plan prints its stored result.

    A step that needs a person's approval waits: asked on the terminal, or the command exits 4
    saying how to approve or deny it (toolplan approve / deny).

    With a Temporal address the plan runs as a Temporal workflow on `toolplan worker --temporal`
    processes, and this command waits for it (or only queues it, with --enqueue).
    """

    def open_client() -> AsyncToolplan:
        return new_client(
            store,
            tools,
            concurrency=concurrency,
            fail_fast=fail_fast or None,
            mcp=mcp,
            no_cache=no_cache,
            temporal_address=temporal_address,
            approve_all=approve_all,
            create_store=False,  # it runs a stored plan: no store, nothing to run
        )

    if enqueue:
        _enqueue(plan_id, open_client, yes=yes, as_json=as_json, resume=resume)
        return
    shown: list[str] = []

    ask = approval_prompt(no_input=no_input, as_json=as_json)

    async def executed(client: AsyncToolplan) -> ExecutionResult:
        result = await client.execute(
            plan_id,
            approve=yes,
            resume=resume,
            on_event=progress(as_json),
            on_tools=say_recorded_tools,
        )
        if ask is not None:
            result = await client.ask(result, ask, on_event=progress(as_json))
        return result

    def body() -> ExecutionResult:
        with open_client() as client:
            shown.append(shown_store_uri(client.store_uri))
            result = run_async(executed(client))
        if result.stored:
            stderr.print(
                f"{plan_id} already finished ({result.status}): this is its stored result; "
                "no tool was called (submit the plan again to run it anew)",
                highlight=False,
            )
        return result

    result = guard(body, as_json=as_json, plan_id=lambda: plan_id)
    finish_execution(result, as_json=as_json, store_uri=shown[0])


def _enqueue(
    plan_id: str,
    open_client: Callable[[], AsyncToolplan],
    *,
    yes: bool,
    as_json: bool,
    resume: bool,
) -> None:
    def body() -> tuple[ExecutionRecord, str]:
        with open_client() as client:
            record = run_async(
                client.enqueue(plan_id, approve=yes, resume=resume, on_tools=say_recorded_tools)
            )
            temporal = client.settings.temporal
            if temporal.enabled:
                return record, f"on Temporal ({temporal.address})"
            return record, f"in {shown_store_uri(client.store_uri)}"

    record, where = guard(body, as_json=as_json)
    if as_json:
        emit_json({"planId": record.plan_id, "status": record.status})
    elif record.status == "queued":
        stdout.print(f"queued {record.plan_id} {where}; a `toolplan worker` will run it")
    else:
        stdout.print(
            f"{record.plan_id} is {record.status}, not queued again; see: toolplan show {record.plan_id}"
        )
