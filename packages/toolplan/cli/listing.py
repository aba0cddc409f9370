"""``toolplan list``: recent plans, newest first, with their status, request, query, age and
duration; filtered by status and request, paged by cursor."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from toolplan.cli import render
from toolplan.cli.options import JsonOption, StoreOption
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_client

__all__ = ["list_plans"]


def list_plans(
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="Only plans in this state: the execution's status (queued, running, "
            "waiting, succeeded, partial, failed, cancelled), or planned / needs_review for plans "
            "never executed.",
        ),
    ] = None,
    request: Annotated[
        str | None,
        typer.Option("--request", metavar="REQ_ID", help="Only the plan versions of a request."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", help="At most N plans (1-500, default 20).")
    ] = 20,
    after: Annotated[
        str | None,
        typer.Option(
            "--after", metavar="CURSOR", help="The next page: the cursor the last page printed."
        ),
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """List stored plans, newest first.

    Each with its status (the execution's, or the plan's when never executed), request, query,
    age and duration. With --json, one object: {"plans": [...], "nextCursor": ...}. Exit code 0,
    2 for bad input or a store that does not exist, 3 when the store is unreachable.
    """

    def body() -> dict[str, Any]:
        from toolplan.service.listing import page_json

        with new_client(store, None, create_store=False) as client:
            page = run_async(
                client.list_plans(status=status, request_id=request, limit=limit, after=after)
            )
            return page_json(page)

    data = guard(body, as_json=as_json)
    if as_json:
        emit_json(data)
        return
    render.print_plan_list(stdout, data["plans"], data["nextCursor"])
