"""``toolplan cache ...``: the shared result cache of read-only tools, kept in the store."""

from __future__ import annotations

from typing import Annotated

import typer

from toolplan.cli.options import JsonOption, StoreOption
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_client

__all__ = ["cache_app"]

cache_app = typer.Typer(
    help="The shared result cache of read-only tools (kept in the store).", no_args_is_help=True
)


@cache_app.command("clear")
def cache_clear(
    store: StoreOption = None,
    tool: Annotated[
        str | None, typer.Option("--tool", help="Only this tool's cached results.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Empty the result cache (every tool's, or one tool's): the next calls run the tools."""

    def body() -> int:
        with new_client(store, None, create_store=False) as client:
            return run_async(client.clear_cache(tool=tool))

    removed = guard(body, as_json=as_json)
    if as_json:
        emit_json({"cleared": removed, "tool": tool})
        return
    which = f" of {tool}" if tool else ""
    stdout.print(f"cleared {removed} cached result(s){which}", highlight=False)
