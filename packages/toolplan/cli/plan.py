"""``toolplan plan QUERY``: plan a query with the LLM, validate and store it; nothing runs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from toolplan.cli import render
from toolplan.cli.options import (
    JsonOption,
    MaxRepairsOption,
    MaxStepsOption,
    McpOption,
    ModelOption,
    RequestIdOption,
    StoreOption,
    ThresholdOption,
    ToolsOption,
)
from toolplan.cli.output import emit_json, guard, run_async, stdout
from toolplan.cli.session import new_session, planner_context
from toolplan.plans.limits import check_text

__all__ = ["plan"]


def plan(
    query_text: Annotated[
        str, typer.Argument(metavar="QUERY", help="What to do, in natural language.")
    ],
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    model: ModelOption = None,
    request_id: RequestIdOption = None,
    max_steps: MaxStepsOption = None,
    max_repairs: MaxRepairsOption = None,
    confidence_threshold: ThresholdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Plan a query with the LLM (one call, plus bounded repairs), validate and store it."""

    def body() -> Any:
        from toolplan.planning.planner import create_plan

        session = new_session(store, tools, max_steps=max_steps, mcp=mcp)
        try:
            check_text(query_text, "the query", session.settings.limits)
            planner = planner_context(
                session, model, max_repairs, confidence_threshold, as_json=as_json
            )
            return run_async(create_plan(query_text, planner, request_id=request_id))
        finally:
            session.close()

    outcome = guard(body, as_json=as_json)
    if as_json:
        emit_json(outcome.to_json())
        return
    render.print_plan(stdout, outcome.plan, outcome.analysis)
    if outcome.plan.get("reasoning"):
        stdout.print(f"reasoning: {outcome.plan['reasoning']}", highlight=False)
    usage = outcome.usage
    stdout.print(
        f"stored [bold]{outcome.ref.plan_id}[/] (request {outcome.ref.request_id}), status "
        f"{outcome.ref.status}; {outcome.llm_calls} LLM call(s), {usage['inputTokens']} input / "
        f"{usage['outputTokens']} output tokens, {outcome.planning_ms:.0f} ms"
    )
    estimate = outcome.ref.estimate.to_json() if outcome.ref.estimate else None
    stdout.print(f"estimate: {render.estimate_text(estimate)}", highlight=False)
    if outcome.ref.status == "needs_review":
        stdout.print(
            f"[yellow]needs review:[/] low planner confidence; run it with "
            f"`toolplan execute {outcome.ref.plan_id} --yes`"
        )
    else:
        stdout.print(f"run it with: toolplan execute {outcome.ref.plan_id}")
