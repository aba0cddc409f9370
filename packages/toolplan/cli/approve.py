"""``toolplan approve PLAN_ID [STEP_ID ...]``: approve steps waiting for a person and continue
the execution here (as ``toolplan execute`` does), or on workers with ``--enqueue``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from toolplan.cli.options import (
    ByOption,
    ConcurrencyOption,
    JsonOption,
    McpOption,
    NoInputOption,
    StoreOption,
    ToolsOption,
)
from toolplan.cli.output import finish_decision, guard, run_async
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

__all__ = ["approve"]

_EnqueueOption = Annotated[
    bool,
    typer.Option(
        "--enqueue",
        help="Record the decision and hand the execution to `toolplan worker` processes "
        "instead of continuing it here.",
    ),
]


def approve(
    plan_id: Annotated[
        str, typer.Argument(metavar="PLAN_ID", help="The plan whose steps wait (plan_...).")
    ],
    step_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[STEP_ID]...", help="The steps to approve (default: every waiting step)."
        ),
    ] = None,
    by: ByOption = None,
    enqueue: _EnqueueOption = False,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    concurrency: ConcurrencyOption = None,
    no_input: NoInputOption = False,
    as_json: JsonOption = False,
) -> None:
    """Approve steps waiting for approval, each for exactly the arguments it waits with, and
    continue the execution. A step not waiting, or a finished plan, changes nothing (exit 2)."""
    ask = approval_prompt(no_input=no_input, as_json=as_json)
    shown: list[str] = []

    async def approved(client: AsyncToolplan) -> ExecutionResult:
        result = await client.approve(
            plan_id,
            step_ids or None,
            by=by,
            enqueue=enqueue,
            on_event=progress(as_json),
            on_tools=say_recorded_tools,
        )
        if ask is not None and not enqueue:
            result = await client.ask(result, ask, by=by, on_event=progress(as_json))
        return result

    def body() -> ExecutionResult:
        with new_client(
            store, tools, concurrency=concurrency, mcp=mcp, create_store=False
        ) as client:
            shown.append(shown_store_uri(client.store_uri))
            return run_async(approved(client))

    result = guard(body, as_json=as_json, plan_id=lambda: plan_id)
    finish_decision(result, as_json=as_json, store_uri=shown[0])
