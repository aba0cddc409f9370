"""``toolplan tools [NAME]``: the tools plans can use, or one of them in full."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from toolplan.cli import render
from toolplan.cli.options import JsonOption, McpOption, StoreOption, ToolsOption
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_client

__all__ = ["list_tools"]


def list_tools(
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="Show this tool in full instead of the list."),
    ] = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    tag: Annotated[
        str | None,
        typer.Option("--tag", metavar="TAG", help="Only tools with this capability tag."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the tools plans can use, with their arguments, tags and observed statistics; with
    NAME, show one tool in full."""

    def body() -> list[Any]:
        with new_client(store, tools, mcp=mcp, create_store=False) as client:
            return run_async(client.tools(tag=tag, name=name))

    infos = guard(body, as_json=as_json)
    if as_json:
        emit_json(infos[0].to_json() if name else {"tools": [info.to_json() for info in infos]})
    elif name:
        render.print_tool(stdout, infos[0])
    else:
        render.print_tools(stdout, infos)
