"""``toolplan deny PLAN_ID STEP_ID --reason TEXT``: deny a step waiting for a person; its
dependents are skipped and the execution continues here, or on workers with ``--enqueue``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from toolplan.cli.options import (
    ByOption,
    ConcurrencyOption,
    JsonOption,
    McpOption,
    StoreOption,
    ToolsOption,
)
from toolplan.cli.output import finish_decision, guard, run_async
from toolplan.cli.session import new_client, progress, say_recorded_tools, shown_store_uri

if TYPE_CHECKING:
    from toolplan.engine.result import ExecutionResult

__all__ = ["deny"]


def deny(
    plan_id: Annotated[
        str, typer.Argument(metavar="PLAN_ID", help="The plan whose step waits (plan_...).")
    ],
    step_id: Annotated[str, typer.Argument(metavar="STEP_ID", help="The step to deny.")],
    reason: Annotated[
        str,
        typer.Option(
            "--reason", metavar="TEXT", help="Why (stored, shown, and read by the agent's replan)."
        ),
    ],
    by: ByOption = None,
    enqueue: Annotated[
        bool,
        typer.Option(
            "--enqueue",
            help="Record the denial and hand the execution to `toolplan worker` processes "
            "instead of continuing it here.",
        ),
    ] = False,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    concurrency: ConcurrencyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deny a step waiting for approval: it becomes denied with the reason, its dependents are
    skipped, and the execution continues. A step not waiting, or a finished plan, changes
    nothing (exit 2)."""
    shown: list[str] = []

    def body() -> ExecutionResult:
        with new_client(
            store, tools, concurrency=concurrency, mcp=mcp, create_store=False
        ) as client:
            shown.append(shown_store_uri(client.store_uri))
            return run_async(
                client.deny(
                    plan_id,
                    step_id,
                    reason,
                    by=by,
                    enqueue=enqueue,
                    on_event=progress(as_json),
                    on_tools=say_recorded_tools,
                )
            )

    result = guard(body, as_json=as_json, plan_id=lambda: plan_id)
    finish_decision(result, as_json=as_json, store_uri=shown[0])
