"""The planning graph (LangGraph StateGraph):

    select_tools (LLM) → analyze_dependencies ─┬─ valid ──────────► END (the plan, as ``result``)
                ▲                              ├─ invalid, repairs left ─┘ (back to select_tools)
                │                              ├─ no steps: no tool fits ─► END (status "declined")
                └──────────────────────────────┘  invalid, none left ─► END (status "invalid")

Planning stores nothing: its result is a validated :class:`~toolplan.planning.result.PlanningResult`
(the :class:`~toolplan.plan_format.plan.Plan`, its analysis, how it was made). A graph that keeps
the plan adds its own nodes around these (:class:`Keeping`: :mod:`toolplan.pipeline.planning`
stores it, for ``toolplan run``/``plan``, the API and LangGraph Studio's ``planner`` graph).

The model writes the whole plan in one structured-output call, in the catalog-typed schema (or the
generic one: :mod:`toolplan.planning.schema`). Its answer is read leniently where that is safe
(:mod:`toolplan.planning.parsing`): the rewrite pipeline's rules change its form, never its
meaning (:mod:`toolplan.planning.rewrites`; ``TOOLPLAN_PLANNER_REWRITES=none`` turns them off),
each change recorded; the dependency-analysis node is the engine's validator
(:func:`toolplan.validation.dag.analyze`), and every problem of every step goes back to the model in one
repair round. In the Python format, the attempt after one Python repair is not a repair: the
model is asked afresh for a JSON plan, and later attempts repair that (:func:`attempt_format`),
because the two formats fail on different requests.
An answer with no steps at all is the model saying
that no tool does what the request asks (the prompt tells it to answer so, and why, in
``reasoning``): the planner declines the request instead of asking for a plan again.

While the model works, ``select_tools`` tells the planner context's listener and LangGraph's
custom stream what it is doing: planning, each step as soon as the streamed answer has it
(:mod:`toolplan.planning.streaming`), repairing, asking again with a larger output limit, an
answer back, and once the plan is final what the rewrite rules changed in it
(:mod:`toolplan.planning.progress`).

The system prompt depends only on the catalog and the schema kind, so it is byte-identical from
one call to the next and servers' prompt caches hit; observed tool statistics follow it in a
separate message, in coarse buckets.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NotRequired

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.config import get_config, get_stream_writer
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, InstanceOf
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from toolplan._caches import register_cache
from toolplan._graph_context import bind_context, context_resolver
from toolplan.config import PlanFormat, PlannerSettings
from toolplan.errors import InvalidInput, PlanInvalid, ValidationIssue
from toolplan.plan_format.limits import check_json
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.plan_format.python_print import in_python
from toolplan.planning.call import StructuredRequest, call_model
from toolplan.planning.context import PlannerContext
from toolplan.planning.grounding import check_grounding
from toolplan.planning.json_reader import JsonPlanReader
from toolplan.planning.llm_errors import LLMOutputRepeating
from toolplan.planning.number_conditions import check_conditions
from toolplan.planning.parsing import PlanReading, message_payload, read_plan
from toolplan.planning.progress import PlanningEvent, PlanningEventKind, notify
from toolplan.planning.prompts import (
    Prompt,
    load_prompt,
    prompts_dir,
    render_observations,
    render_system_prompt,
)
from toolplan.planning.python_format import (
    PythonAnswerReader,
    json_answer,
    python_problem,
    read_python_answer,
    render_signatures,
)
from toolplan.planning.result import PlanningRecord, PlanningResult
from toolplan.planning.rewrites import Change
from toolplan.planning.schema import (
    PlanSchema,
)
from toolplan.planning.streaming import AnswerStream
from toolplan.service.estimates import plan_estimator
from toolplan.validation import Analysis, analyze

__all__ = [
    "Keeping",
    "PlannerContext",
    "PlanningGraphContext",
    "PlanningInput",
    "PlanningProgress",
    "PlanningState",
    "build_planning_graph",
]


class PlanningInput(TypedDict):
    """Input of the planner graph."""

    query: str
    """What the user wants done, in natural language."""
    context: NotRequired[str]
    """More for the model after the query: a replan's previous plan, results and failures."""


class PlanningProgress(TypedDict, total=False):
    """What the planner graph's state holds besides its result: the answer being judged, the
    problems found, what planning spent."""

    query: str
    context: str
    status: str
    """``planned``, ``needs_review``, ``invalid`` or ``declined``."""
    declined: str
    """Why the model planned no step (its ``reasoning``): no tool does what was asked."""
    errors: list[str]
    candidate: dict[str, Any] | None
    """The plan read from the last answer, after the rewrite rules that run."""
    raw_candidate: str | None
    """The last answer's text, shown to the model in a repair."""
    changes: list[Change]
    """Every change the rewrite rules made to the last answer
    (:mod:`toolplan.planning.rewrites`)."""
    unreadable: list[str]
    """Steps whose parameters could not be read: their argument checks are not reported."""
    sources: dict[str, list[Any]]
    """A Python answer's steps: where each was written (line, column, call), so that the
    problems found later are said in Python."""
    repairs: int
    llm_calls: int
    usage: dict[str, int]
    model: str
    prompt_version: str
    plan_schema: str
    """``typed`` or ``generic``: the schema the last answer was requested in."""
    started_at: float


class PlanningState(PlanningProgress, total=False):
    """State of the planner graph; the output has the plan (``result``) or why there is none."""

    result: PlanningResult | None
    """The validated plan, its analysis and how it was made, once planning succeeded."""


class PlanningGraphContext(BaseModel):
    """The planning graph's runtime context (LangGraph ``context_schema``): invoke the graph
    with ``context=PlanningGraphContext(planner=ctx)``.

    LangGraph Studio passes its own (JSON) context, which leaves ``planner`` unset: the nodes
    then use the graph's default context (:mod:`toolplan.adapters.studio` builds it from the
    environment).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="ignore", frozen=True)

    planner: SkipJsonSchema[InstanceOf[PlannerContext] | None] = None
    """Store, catalog, model and planning options."""


@functools.lru_cache(maxsize=4)
def _prompts(directory: Path) -> tuple[Prompt, Prompt, Prompt]:
    settings = PlannerSettings(prompts_dir=str(directory))
    return (
        load_prompt("planner", settings=settings),
        load_prompt("planner-repair", settings=settings),
        load_prompt("planner-runaway", settings=settings),
    )


@functools.lru_cache(maxsize=4)
def _python_prompt(directory: Path) -> Prompt:
    return load_prompt("planner-python", settings=PlannerSettings(prompts_dir=str(directory)))


register_cache(_prompts.cache_clear)
register_cache(_python_prompt.cache_clear)


def planner_messages(
    ctx: PlannerContext, query: str, prompt: Prompt, schema: PlanSchema | None
) -> list[BaseMessage]:
    """System prompt (static while the catalog is), observations (coarse, often none), query.
    No ``schema``: the Python format's prompt, the catalog as signatures."""
    if schema is None:
        system = prompt.render(
            catalog=render_signatures(ctx.catalog.infos(), tools=ctx.catalog.python_tools)
        )
    else:
        system = render_system_prompt(prompt, ctx.catalog.infos(), schema.kind)
    messages: list[BaseMessage] = [SystemMessage(system)]
    observed = render_observations(
        [replace(i, stats=ctx.tool_stats.get(i.name)) for i in ctx.catalog.infos()]
    )
    if observed:
        messages.append(HumanMessage(observed))
    messages.append(HumanMessage(query))
    return messages


async def select_tools(state: PlanningState, ctx: PlannerContext) -> PlanningState:
    """Ask the model for the whole plan in one structured-output call (or a repaired one)."""
    started_at = state.get("started_at") or time.time()  # before the first call: it is planning
    if not isinstance(state.get("query"), str) or not state["query"].strip():
        raise InvalidInput('the planner needs a request as input: {"query": "what to do"}')
    prompt, repair_prompt, runaway_prompt = await asyncio.to_thread(
        lambda: _prompts(prompts_dir(ctx.prompts_dir))
    )
    repairs = state.get("repairs", 0) + (1 if state.get("errors") else 0)
    plan_format = attempt_format(ctx, repairs)
    # the first attempt in the other format is asked afresh; a later one repairs it
    afresh = plan_format != ctx.plan_format and (
        repairs == 0 or attempt_format(ctx, repairs - 1) == ctx.plan_format
    )
    python = plan_format == "python"
    json_prompt = prompt
    python_prompt = json_prompt  # a JSON planning never asks for Python
    if ctx.plan_format == "python":
        python_prompt = await asyncio.to_thread(
            lambda: _python_prompt(prompts_dir(ctx.prompts_dir))
        )
    prompt = python_prompt if python else json_prompt
    schema = ctx.plan_schema()

    def asking(in_python: bool, repair: bool) -> list[BaseMessage]:
        """The messages of this attempt: written in Python or in the schema, with the last
        answer and its problems when it is a repair."""
        asked = planner_messages(
            ctx,
            state["query"],
            python_prompt if in_python else json_prompt,
            None if in_python else schema,
        )
        if state.get("context"):
            asked.append(HumanMessage(state["context"]))
        if repair and state.get("errors"):
            previous = state.get("raw_candidate") or "(no plan could be read from the answer)"
            spoken = python_problem if in_python else str
            problems = "\n".join(f"- {spoken(error)}" for error in state["errors"])
            asked.append(
                HumanMessage(repair_prompt.render(previous_plan=previous, errors=problems))
            )
        return asked

    messages = asking(python, repair=not afresh)

    writer = get_stream_writer()  # LangGraph's custom stream (a no-op unless it is asked for)

    def tell(kind: PlanningEventKind, calls: int, usage: Any, **details: Any) -> None:
        event = PlanningEvent(
            kind,
            ctx.model_name,
            attempt=repairs + 1,
            attempts=ctx.max_repairs + 1,
            elapsed_ms=(time.time() - started_at) * 1000,
            llm_calls=calls,
            usage=dict(usage or {"inputTokens": 0, "outputTokens": 0}),
            **details,
        )
        notify(event, ctx.listener, writer)

    calls, usage = state.get("llm_calls", 0), state.get("usage")
    if state.get("errors"):
        tell(
            "repairing",
            calls,
            usage,
            problem=state["errors"][0],
            problems=len(state["errors"]),
            afresh=plan_format if afresh else None,
        )
    else:
        tell("planning", calls, usage)

    def step_seen(step: dict[str, Any], count: int, tokens: int) -> None:
        shown = _shown_step(step, ctx)
        tell("step", calls, usage, step=shown, steps=count, tokens=tokens)
        if ctx.early is not None and python:  # streamed execution: a read-only call may start
            ctx.early.offer(step)

    def restarted() -> None:  # what was read as code was prose before a fenced block
        if ctx.early is not None:
            ctx.early.new_answer()

    def statements() -> PythonAnswerReader:
        return PythonAnswerReader(
            ctx.catalog, rewrites=ctx.rewrites, limits=ctx.limits, max_steps=ctx.max_steps
        )

    restarted()
    stream = AnswerStream(
        step_seen,
        enabled=ctx.stream,
        max_steps=ctx.max_steps,
        statements=statements if python else None,
        on_restart=restarted,
    )

    about = {  # what the call is for: tracing shows it, a scripted model answers from it
        "call": "plan",
        "request": state["query"],
        "format": plan_format,
        "context": state.get("context"),
        "problems": [] if afresh else list(state.get("errors") or []),
    }

    def generic() -> StructuredRequest:
        nonlocal schema
        ctx.schema_fallback = True  # this endpoint cannot take the schema it was sent
        schema = ctx.plan_schema()
        messages[0] = planner_messages(ctx, state["query"], prompt, schema)[0]
        return StructuredRequest(messages, schema.schema, schema.strict, about)

    def repaired_in_python() -> StructuredRequest:
        # an endpoint that refuses the schema asked afresh for: the Python repair after all,
        # and in every later planning of this context (it is not asked for the schema again)
        nonlocal python, prompt
        python, prompt = True, python_prompt
        ctx.json_refused = True
        stream.statements = statements
        problems = list(state.get("errors") or [])
        tell("repairing", calls, usage, problem=problems[0], problems=len(problems))
        asked = {**about, "format": "python", "problems": problems}
        return StructuredRequest(asking(True, repair=True), None, False, asked)

    # when the endpoint refuses the schema: asked afresh, the Python repair; else, once, the
    # generic schema (none for a Python answer, or when the generic one is already in use)
    fallback: Callable[[], StructuredRequest] | None = generic
    if afresh:
        fallback = repaired_in_python
    elif python or ctx.schema_fallback:
        fallback = None

    def after_runaway(request: StructuredRequest, error: LLMOutputRepeating) -> StructuredRequest:
        note = HumanMessage(runaway_prompt.render(what=error.what or "it repeated itself"))
        return replace(request, messages=[*request.messages, note])

    reply = await call_model(
        ctx.model_call(),
        StructuredRequest(messages, None if python else schema.schema, schema.strict, about),
        usage=usage,
        calls=calls,
        fallback=fallback,
        larger=ctx.larger_model_call(),
        on_larger=lambda larger, calls, usage: tell(
            "retrying", calls, usage, max_tokens=larger.max_tokens
        ),
        config=get_config(),  # the run's callbacks: Studio streams the model's tokens
        stream=stream,
        after_runaway=after_runaway,
    )
    ctx.stream = stream.enabled  # an endpoint that could not stream is not asked to again
    payload: Any = message_payload(reply.answer.message)
    # Read off the event loop: reading is linear and bounded, and still no other request waits
    # on it (the API serves others from this loop).
    reading = await asyncio.to_thread(read_answer, payload, ctx, python=python)
    steps = len(reading.data["steps"]) if reading.data is not None else None
    tell("answered", reply.calls, reply.usage, steps=steps)
    errors = [issue.message for issue in reading.issues]
    if payload is None:
        errors = [
            "the answer was empty: write the plan as Python calls"
            if python
            else "the answer was empty: return the plan as one JSON object"
        ]
    return {
        "candidate": reading.data,
        "raw_candidate": payload
        if isinstance(payload, str) or payload is None
        else json.dumps(payload, ensure_ascii=False),
        "errors": errors,
        "unreadable": reading.unreadable,
        "sources": {step: list(where) for step, where in reading.sources.items()},
        "changes": list(reading.changes),
        "repairs": repairs,
        "llm_calls": reply.calls,
        "usage": reply.usage,
        "model": ctx.model_name,
        "prompt_version": prompt.version,
        "plan_schema": "python" if python else schema.kind,
        "started_at": started_at,
    }


_PYTHON_ATTEMPTS = 2
"""Attempts a Python planning writes in Python (its first answer and one repair) before it
asks for JSON, when it has more than that."""


def attempt_format(ctx: PlannerContext, repairs: int) -> PlanFormat:
    """The format the model is asked to write attempt ``repairs + 1`` in: the context's, except
    in a Python planning, which gets at most one Python repair: the attempt after it (the
    second, with a single repair allowed) asks afresh for a JSON plan, and any later attempt
    repairs that JSON plan.

    The two formats fail on different requests: on NESTFUL's tuning splits, every request the
    Python format gave no plan for after its repairs, the JSON format planned (8 of 9, most
    in one call), while a third Python answer rescued 7 in 94 (BENCHMARKS, *The last attempt in
    JSON*). An endpoint that refused that schema (``ctx.json_refused``) gets Python repairs."""
    switch = min(_PYTHON_ATTEMPTS, ctx.max_repairs)
    if ctx.plan_format == "python" and 1 <= switch <= repairs and not ctx.json_refused:
        return "json"
    return ctx.plan_format


def read_answer(payload: Any, ctx: PlannerContext, *, python: bool) -> PlanReading:
    """The model's answer as plan JSON, with the format rules ``ctx.rewrites`` lets run: the
    one place an answer is read: a JSON plan, or (``python``) the Python format's statements
    (read as written: Python has no wrapping, nulls or quoting to undo)."""
    if python and not json_answer(payload):
        return read_python_answer(
            payload, ctx.catalog, rewrites=ctx.rewrites, limits=ctx.limits, max_steps=ctx.max_steps
        )
    return JsonPlanReader(ctx.catalog, rewrites=ctx.rewrites).read(payload)


def _shown_step(step: dict[str, Any], ctx: PlannerContext) -> dict[str, Any]:
    """A step of the answer being written, as it will be read (parameters given as a JSON
    string parsed, the format rules applied): ``id``, ``tool``, ``parameters``."""
    # a JSON step from the streamed answer (:mod:`.partial`), read as the whole answer will be
    read = read_plan({"steps": [step]}, ctx.catalog, rewrites=ctx.rewrites).data
    steps = read["steps"] if read is not None else []
    found = steps[0] if steps else step
    parameters = found.get("parameters")
    return {
        "id": found.get("id"),
        "tool": found.get("tool"),
        "parameters": parameters if isinstance(parameters, dict) else {},
    }


async def analyze_dependencies(state: PlanningState, ctx: PlannerContext) -> PlanningState:
    """Validate the candidate with the engine's validator and compute its structure, with the
    critical-path estimates a stored plan's analysis has (so whoever stores it does not analyse
    again), then run the planner's own checks; a plan that passes is planning's ``result``."""
    candidate = state.get("candidate")
    if candidate is None:
        return {"result": None}
    reading_errors = list(state.get("errors") or [])
    if not reading_errors and candidate.get("steps") == []:
        reasoning = candidate.get("reasoning")
        return {"declined": reasoning.strip() if isinstance(reasoning, str) else "", "result": None}
    judged, valid = await _judge(candidate, state, ctx, reading_errors)
    if valid is None:
        return {**judged, "result": None}
    result = _result({**state, **judged}, *valid, ctx)
    notify(
        PlanningEvent(
            "rewritten",
            ctx.model_name,
            attempt=result.record.repairs + 1,
            attempts=ctx.max_repairs + 1,
            elapsed_ms=result.record.planning_ms,
            llm_calls=result.record.llm_calls,
            usage=dict(result.record.usage),
            changes=[change.to_json() for change in result.record.changes],
        ),
        ctx.listener,
        get_stream_writer(),
    )
    return {**judged, "result": result, "status": result.status}


async def _judge(
    candidate: dict[str, Any],
    state: PlanningState,
    ctx: PlannerContext,
    reading_errors: list[str],
) -> tuple[PlanningState, tuple[Plan, Analysis] | None]:
    """``candidate`` validated, then the planner's own checks. Returns the state's update and,
    when it passed, the plan and its analysis."""
    reading_errors = list(reading_errors)
    unreadable = set(state.get("unreadable") or [])
    sources = state.get("sources") or {}
    try:
        # the input limits first: the model's plan is input like any other, and a limit it
        # breaks is a problem it can fix, reported with the others
        check_json(candidate, ctx.limits)
    except PlanInvalid as invalid:
        reading_errors += [issue.message for issue in invalid.issues]

    try:
        plan = parse_plan(candidate)
        analysis = await asyncio.to_thread(
            lambda: analyze(
                plan,
                ctx.catalog,
                max_steps=ctx.max_steps,
                max_items=ctx.max_items,
                estimate=plan_estimator(ctx.store),
            )
        )
    except PlanInvalid as invalid:
        # every problem of every step at once; the argument checks of a step whose parameters
        # could not be read would only repeat that problem
        found = [
            issue
            for issue in invalid.issues
            if not (issue.code == "arguments" and issue.step in unreadable)
        ]
        return {"errors": reading_errors + _said(found, sources, ctx)}, None

    # planner-only checks: valid by every schema, and wrong when run (an id passed by name, a
    # value made up where a tool's output belongs); on structural evidence only, in any
    # language. The request is what literals may come from.
    issues = check_grounding(plan, ctx.catalog, state["query"], context=state.get("context"))
    issues += check_conditions(plan, ctx.catalog)
    reading_errors += _said(issues, sources, ctx)
    if reading_errors:
        return {"errors": reading_errors}, None
    return {"errors": []}, (plan, analysis)


def _said(
    issues: list[ValidationIssue], sources: Mapping[str, Sequence[Any]], ctx: PlannerContext
) -> list[str]:
    """The problems as the repair says them: in Python when the plan was read from Python, each
    tool by the name the plan calls it."""
    if not sources:
        return [issue.message for issue in issues]
    return [issue.message for issue in in_python(issues, sources, ctx.catalog.python_tools)]


def _result(
    state: PlanningState, plan: Plan, analysis: Analysis, ctx: PlannerContext
) -> PlanningResult:
    """The valid ``plan``, its analysis and the planning record; ``needs_review`` when a step's
    confidence is below the context's threshold."""
    confidence = plan.min_confidence
    low = confidence is not None and confidence < ctx.confidence_threshold
    record = PlanningRecord(
        model=state.get("model") or ctx.model_name,
        llm_calls=state.get("llm_calls", 0),
        usage=dict(state.get("usage") or {"inputTokens": 0, "outputTokens": 0}),
        planning_ms=round((time.time() - state.get("started_at", time.time())) * 1000, 1),
        prompt_version=state.get("prompt_version"),
        plan_schema=state.get("plan_schema"),
        repairs=state.get("repairs", 0),
        changes=tuple(state.get("changes") or ()),
    )
    return PlanningResult(plan, analysis, record, "needs_review" if low else "planned")


PlanningNode = Callable[[Any, PlannerContext], Awaitable[Any]]
"""A node of the planning graph: ``node(state, ctx)``, returning the state's update."""


@dataclass(frozen=True)
class Keeping:
    """What a graph that keeps its plan adds around planning (:mod:`toolplan.pipeline.planning`
    stores it). Planning itself stores nothing and knows nothing of where the plan goes."""

    check: PlanningNode
    """Runs first, before the model is paid for: refuses an input the plan could not be kept
    with (labels toolplan reserves, a request that does not exist)."""
    keep: PlanningNode
    """Runs on a valid plan (``state["result"]``), last."""
    state: type[Any] = PlanningState
    """The graph's state: :class:`PlanningState` and what keeping adds to it."""
    input: type[Any] = PlanningInput
    """The graph's input: :class:`PlanningInput` and what keeping adds to it."""
    output: type[Any] = PlanningState
    """What the graph returns."""


async def _after_analysis(state: PlanningState, ctx: PlannerContext) -> str:
    if state.get("declined") is not None:
        return "decline"
    if state.get("result") is not None:
        return "keep"
    if state.get("repairs", 0) < ctx.max_repairs:
        return "select_tools"
    return "give_up"


async def give_up(state: PlanningState) -> PlanningState:
    """The plan is still invalid after the last repair."""
    return {"status": "invalid", "result": None}


async def decline(state: PlanningState) -> PlanningState:
    """The model planned no step: no tool does what was asked."""
    return {"status": "declined", "result": None}


def build_planning_graph(
    default_context: Callable[[], PlannerContext] | None = None,
    *,
    keeping: Keeping | None = None,
) -> StateGraph[Any, PlanningGraphContext, Any, Any]:
    """The uncompiled planning graph. Its runtime context is a :class:`PlanningGraphContext`;
    invoked without one (LangGraph Studio), the nodes use ``default_context()``. With
    ``keeping``, its ``check`` node runs first and its ``keep`` node on the valid plan."""
    resolve = context_resolver("planner", default_context, graph="planner")
    builder: StateGraph[Any, PlanningGraphContext, Any, Any] = StateGraph(
        keeping.state if keeping is not None else PlanningState,
        context_schema=PlanningGraphContext,
        input_schema=keeping.input if keeping is not None else PlanningInput,
        output_schema=keeping.output if keeping is not None else PlanningState,
    )
    builder.add_node("select_tools", bind_context(select_tools, resolve))
    builder.add_node("analyze_dependencies", bind_context(analyze_dependencies, resolve))
    builder.add_node("give_up", give_up)
    builder.add_node("decline", decline)
    if keeping is not None:
        builder.add_node("check", bind_context(keeping.check, resolve))
        builder.add_node("persist", bind_context(keeping.keep, resolve))
        builder.add_edge(START, "check")
        builder.add_edge("check", "select_tools")
        builder.add_edge("persist", END)
    else:
        builder.add_edge(START, "select_tools")
    builder.add_edge("select_tools", "analyze_dependencies")
    builder.add_conditional_edges(
        "analyze_dependencies",
        bind_context(_after_analysis, resolve),
        {
            "keep": "persist" if keeping is not None else END,
            "select_tools": "select_tools",
            "give_up": "give_up",
            "decline": "decline",
        },
    )
    builder.add_edge("give_up", END)
    builder.add_edge("decline", END)
    return builder
