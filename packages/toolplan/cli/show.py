"""``toolplan show ID``: a plan with its latest execution, or a request with its plans."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import typer

from toolplan.cli import render
from toolplan.cli.options import JsonOption, StoreOption
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_client

__all__ = ["show"]


def show(
    identifier: Annotated[
        str,
        typer.Argument(metavar="ID", help="A plan ID (plan_...) or request ID (req_...)."),
    ],
    store: StoreOption = None,
    graph: Annotated[
        Literal["mermaid", "dot"] | None,
        typer.Option(
            "--graph",
            metavar="mermaid|dot",
            help="Print the plan's DAG with each step's state instead: Mermaid (GitHub renders "
            "it in Markdown) or Graphviz DOT. Needs a plan ID.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print a plan with its latest execution, or a request with its plans."""
    if graph is not None:

        def drawn() -> str:
            with new_client(store, None, create_store=False) as client:
                return run_async(client.diagram(identifier, kind=graph))

        text = guard(drawn, as_json=as_json)
        if as_json:
            emit_json({"planId": identifier, "format": graph, "graph": text})
        else:
            stdout.out(text, end="", highlight=False)
        return

    def body() -> dict[str, Any]:
        with new_client(store, None, create_store=False) as client:
            return run_async(client.show(identifier))

    data = guard(body, as_json=as_json)
    if as_json:
        emit_json(data)
        return
    render.print_described(stdout, data)
