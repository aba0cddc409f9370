"""The planning graph (LangGraph StateGraph):

    select_tools (LLM) → analyze_dependencies ─┬─ valid ──────────► persist → END
                ▲                              ├─ invalid, repairs left ─┘ (back to select_tools)
                └──────────────────────────────┘  invalid, none left ─► END (status "invalid")

The model writes the whole plan in one structured-output call. The dependency-analysis node is the
engine's validator (:func:`toolplan.analysis.analyze`). Invalid plans are never stored.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from toolplan.analysis import DEFAULT_MAX_STEPS, analyze
from toolplan.config import PlannerSettings, Settings, StructuredMethod, register_cache
from toolplan.errors import PlanInvalid
from toolplan.operations import submit_plan
from toolplan.plan import parse_plan
from toolplan.planning.model import llm_errors
from toolplan.planning.prompts import Prompt, load_prompt, prompts_dir, render_catalog
from toolplan.planning.schema import LLMPlan, to_plan_data
from toolplan.store.protocol import Store
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "PLANNER_CONTEXT_KEY",
    "PlannerContext",
    "PlanningInput",
    "PlanningState",
    "build_planning_graph",
]

PLANNER_CONTEXT_KEY = "toolplan_planner"
"""Key in ``config["configurable"]`` holding the :class:`PlannerContext`."""


@dataclass
class PlannerContext:
    """What the planning nodes need."""

    store: Store
    catalog: ToolCatalog
    model: BaseChatModel
    model_name: str
    method: StructuredMethod = "function_calling"
    max_repairs: int = 2
    confidence_threshold: float = 0.5
    max_steps: int = DEFAULT_MAX_STEPS
    tool_stats: dict[str, Any] = field(default_factory=dict)
    endpoint: str | None = None
    """The model's endpoint, named in error messages (``OPENAI_BASE_URL``)."""


class PlanningInput(TypedDict):
    """Input of the planner graph."""

    query: str
    """What the user wants done, in natural language."""
    request_id: NotRequired[str]
    """Add the plan as a new version of this existing request (``req_...``)."""


class PlanningState(TypedDict, total=False):
    """State of the planner graph; the output includes the stored IDs, the plan and any errors."""

    query: str
    request_id: str
    plan_id: str
    plan: dict[str, Any] | None
    analysis: dict[str, Any] | None
    status: str
    """``planned``, ``needs_review`` or ``invalid`` (nothing stored)."""
    errors: list[str]
    candidate: dict[str, Any] | None
    raw_candidate: str | None
    repairs: int
    llm_calls: int
    usage: dict[str, int]
    model: str
    prompt_version: str
    started_at: float
    planning_ms: float


@functools.lru_cache(maxsize=4)
def _default_context(settings: Settings) -> PlannerContext:
    """For LangGraph Studio / ``langgraph dev``: one context per distinct settings."""
    from toolplan.planning.setup import planner_context_from_env

    return planner_context_from_env(settings=settings)


register_cache(_default_context.cache_clear)


async def planner_context(config: RunnableConfig | None) -> PlannerContext:
    """The :class:`PlannerContext` passed in ``config``, or one built from the environment.

    Building the default opens the store and imports tool modules, so it runs in a thread: the
    nodes are async and must never block the event loop (``langgraph dev`` enforces this).
    """
    ctx = ((config or {}).get("configurable") or {}).get(PLANNER_CONTEXT_KEY)
    if isinstance(ctx, PlannerContext):
        return ctx
    return await asyncio.to_thread(lambda: _default_context(Settings.from_env()))


@functools.lru_cache(maxsize=4)
def _prompts(directory: Path) -> tuple[Prompt, Prompt]:
    settings = PlannerSettings(prompts_dir=str(directory))
    return load_prompt("planner", settings=settings), load_prompt(
        "planner-repair", settings=settings
    )


register_cache(_prompts.cache_clear)


def _usage_of(message: BaseMessage | None) -> tuple[int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))


def _payload_of(result: dict[str, Any]) -> Any:
    """The model's plan: the parsed object, else the raw tool-call arguments or JSON content."""
    if result.get("parsed") is not None:
        return result["parsed"]
    raw = result.get("raw")
    if isinstance(raw, AIMessage):
        if raw.tool_calls:
            return raw.tool_calls[0]["args"]
        if isinstance(raw.content, str) and raw.content.strip():
            return raw.content
    return None


async def select_tools(state: PlanningState, config: RunnableConfig) -> PlanningState:
    """Ask the model for the whole plan in one structured-output call (or a repaired one)."""
    ctx = await planner_context(config)
    prompt, repair_prompt = await asyncio.to_thread(lambda: _prompts(prompts_dir()))
    infos = [replace(i, stats=ctx.tool_stats.get(i.name)) for i in ctx.catalog.infos()]
    messages: list[BaseMessage] = [
        SystemMessage(prompt.render(catalog=render_catalog(infos))),
        HumanMessage(state["query"]),
    ]
    repairs = state.get("repairs", 0)
    if state.get("errors"):
        repairs += 1
        previous = state.get("raw_candidate") or json.dumps(
            state.get("candidate"), ensure_ascii=False
        )
        messages.append(
            HumanMessage(
                repair_prompt.render(
                    previous_plan=previous or "(no plan could be read from the response)",
                    errors="\n".join(f"- {error}" for error in state["errors"]),
                )
            )
        )
    strict = {"strict": True} if ctx.method == "json_schema" else {}
    structured = ctx.model.with_structured_output(
        LLMPlan, method=ctx.method, include_raw=True, **strict
    )
    with llm_errors(ctx.model_name, endpoint=ctx.endpoint):
        result: Any = await structured.ainvoke(messages, config)
    input_tokens, output_tokens = _usage_of(result.get("raw"))
    usage = dict(state.get("usage") or {"inputTokens": 0, "outputTokens": 0})
    usage["inputTokens"] += input_tokens
    usage["outputTokens"] += output_tokens
    payload = _payload_of(result)
    data, issues = to_plan_data(payload) if payload is not None else (None, [])
    errors = [issue.message for issue in issues]
    if payload is None:
        errors = [f"the response could not be read as a plan: {result.get('parsing_error')}"]
    return {
        "candidate": data,
        "raw_candidate": payload
        if isinstance(payload, str)
        else json.dumps(
            payload.model_dump() if isinstance(payload, LLMPlan) else payload, ensure_ascii=False
        ),
        "errors": errors,
        "repairs": repairs,
        "llm_calls": state.get("llm_calls", 0) + 1,
        "usage": usage,
        "model": ctx.model_name,
        "prompt_version": prompt.version,
        "started_at": state.get("started_at") or time.time(),
    }


async def analyze_dependencies(state: PlanningState, config: RunnableConfig) -> PlanningState:
    """Validate the candidate with the engine's validator and compute its structure."""
    ctx = await planner_context(config)
    if state.get("candidate") is None:
        return {"plan": None, "analysis": None}
    try:
        plan = parse_plan(state["candidate"])
        analysis = analyze(plan, ctx.catalog, max_steps=ctx.max_steps)
    except PlanInvalid as invalid:
        errors = [issue.message for issue in invalid.issues]
        return {"errors": errors, "plan": None, "analysis": None}
    return {"errors": [], "plan": plan.to_json(), "analysis": analysis.to_json()}


async def persist(state: PlanningState, config: RunnableConfig) -> PlanningState:
    """Store the request (if new) and the plan with its planning record."""
    ctx = await planner_context(config)
    plan = parse_plan(state["plan"])
    confidence = plan.min_confidence
    low = confidence is not None and confidence < ctx.confidence_threshold
    status = "needs_review" if low else "planned"
    planning_ms = round((time.time() - state.get("started_at", time.time())) * 1000, 1)
    meta = {
        "model": state.get("model"),
        "llmCalls": state.get("llm_calls", 0),
        "usage": state.get("usage"),
        "planningMs": planning_ms,
        "promptVersion": state.get("prompt_version"),
        "confidence": confidence,
        "repairs": state.get("repairs", 0),
        "reasoning": plan.reasoning,
    }
    ref = await asyncio.to_thread(
        submit_plan,
        plan,
        store=ctx.store,
        catalog=ctx.catalog,
        query=state["query"],
        request_id=state.get("request_id"),
        max_steps=ctx.max_steps,
        status=status,  # type: ignore[arg-type]
        meta=meta,
    )
    return {
        "request_id": ref.request_id,
        "plan_id": ref.plan_id,
        "status": status,
        "planning_ms": planning_ms,
    }


async def _after_analysis(state: PlanningState, config: RunnableConfig) -> str:
    if not state.get("errors"):
        return "persist"
    if state.get("repairs", 0) < (await planner_context(config)).max_repairs:
        return "select_tools"
    return "give_up"


async def give_up(state: PlanningState) -> PlanningState:
    """The plan is still invalid after the last repair: nothing is stored."""
    return {"status": "invalid", "plan": None}


def build_planning_graph() -> StateGraph[PlanningState, Any, PlanningInput, PlanningState]:
    """The uncompiled planning graph."""
    builder: StateGraph[PlanningState, Any, PlanningInput, PlanningState] = StateGraph(
        PlanningState, input_schema=PlanningInput, output_schema=PlanningState
    )
    builder.add_node("select_tools", select_tools)
    builder.add_node("analyze_dependencies", analyze_dependencies)
    builder.add_node("persist", persist)
    builder.add_node("give_up", give_up)
    builder.add_edge(START, "select_tools")
    builder.add_edge("select_tools", "analyze_dependencies")
    builder.add_conditional_edges(
        "analyze_dependencies", _after_analysis, ["persist", "select_tools", "give_up"]
    )
    builder.add_edge("persist", END)
    builder.add_edge("give_up", END)
    return builder
