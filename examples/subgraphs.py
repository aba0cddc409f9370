"""toolplan's planner and executor graphs as subgraphs of your own LangGraph graph.

Your graph adds the compiled graphs as nodes and passes one runtime context that carries what
both read: ``planner`` (a :class:`~toolplan.planning.context.PlannerContext`) and ``execution``
(an :class:`~toolplan.runs.context.ExecutionContext`). The state keys they share with your
graph (``query``, ``plan_id``, ``status``, ``outputs``, ...) flow between them; add your own
nodes before, between or after. Build both contexts from one client::

    async with AsyncToolplan.from_env(tools=["blog"], model="openai:gpt-4.1-mini") as tp:
        context = AppContext(planner=tp.planner_context(), execution=tp.execution_context())
        async for namespace, event in build_app().astream(
            {"query": "..."}, context=context, stream_mode="custom", subgraphs=True
        ):
            print(namespace, event)  # planning progress, then one event per step transition

``tests/unit/test_subgraphs_example.py`` runs this file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from toolplan.pipeline.planning import build_planner_graph
from toolplan.planning.context import PlannerContext
from toolplan.runs.context import ExecutionContext
from toolplan.runs.graph import build_execution_graph


class AppState(TypedDict, total=False):
    """Your graph's state: the keys it shares with the planner and executor, and your own."""

    query: str
    plan_id: str
    status: str
    """The planner's (``planned``, ``needs_review``, ``invalid``), then the execution's."""
    steps: list[dict[str, Any]]
    outputs: dict[str, Any]
    summary: str
    """Written by this graph's own last node."""


@dataclass(frozen=True)
class AppContext:
    """One runtime context for both subgraphs: each reads its own attribute."""

    planner: PlannerContext
    execution: ExecutionContext


def _after_planning(state: AppState) -> str:
    # Only a validated, confident plan runs; the others end here for a person to look at.
    return "execute" if state.get("status") == "planned" else END


def summarize(state: AppState) -> AppState:
    """Your own node after the executor: here, one line about the run."""
    return {"summary": f"{state['plan_id']}: {state['status']}, outputs {sorted(state['outputs'])}"}


def build_app() -> Any:
    """plan (the planner graph, which stores the plan it made) → execute (the executor graph) → summarize (yours)."""
    builder = StateGraph(AppState, context_schema=AppContext)
    builder.add_node("plan", build_planner_graph().compile())
    builder.add_node("execute", build_execution_graph().compile())
    builder.add_node("summarize", summarize)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", _after_planning, ["execute", END])
    builder.add_edge("execute", "summarize")
    builder.add_edge("summarize", END)
    return builder.compile()
