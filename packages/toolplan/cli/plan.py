"""``toolplan plan QUERY``: plan a query with the LLM, validate and store it; nothing runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

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
from toolplan.cli.session import new_client, planning_progress

if TYPE_CHECKING:
    from toolplan.pipeline.planning import PlanningOutcome

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

    def body() -> PlanningOutcome:
        with new_client(store, tools, max_steps=max_steps, mcp=mcp, model=model) as client:
            return run_async(
                client.plan(
                    query_text,
                    request_id=request_id,
                    max_repairs=max_repairs,
                    confidence_threshold=confidence_threshold,
                    on_planning=planning_progress(as_json),
                )
            )

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
