"""``toolplan cancel PLAN_ID``: cancel a plan's execution from any process that reaches the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from toolplan.cli.options import JsonOption, StoreOption
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_client

if TYPE_CHECKING:
    from toolplan.engine.result import ExecutionResult

__all__ = ["cancel"]


def cancel(
    plan_id: Annotated[str, typer.Argument(help="The plan whose execution to cancel (plan_...).")],
    store: StoreOption = None,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            min=0,
            help="Seconds to wait for a running execution to end (default 10; 0: do not wait).",
        ),
    ] = 10.0,
    as_json: JsonOption = False,
) -> None:
    """Cancel a plan's execution, wherever it runs.

    Works from any process that reaches the store: the plan may run here, in another
    `toolplan execute`, a worker or the API server. Running tool calls are cancelled; they and the steps not started yet are recorded as
    cancelled, finished steps are kept. Idempotent; a finished plan is left as it is. Exit
    code 0 unless the plan is unknown (2) or the store is unreachable (3).
    """

    def body() -> ExecutionResult:
        with new_client(store, None, create_store=False) as client:
            return run_async(client.cancel(plan_id, wait=wait))

    result = guard(body, as_json=as_json)
    if as_json:
        emit_json(result.to_json())
        return
    if result.status == "cancelled":
        cancelled = sum(1 for step in result.steps if step.status == "cancelled")
        kept = sum(1 for step in result.steps if step.status != "cancelled")
        stdout.print(
            f"plan {result.plan_id} is cancelled: {cancelled} step(s) cancelled, {kept} finished "
            f"step(s) kept; continue it with: toolplan execute {result.plan_id} --resume"
        )
    elif result.finished:
        stdout.print(
            f"plan {result.plan_id} had already finished ({result.status}); nothing was cancelled"
        )
    else:
        stdout.print(
            f"cancel of {result.plan_id} requested; it is still {result.status}: its executor "
            f"ends it as soon as it notices — see: toolplan show {result.plan_id}"
        )
