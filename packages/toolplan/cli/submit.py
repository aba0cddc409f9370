"""``toolplan submit --file PLAN.json``: validate a plan and store it; nothing runs."""

from __future__ import annotations

from toolplan.cli import render
from toolplan.cli.options import (
    FileOption,
    JsonOption,
    MaxStepsOption,
    McpOption,
    QueryOption,
    StoreOption,
    ToolsOption,
)
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_client
from toolplan.errors import InvalidInput

__all__ = ["submit"]


def submit(
    file: FileOption = None,
    query: QueryOption = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    max_steps: MaxStepsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Validate a plan file and store it; prints its request and plan IDs. Nothing runs."""

    def body() -> None:
        if file is None:
            raise InvalidInput("give the plan with --file PLAN.json")
        with new_client(store, tools, max_steps=max_steps, mcp=mcp) as client:
            ref = run_async(client.submit(file, query=query))
            uri = client.store.uri
        if as_json:
            emit_json(ref.to_json())
        else:
            stdout.print(f"stored plan [bold]{ref.plan_id}[/] (request {ref.request_id}) in {uri}")
            estimate = ref.estimate.to_json() if ref.estimate else None
            stdout.print(f"estimate: {render.estimate_text(estimate)}", highlight=False)
            stdout.print(f"run it with: toolplan execute {ref.plan_id}")

    guard(body, as_json=as_json)
