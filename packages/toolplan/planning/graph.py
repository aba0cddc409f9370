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
(:mod:`toolplan.planning.parsing`), and changed after that only by the rules of the rewrite
pipeline that ``TOOLPLAN_PLANNER_REWRITES`` lets run (:mod:`toolplan.planning.rewrites`: the
format ones by default), each change recorded; the dependency-analysis node is the engine's validator
(:func:`toolplan.validation.dag.analyze`), and every problem of every step goes back to the model in one
repair round. An answer with no steps at all is the model saying
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
from collections.abc import Awaitable, Callable, Mapping
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
from toolplan.config import PlannerSettings
from toolplan.errors import InvalidInput, PlanInvalid, ValidationIssue
from toolplan.plan_format.limits import check_json
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.plan_format.python_print import in_python
from toolplan.planning.call import StructuredRequest, call_model
from toolplan.planning.context import PlannerContext
from toolplan.planning.duplicates import merge_duplicates
from toolplan.planning.fixes import apply_fixes
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
from toolplan.planning.rewrites import Change, rewrite_answer, rule_runs, step_changes
from toolplan.planning.schema import (
    PlanSchema,
)
from toolplan.planning.streaming import AnswerStream
from toolplan.planning.unasked import check_unasked, drop_unasked
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
    """The plan read from the last answer, after every rewrite rule that runs."""
    as_read: dict[str, Any] | None
    """The same plan after the format rules only: what the model wrote, as JSON. A plan the
    heuristic rules could not make valid is judged as this, so the repair's problems name the
    model's own steps."""
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
    auto_fixed: list[str]
    """Certain fixes the planner applied to the answer (``"step: old -> new"``)."""
    merged_steps: dict[str, str]
    """Identical steps of the answer merged into one: ``{dropped id: kept id}``."""
    batched_steps: dict[str, str]
    """One-item calls of a list-taking tool batched into one call: ``{dropped id: kept id}``
    (:mod:`toolplan.planning.batches`)."""
    unasked_steps: dict[str, str]
    """Steps dropped because the request never asked for them: ``{id: tool}``
    (:func:`toolplan.planning.unasked.drop_unasked`)."""
    dropped_conditions: list[str]
    """Steps whose ``when`` read their own output, run without it
    (:mod:`toolplan.planning.own_conditions`)."""
    unstated_arguments: dict[str, dict[str, str]]
    """Optional arguments whose values the request never stated, dropped (the tool's default
    applies): ``{step id: {argument: value}}`` (:mod:`toolplan.planning.unstated`)."""
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
    python = ctx.plan_format == "python"
    if python:
        prompt = await asyncio.to_thread(lambda: _python_prompt(prompts_dir(ctx.prompts_dir)))
    schema = ctx.plan_schema()
    messages = planner_messages(ctx, state["query"], prompt, None if python else schema)
    if state.get("context"):
        messages.append(HumanMessage(state["context"]))
    repairs = state.get("repairs", 0)
    if state.get("errors"):
        repairs += 1
        previous = state.get("raw_candidate") or "(no plan could be read from the answer)"
        spoken = python_problem if python else str
        problems = "\n".join(f"- {spoken(error)}" for error in state["errors"])
        messages.append(HumanMessage(repair_prompt.render(previous_plan=previous, errors=problems)))

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
        tell("repairing", calls, usage, problem=state["errors"][0], problems=len(state["errors"]))
    else:
        tell("planning", calls, usage)

    def step_seen(step: dict[str, Any], count: int, tokens: int) -> None:
        shown = _shown_step(step, ctx)
        tell("step", calls, usage, step=shown, steps=count, tokens=tokens)
        if ctx.early is not None:  # streamed execution: a read-only call may start now
            ctx.early.offer(step)

    def restarted() -> None:  # what was read as code was prose before a fenced block
        if ctx.early is not None:
            ctx.early.new_answer()

    restarted()
    stream = AnswerStream(
        step_seen,
        enabled=ctx.stream,
        max_steps=ctx.max_steps,
        statements=(
            (
                lambda: PythonAnswerReader(
                    ctx.catalog, rewrites=ctx.rewrites, limits=ctx.limits, max_steps=ctx.max_steps
                )
            )
            if python
            else None
        ),
        on_restart=restarted,
    )

    about = {  # what the call is for: tracing shows it, a scripted model answers from it
        "call": "plan",
        "request": state["query"],
        "format": ctx.plan_format,
        "context": state.get("context"),
        "problems": list(state.get("errors") or []),
    }

    def generic() -> StructuredRequest:
        nonlocal schema
        ctx.schema_fallback = True  # this endpoint cannot take the schema it was sent
        schema = ctx.plan_schema()
        messages[0] = planner_messages(ctx, state["query"], prompt, schema)[0]
        return StructuredRequest(messages, schema.schema, schema.strict, about)

    def after_runaway(request: StructuredRequest, error: LLMOutputRepeating) -> StructuredRequest:
        note = HumanMessage(runaway_prompt.render(what=error.what or "it repeated itself"))
        return replace(request, messages=[*request.messages, note])

    reply = await call_model(
        ctx.model_call(),
        StructuredRequest(messages, None if python else schema.schema, schema.strict, about),
        usage=usage,
        calls=calls,
        fallback=None if ctx.schema_fallback or python else generic,
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
    reading = await asyncio.to_thread(read_answer, payload, ctx)
    told = "\n".join(filter(None, [state["query"], state.get("context")]))
    rewritten = (
        rewrite_answer(
            reading.data,
            catalog=ctx.catalog,
            request=told,
            mode=ctx.rewrites,
            read_only=ctx.catalog.read_only,
            gated=ctx.catalog.gated,
        )
        if reading.data is not None
        else None
    )
    steps = len(rewritten.data["steps"]) if rewritten is not None else None
    tell("answered", reply.calls, reply.usage, steps=steps)
    errors = [issue.message for issue in reading.issues]
    if payload is None:
        errors = [
            "the answer was empty: write the plan as Python calls"
            if python
            else "the answer was empty: return the plan as one JSON object"
        ]
    changes = reading.changes + (rewritten.changes if rewritten is not None else [])
    return {
        "candidate": rewritten.data if rewritten is not None else None,
        "as_read": reading.data,
        "raw_candidate": payload
        if isinstance(payload, str) or payload is None
        else json.dumps(payload, ensure_ascii=False),
        "errors": errors,
        "unreadable": reading.unreadable,
        "sources": {step: list(where) for step, where in reading.sources.items()},
        "changes": changes,
        "merged_steps": rewritten.merged if rewritten is not None else {},
        "batched_steps": rewritten.batched if rewritten is not None else {},
        "dropped_conditions": rewritten.dropped_conditions if rewritten is not None else [],
        "unstated_arguments": rewritten.unstated if rewritten is not None else {},
        "unasked_steps": {},
        "auto_fixed": [],
        "repairs": repairs,
        "llm_calls": reply.calls,
        "usage": reply.usage,
        "model": ctx.model_name,
        "prompt_version": prompt.version,
        "plan_schema": "python" if python else schema.kind,
        "started_at": started_at,
    }


def read_answer(payload: Any, ctx: PlannerContext) -> PlanReading:
    """The model's answer as plan JSON, with the format rules ``ctx.rewrites`` lets run: the
    one place an answer is read: a JSON plan, or the Python format's statements (read as
    written: Python has no wrapping, nulls or quoting to undo)."""
    if ctx.plan_format == "python" and not json_answer(payload):
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


def _merge_duplicates(
    data: dict[str, Any], ctx: PlannerContext
) -> tuple[dict[str, Any], dict[str, str]]:
    """:func:`merge_duplicates` with the catalog's ``read-only`` tags."""
    return merge_duplicates(data, read_only=ctx.catalog.read_only)


async def analyze_dependencies(state: PlanningState, ctx: PlannerContext) -> PlanningState:
    """Validate the candidate with the engine's validator and compute its structure, with the
    critical-path estimates a stored plan's analysis has (so whoever stores it does not analyse
    again); a valid plan is planning's ``result``.

    A candidate the heuristic rewrite rules changed and that is still invalid is judged again
    as the model wrote it (format rules only): valid so, it is taken as written; invalid, its
    problems are the ones the model hears, named as in its own answer."""
    candidate = state.get("candidate")
    if candidate is None:
        return {"result": None}
    reading_errors = list(state.get("errors") or [])
    if not reading_errors and candidate.get("steps") == []:
        reasoning = candidate.get("reasoning")
        return {"declined": reasoning.strip() if isinstance(reasoning, str) else "", "result": None}
    judged, valid = await _judge(candidate, state, ctx, reading_errors, rewrite=True)
    as_read = state.get("as_read")
    if valid is None and as_read is not None and as_read != candidate:
        written, valid = await _judge(as_read, state, ctx, reading_errors, rewrite=False)
        judged = written
        if valid is not None:  # the heuristics broke a plan that was right as written
            judged = {
                **written,
                "changes": [c for c in state.get("changes") or [] if c.kind == "format"],
                "merged_steps": {},
                "batched_steps": {},
                "dropped_conditions": [],
                "unstated_arguments": {},
            }
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
    *,
    rewrite: bool,
) -> tuple[PlanningState, tuple[Plan, Analysis] | None]:
    """``candidate`` validated, then the planner's own checks; with ``rewrite``, the heuristic
    rules that act on the validator's findings (``fixes``, ``unasked``) when they run. Returns
    the state's update and, when it passed, the plan and its analysis."""
    reading_errors = list(reading_errors)
    unreadable = set(state.get("unreadable") or [])
    changes = list(state.get("changes") or [])
    try:
        # the input limits first: the model's plan is input like any other, and a limit it
        # breaks is a problem it can fix, reported with the others
        check_json(candidate, ctx.limits)
    except PlanInvalid as invalid:
        reading_errors += [issue.message for issue in invalid.issues]

    async def validated(data: dict[str, Any]) -> tuple[Plan, Analysis]:
        plan = parse_plan(data)
        analysis = await asyncio.to_thread(
            lambda: analyze(
                plan,
                ctx.catalog,
                max_steps=ctx.max_steps,
                max_items=ctx.max_items,
                estimate=plan_estimator(ctx.store),
            )
        )
        return plan, analysis

    auto_fixed: list[str] = []
    try:
        plan, analysis = await validated(candidate)
    except PlanInvalid as invalid:
        problems = invalid
        # the fixes the validator is certain of first: a small model shown them tends to
        # answer with the same plan again
        fixes = rewrite and rule_runs("fixes", ctx.rewrites)
        fixed = apply_fixes(candidate, invalid.issues) if fixes else None
        if fixed is not None:
            try:
                plan, analysis = await validated(fixed[0])
                changes += step_changes("fixes", candidate, fixed[0])
                candidate, auto_fixed = fixed
            except PlanInvalid as still:
                problems = still
        if not auto_fixed:
            # every problem of every step at once; the argument checks of a step whose
            # parameters could not be read would only repeat that problem
            sources = state.get("sources") or {}
            found = [
                in_python(issue, sources).message if sources else issue.message
                for issue in problems.issues
                if not (issue.code == "arguments" and issue.step in unreadable)
            ]
            return {"errors": reading_errors + found}, None

    # planner-only checks: valid by every schema, and wrong when run (an id passed by name, a
    # value made up where a tool's output belongs); on structural evidence only, in any
    # language. The request is what literals may come from.
    query, context = state["query"], state.get("context")
    told = "\n".join(filter(None, [query, context]))

    def planner_checks(plan: Plan) -> list[ValidationIssue]:
        grounding = check_grounding(plan, ctx.catalog, query, context=context)
        return grounding + check_conditions(plan, ctx.catalog)

    def unasked_checks(plan: Plan, reported: list[ValidationIssue]) -> list[ValidationIssue]:
        # the heuristic ``unasked`` rule: steps the request's words never name (off unless
        # every rule runs: it decides on words)
        if not rule_runs("unasked", ctx.rewrites):
            return []
        steps = {issue.step for issue in reported}
        return [i for i in check_unasked(plan, ctx.catalog, told) if i.step not in steps]

    issues = planner_checks(plan)
    unasked_issues = unasked_checks(plan, issues)
    unasked: dict[str, str] = {}
    merged = dict(state.get("merged_steps") or {})
    dropped = (
        drop_unasked(plan, unasked_issues) if rewrite and not (reading_errors or issues) else None
    )
    if dropped is not None:  # steps nothing needs, for what the request never named
        # a step that waited for one may now be a plain repeat of another
        smaller, more = _merge_duplicates(dropped[0].to_json(), ctx)
        try:
            before = plan.to_json()
            plan, analysis = await validated(smaller)
            unasked, merged = dropped[1], {**merged, **more}
            changes += step_changes("unasked", before, dropped[0].to_json()) + step_changes(
                "duplicates", dropped[0].to_json(), smaller, joined=more
            )
            issues = planner_checks(plan)
            unasked_issues = unasked_checks(plan, issues)
        except PlanInvalid:  # pragma: no cover - dropping steps nobody uses keeps a plan valid
            pass  # the model hears about the unasked steps instead
    reading_errors += [issue.message for issue in issues + unasked_issues]
    if reading_errors:
        return {"errors": reading_errors}, None
    judged: PlanningState = {
        "errors": [],
        "auto_fixed": auto_fixed,
        "unasked_steps": unasked,
        "merged_steps": merged,
        "changes": changes,
    }
    return judged, (plan, analysis)


def _stored_step_ids(
    state: PlanningState, by_step: Mapping[str, dict[str, str]]
) -> dict[str, dict[str, str]]:
    """``by_step`` (what was dropped from each step of the answer) under the ids of the stored
    plan: a step batched or merged into another is named by the one kept, and an unasked step
    dropped since is left out."""
    joined = {**(state.get("batched_steps") or {}), **(state.get("merged_steps") or {})}
    unasked = state.get("unasked_steps") or {}
    out: dict[str, dict[str, str]] = {}
    for step_id, values in by_step.items():
        kept, seen = step_id, {step_id}
        while kept in joined and joined[kept] not in seen:  # batches and merges may chain
            kept = joined[kept]
            seen.add(kept)
        if kept not in unasked:
            out.setdefault(kept, {}).update(values)
    return out


def _result(
    state: PlanningState, plan: Plan, analysis: Analysis, ctx: PlannerContext
) -> PlanningResult:
    """The valid ``plan``, its analysis and the planning record; ``needs_review`` when a step's
    confidence is below the context's threshold."""
    confidence = plan.min_confidence
    low = confidence is not None and confidence < ctx.confidence_threshold
    extra: dict[str, Any] = {}
    for key, found in (
        ("mergedSteps", state.get("merged_steps")),
        ("autoFixed", state.get("auto_fixed")),
        ("droppedConditions", state.get("dropped_conditions")),
        ("unaskedSteps", state.get("unasked_steps")),
        ("batchedSteps", state.get("batched_steps")),
        ("unstatedArguments", _stored_step_ids(state, state.get("unstated_arguments") or {})),
    ):
        if found:
            extra[key] = found
    record = PlanningRecord(
        model=state.get("model") or ctx.model_name,
        llm_calls=state.get("llm_calls", 0),
        usage=dict(state.get("usage") or {"inputTokens": 0, "outputTokens": 0}),
        planning_ms=round((time.time() - state.get("started_at", time.time())) * 1000, 1),
        prompt_version=state.get("prompt_version"),
        plan_schema=state.get("plan_schema"),
        repairs=state.get("repairs", 0),
        changes=tuple(state.get("changes") or ()),
        extra=extra,
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
