"""``toolplan show ID``: a plan with its latest execution, or a request with its plans."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from toolplan.cli import render
from toolplan.cli.options import JsonOption, StoreOption
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_client
from toolplan.errors import InvalidInput
from toolplan.store.lookup import latest_plan_id

if TYPE_CHECKING:
    from toolplan.client import AsyncToolplan

__all__ = ["show"]


def show(
    identifier: Annotated[
        str | None,
        typer.Argument(
            metavar="ID",
            help="A plan ID (plan_...) or request ID (req_...); or --last instead.",
        ),
    ] = None,
    last: Annotated[
        bool,
        typer.Option(
            "--last",
            help="The newest plan in the store (the first line of `toolplan list`) instead of "
            "an ID.",
        ),
    ] = False,
    store: StoreOption = None,
    graph: Annotated[
        Literal["mermaid", "dot"] | None,
        typer.Option(
            "--graph",
            metavar="mermaid|dot",
            help="Print the plan's DAG with each step's state instead: Mermaid (GitHub renders "
            "it in Markdown) or Graphviz DOT. Needs a plan ID (or --last).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print a plan with its latest execution, or a request with its plans (the newest plan
    with --last)."""

    def chosen(client: AsyncToolplan) -> str:
        if last == (identifier is not None):
            raise InvalidInput(
                "name one plan or request: an ID (toolplan show plan_...) or --last "
                "(the newest plan), not both"
                if last
                else "name a plan or request ID (plan_... or req_..., see toolplan list), or "
                "--last for the newest plan"
            )
        return latest_plan_id(client.store) if last else str(identifier)

    if graph is not None:

        def drawn() -> tuple[str, str]:
            with new_client(store, None, create_store=False) as client:
                plan_id = chosen(client)
                return plan_id, run_async(client.diagram(plan_id, kind=graph))

        plan_id, text = guard(drawn, as_json=as_json)
        if as_json:
            emit_json({"planId": plan_id, "format": graph, "graph": text})
        else:
            stdout.out(text, end="", highlight=False)
        return

    def body() -> dict[str, Any]:
        with new_client(store, None, create_store=False) as client:
            return run_async(client.show(chosen(client)))

    data = guard(body, as_json=as_json)
    if as_json:
        emit_json(data)
        return
    render.print_described(stdout, data)
