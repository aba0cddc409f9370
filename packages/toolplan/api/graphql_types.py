"""The GraphQL object types, built from the same JSON the CLI prints with ``--json``."""

from __future__ import annotations

import asyncio
from typing import Any

import strawberry
from strawberry.scalars import JSON

from toolplan.api.context import ApiContext
from toolplan.api.events import PlanningNews
from toolplan.engine.recorder import StepEvent
from toolplan.service.operations import PlanRef
from toolplan.service.plan_view import (
    DEFAULT_ITEM_PAGE,
    MAX_ITEM_PAGE,
    item_page,
    item_page_checks,
)
from toolplan.tools.catalog import ToolInfo

Info = strawberry.Info[ApiContext, None]

__all__ = [
    "EstimateType",
    "ExecutionStepType",
    "ExecutionType",
    "PlanListType",
    "PlanRefType",
    "PlanStepType",
    "PlanSummaryType",
    "PlanType",
    "PlanningEventType",
    "QueryRunPlanType",
    "QueryRunType",
    "RequestType",
    "StepEventType",
    "ToolStatsType",
    "ToolType",
]


@strawberry.type(
    name="Estimate",
    description="What a plan is expected to take and cost, from the tools' observed history.",
)
class EstimateType:
    duration_ms: float = strawberry.field(
        description="The critical path (the eager schedule at the concurrency limit) over the "
        "mean observed duration of each step's tool; the default for tools never seen."
    )
    cost_usd: float | None = strawberry.field(
        description="Per-call costs the tools declare plus the planning calls at the price "
        "table (prices, in the project config); null when nothing is known."
    )
    basis: str = strawberry.field(
        description="history (every step's tool observed), default (none) or mixed; followed "
        "by ', item count unknown' when a forEach step's list is known only at run time (it "
        "counts as one call)."
    )

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> EstimateType | None:
        """From ``Estimate.to_json()`` (``None`` for a plan stored without one)."""
        if not data:
            return None
        return cls(
            duration_ms=data["durationMs"], cost_usd=data.get("costUsd"), basis=data["basis"]
        )


@strawberry.type(name="PlanRef", description="Where a stored plan lives.")
class PlanRefType:
    request_id: str = strawberry.field(description="The request (req_...) the plan belongs to.")
    plan_id: str = strawberry.field(description="The stored plan (plan_...).")
    status: str = strawberry.field(
        description="planned, or needs_review (low planner confidence: executePlan needs "
        "approve: true)."
    )
    estimate: EstimateType | None = strawberry.field(
        default=None, description="Expected duration and cost, stored with the plan."
    )

    @classmethod
    def from_ref(cls, ref: PlanRef) -> PlanRefType:
        """From the core :class:`~toolplan.service.operations.PlanRef`."""
        return cls(
            request_id=ref.request_id,
            plan_id=ref.plan_id,
            status=ref.status,
            estimate=EstimateType.from_json(ref.estimate.to_json() if ref.estimate else None),
        )


@strawberry.type(name="Decision", description="A person's decision on a step that waited.")
class DecisionType:
    decision: str = strawberry.field(description="approved or denied.")
    by: str = strawberry.field(description="Who decided.")
    at: str = strawberry.field(description="When (ISO-8601 UTC).")
    fingerprint: str = strawberry.field(
        description="The fingerprint of the arguments decided on (sha256 of the tool and its "
        "arguments as canonical JSON): an approval covers those arguments only."
    )
    reason: str | None
    via: str | None = strawberry.field(
        default=None,
        description="approveAll when the run's blanket approval (executePlan(approveAll: true), "
        "--approve-all) let the step through; null for a decision on the step itself.",
    )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DecisionType:
        """From a step's ``decision`` in ``ExecutionResult.to_json()``."""
        return cls(
            decision=data["decision"],
            by=data["by"],
            at=data["at"],
            fingerprint=data["fingerprint"],
            reason=data.get("reason"),
            via=data.get("via"),
        )


@strawberry.type(name="ExecutionStep", description="The durable record of one step's execution.")
class ExecutionStepType:
    id: str
    tool: str
    status: str = strawberry.field(
        description="pending, running, waiting_approval (its tool is called once a person "
        "approves: approveStep), succeeded, failed, skipped, denied or cancelled."
    )
    attempts: int
    output: JSON | None = strawberry.field(description="The tool's output, when it succeeded.")
    error: str | None
    duration_ms: float | None
    started_at: str | None
    finished_at: str | None
    resolved_parameters: JSON | None = strawberry.field(
        description="The arguments after template resolution."
    )
    cached: bool = strawberry.field(
        default=False,
        description="The output came from the result cache (a read-only tool); no tool was called.",
    )
    cache_age_seconds: float | None = strawberry.field(
        default=None, description="For a cached output: how old the cached result was."
    )
    timeout: float | None = strawberry.field(
        default=None,
        description="Seconds each attempt could take (recorded when the step started).",
    )
    timeout_source: str | None = strawberry.field(
        default=None,
        description="Where the timeout came from: plan (the step's own), history (the tool's "
        "observed durations) or default.",
    )
    reused_from: str | None = strawberry.field(
        default=None,
        description="The output of a succeeded step of an earlier version of the same request "
        "(planId:stepId), same tool and arguments: the tool was not called again.",
    )
    pending_arguments: JSON | None = strawberry.field(
        default=None,
        description="While waiting_approval: exactly the arguments the tool will be called "
        "with once approved (a forEach step: one per item); null otherwise.",
    )
    decision: DecisionType | None = strawberry.field(
        default=None, description="A person's decision, once the step waited for approval."
    )
    reason: str | None = strawberry.field(
        default=None,
        description="On a skipped step: condition when a when condition decided it, not a "
        "failure; condition-not-boolean when a when condition (its own or a dependency's) "
        "resolved to text, which is not a yes/no value, so the step did not run.",
    )
    plan_id: strawberry.Private[str] = ""
    read_items: strawberry.Private[list[dict[str, Any]] | None] = None
    """The step's items as read with it; ``None`` when not read (or none)."""
    items_read: strawberry.Private[bool] = True
    """Whether the step was read with its items (else they are read a page at a time)."""

    async def _page(
        self, info: Info, offset: int, limit: int, status: str | None
    ) -> dict[str, Any] | None:
        if self.items_read:
            # Read with the step (a run's own result): paged here, checked as the store's are.
            if self.read_items is None:
                return None
            item_page_checks(offset, limit, status)
            chosen = [i for i in self.read_items if status is None or i.get("status") == status]
            counts: dict[str, int] = {}
            for item in self.read_items:
                counts[item["status"]] = counts.get(item["status"], 0) + 1
            page = chosen[offset : offset + limit]
            end = offset + len(page)
            return {
                "items": page,
                "counts": counts,
                "total": len(self.read_items),
                "nextOffset": end if page and end < len(chosen) else None,
            }
        return await asyncio.to_thread(
            item_page,
            info.context.store,
            self.plan_id,
            self.id,
            offset=offset,
            limit=limit,
            status=status,
        )

    @strawberry.field(
        description="A forEach step's items once its list is known, in index order: index, "
        "status, attempts, error (and output, usedFallback, durationMs); null for any other "
        f"step. A page at a time: limit items (default {DEFAULT_ITEM_PAGE}, at most "
        f"{MAX_ITEM_PAGE}) from the offset-th on, only those with status when given "
        "(itemCounts says how many there are)."
    )
    async def items(
        self,
        info: Info,
        offset: int = 0,
        limit: int = DEFAULT_ITEM_PAGE,
        status: str | None = None,
    ) -> JSON | None:
        page = await self._page(info, offset, limit, status)
        return None if page is None else JSON(page["items"])

    @strawberry.field(
        description="How many items of a forEach step are in each status "
        '({"succeeded": 980, "running": 10, "pending": 10}); null for any other step or '
        "before its list is known."
    )
    async def item_counts(self, info: Info) -> JSON | None:
        page = await self._page(info, 0, 0, None)
        return None if page is None else JSON(page["counts"])

    @strawberry.field(
        description="How many items a forEach step has; null for any other step or before its "
        "list is known."
    )
    async def item_count(self, info: Info) -> int | None:
        page = await self._page(info, 0, 0, None)
        return None if page is None else int(page["total"])

    @classmethod
    def from_json(
        cls, data: dict[str, Any], *, plan_id: str = "", items_read: bool = True
    ) -> ExecutionStepType:
        """From one entry of ``ExecutionResult.to_json()["steps"]`` of ``plan_id``'s execution
        (``items_read=False``: read without items, which the ``items`` field then reads a page
        at a time)."""
        return cls(
            id=data["id"],
            tool=data["tool"],
            status=data["status"],
            attempts=data["attempts"],
            output=JSON(data.get("output")),
            error=data.get("error"),
            duration_ms=data.get("durationMs"),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            resolved_parameters=JSON(data.get("resolvedParameters")),
            cached=bool(data.get("cached")),
            cache_age_seconds=data.get("cacheAgeSeconds"),
            timeout=data.get("timeout"),
            timeout_source=data.get("timeoutSource"),
            reused_from=data.get("reusedFrom"),
            pending_arguments=JSON(data.get("resolvedParameters"))
            if data["status"] == "waiting_approval"
            else None,
            decision=DecisionType.from_json(data["decision"]) if data.get("decision") else None,
            reason=data.get("reason"),
            plan_id=plan_id,
            read_items=data.get("items"),
            items_read=items_read,
        )


@strawberry.type(name="Execution", description="The execution of one plan, as stored.")
class ExecutionType:
    plan_id: str
    request_id: str
    status: str = strawberry.field(
        description="queued, running or waiting (steps wait for approval: approveStep, "
        "denyStep); when finished: succeeded, partial, failed or cancelled."
    )
    error: str | None
    cancel_requested_at: str | None = strawberry.field(
        description="When a cancel was requested (cancelExecution), if one was."
    )
    steps: list[ExecutionStepType]
    outputs: JSON = strawberry.field(
        description="Output of each of the plan's output steps (null for one that did not succeed)."
    )

    @classmethod
    def from_json(cls, data: dict[str, Any], *, items_read: bool = True) -> ExecutionType:
        """From :meth:`toolplan.engine.result.ExecutionResult.to_json` (``items_read=False``:
        read without items, which each step's ``items`` then reads a page at a time)."""
        return cls(
            plan_id=data["planId"],
            request_id=data["requestId"],
            status=data["status"],
            error=data.get("error"),
            cancel_requested_at=data.get("cancelRequestedAt"),
            steps=[
                ExecutionStepType.from_json(step, plan_id=data["planId"], items_read=items_read)
                for step in data["steps"]
            ],
            outputs=JSON(data.get("outputs") or {}),
        )


@strawberry.type(name="PlanStep", description="One tool call in a plan.")
class PlanStepType:
    id: str
    tool: str
    parameters: JSON = strawberry.field(
        description="Arguments; strings may hold {{stepId.path}} templates."
    )
    depends_on: list[str] = strawberry.field(
        description="Explicit ordering edges (template references are edges too)."
    )
    confidence: float | None = strawberry.field(description="The planner's confidence (0-1).")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlanStepType:
        """From one step of the canonical plan JSON."""
        return cls(
            id=data["id"],
            tool=data["tool"],
            parameters=JSON(data.get("parameters")),
            depends_on=list(data.get("dependsOn") or []),
            confidence=data.get("confidence"),
        )


@strawberry.type(name="Plan", description="A stored, validated plan: one version of a request.")
class PlanType:
    plan_id: str
    request_id: str
    query: str | None
    status: str = strawberry.field(description="planned or needs_review.")
    created_at: str
    reasoning: str | None
    steps: list[PlanStepType]
    output_steps: list[str] | None
    layers: list[list[str]] = strawberry.field(
        description="Steps grouped so that no step depends on one in its own or a later layer."
    )
    execution: ExecutionType | None = strawberry.field(
        description="Its execution, or null if it never started."
    )
    estimate: EstimateType | None = strawberry.field(
        description="Expected duration and cost, made when the plan was stored (null for plans "
        "stored before estimates existed)."
    )
    actual_duration_ms: float | None = strawberry.field(
        description="Wall time of its finished execution (finishedAt - startedAt), beside the "
        "estimate; null until it finished."
    )
    changes: JSON = strawberry.field(
        description="What the planner's rewrite rules changed in the model's answer: a list of "
        "{rule, step, before, after} (empty: stored as the model wrote it, or not planned by "
        "the model). TOOLPLAN_PLANNER_REWRITES chooses the rules (format by default)."
    )

    @classmethod
    def from_json(cls, data: dict[str, Any], *, items_read: bool = True) -> PlanType:
        """From a plan entry of :func:`toolplan.service.operations.describe` (``items_read``:
        as :meth:`ExecutionType.from_json`)."""
        plan = data["plan"]
        execution = data.get("execution")
        return cls(
            plan_id=data["planId"],
            request_id=data["requestId"],
            query=data.get("query"),
            status=data["status"],
            created_at=data["createdAt"],
            reasoning=plan.get("reasoning"),
            steps=[PlanStepType.from_json(step) for step in plan["steps"]],
            output_steps=plan.get("outputSteps"),
            layers=[list(layer) for layer in (data.get("analysis") or {}).get("layers", [])],
            execution=ExecutionType.from_json(execution, items_read=items_read)
            if execution
            else None,
            estimate=EstimateType.from_json(data.get("estimate")),
            actual_duration_ms=data.get("actualDurationMs"),
            changes=JSON(list((data.get("meta") or {}).get("changes") or [])),
        )


@strawberry.type(name="Request", description="A user request and its plan versions.")
class RequestType:
    request_id: str
    query: str | None
    created_at: str
    plans: list[PlanType] = strawberry.field(description="Every plan version, oldest first.")
    executions: list[ExecutionType] = strawberry.field(
        description="The executions of its plans, in plan order (plans never run are left out)."
    )

    @classmethod
    def from_json(cls, data: dict[str, Any], *, items_read: bool = True) -> RequestType:
        """From a request of :func:`toolplan.service.operations.describe` (``items_read``: as
        :meth:`ExecutionType.from_json`)."""
        plans = [PlanType.from_json(plan, items_read=items_read) for plan in data["plans"]]
        return cls(
            request_id=data["requestId"],
            query=data.get("query"),
            created_at=data["createdAt"],
            plans=plans,
            executions=[plan.execution for plan in plans if plan.execution is not None],
        )


@strawberry.type(name="ToolStats", description="How a tool behaved in past executions.")
class ToolStatsType:
    calls: int
    avg_duration_ms: float | None
    failure_rate: float | None


@strawberry.type(name="Tool", description="A tool plans may call.")
class ToolType:
    name: str
    description: str
    parameters: JSON = strawberry.field(description="JSON schema of the arguments.")
    tags: list[str]
    examples: JSON
    source: str | None = strawberry.field(description="The module that contributed it.")
    stats: ToolStatsType | None

    @classmethod
    def from_info(cls, info: ToolInfo) -> ToolType:
        """From the catalog's :class:`~toolplan.tools.catalog.ToolInfo`."""
        stats = info.stats
        return cls(
            name=info.name,
            description=info.description,
            parameters=JSON(info.parameters),
            tags=list(info.tags),
            examples=JSON(list(info.examples)),
            source=info.source,
            stats=ToolStatsType(
                calls=stats.calls,
                avg_duration_ms=stats.avg_duration_ms,
                failure_rate=stats.failure_rate,
            )
            if stats
            else None,
        )


@strawberry.type(name="StepEvent", description="One step transition of a running execution.")
class StepEventType:
    kind: str = strawberry.field(
        description="started, retrying, fallback (the tool failed for good and fallbackTool is "
        "called instead), succeeded, failed, skipped, cancelled, waiting (the step waits for "
        "approval: arguments) or denied."
    )
    plan_id: str
    step_id: str
    tool: str
    attempt: int
    at: str
    error: str | None
    duration_ms: float | None
    fallback_tool: str | None = strawberry.field(
        description="On fallback: the tool called instead."
    )
    used_fallback: bool = strawberry.field(
        description="On succeeded/failed: the outcome is the fallback's."
    )
    item: int | None = strawberry.field(
        default=None,
        description="The item of a forEach step the transition is about (null: the step).",
    )
    reason: str | None = strawberry.field(
        default=None,
        description="On skipped: condition when a when condition decided it, not a failure; "
        "condition-not-boolean when it resolved to text, which is not a yes/no value.",
    )
    arguments: JSON | None = strawberry.field(
        default=None,
        description="On waiting: the arguments the tool will be called with once approved.",
    )
    cached: bool = strawberry.field(
        default=False,
        description="On succeeded: the output came from the result cache; no tool was called.",
    )

    @classmethod
    def from_event(cls, event: StepEvent) -> StepEventType:
        """From the engine's :class:`~toolplan.engine.recorder.StepEvent`."""
        return cls(
            kind=event.kind,
            plan_id=event.plan_id,
            step_id=event.step_id,
            tool=event.tool,
            attempt=event.attempt,
            at=event.at,
            error=event.error,
            duration_ms=event.duration_ms,
            fallback_tool=event.fallback_tool,
            used_fallback=event.used_fallback,
            item=event.item,
            reason=event.reason,
            arguments=JSON(event.arguments) if event.kind == "waiting" else None,
            cached=event.cached,
        )


@strawberry.type(
    name="PlanningEvent",
    description="What the planner is doing while the model works (runQuery and "
    "createPlanWithRequestId with the client's requestId): planning, each step as the model "
    "writes it, repairing, retrying, answered.",
)
class PlanningEventType:
    request_id: str
    kind: str = strawberry.field(
        description="planning (the first call is made), step (the streamed answer has one more "
        "step: step, steps, tokens), repairing (problem, problems), retrying (maxTokens: the "
        "answer stopped at the output limit), answered (steps: null when no plan was read), "
        "rewritten (changes: the plan was stored; what the rewrite rules changed in the answer) "
        "or early (streamed execution: a read-only step started while the model wrote the plan; "
        "early says what happened to it)."
    )
    model: str = strawberry.field(description="The provider:model planning.")
    attempt: int = strawberry.field(description="1 for the first plan, 2 for the first repair...")
    attempts: int
    elapsed_ms: float = strawberry.field(description="Since planning started.")
    llm_calls: int = strawberry.field(description="Answered calls so far.")
    usage: JSON = strawberry.field(description="Tokens so far: inputTokens, outputTokens.")
    step: JSON | None = strawberry.field(
        description="On step: the step as written (id, tool, parameters), not yet validated."
    )
    steps: int | None = strawberry.field(
        description="On step: the answer's steps so far; on answered: the steps read."
    )
    tokens: int | None = strawberry.field(
        description="On step: the answer's output so far, in streamed chunks (about a token each)."
    )
    problem: str | None = strawberry.field(description="On repairing: the first problem.")
    problems: int | None = strawberry.field(description="On repairing: how many.")
    max_tokens: int | None = strawberry.field(description="On retrying: the larger limit.")
    changes: JSON | None = strawberry.field(
        description="On rewritten: each change the rewrite rules made to the model's answer, "
        "as {rule, step, before, after} (an empty list: none)."
    )
    early: str | None = strawberry.field(
        default=None,
        description="On early: started, finished or failed (the call), adopted, cancelled or "
        "unused (settled when the plan was stored or planning failed), or saved (durationMs: "
        "about how much sooner the plan ends than plan-then-execute).",
    )
    duration_ms: float | None = strawberry.field(
        default=None, description="On early: how long the call ran, or the time saved."
    )
    afresh: str | None = strawberry.field(
        default=None,
        description="On repairing: the format a new plan is asked for in instead of a repair "
        "(json: the first JSON attempt of a Python planning); null when the answer is sent back "
        "with "
        "its problems.",
    )

    @classmethod
    def from_news(cls, news: PlanningNews) -> PlanningEventType:
        """From the planner's :class:`~toolplan.planning.progress.PlanningEvent`."""
        event = news.event
        return cls(
            request_id=news.request_id,
            kind=event.kind,
            model=event.model,
            attempt=event.attempt,
            attempts=event.attempts,
            elapsed_ms=round(event.elapsed_ms, 1),
            llm_calls=event.llm_calls,
            usage=JSON(dict(event.usage)),
            step=JSON(event.step) if event.step is not None else None,
            steps=event.steps,
            tokens=event.tokens,
            problem=event.problem,
            problems=event.problems if event.kind == "repairing" else None,
            afresh=event.afresh,
            max_tokens=event.max_tokens,
            changes=JSON(list(event.changes)) if event.kind == "rewritten" else None,
            early=event.early,
            duration_ms=event.duration_ms,
        )


@strawberry.type(name="QueryRunPlan", description="One plan version of a runQuery.")
class QueryRunPlanType:
    plan_id: str
    status: str = strawberry.field(
        description="Its execution's status: succeeded, partial or failed."
    )
    replan_of: str | None = strawberry.field(
        description="The plan this one replaced after a failure (null for the first)."
    )


@strawberry.type(name="QueryRun", description="A query planned, executed and answered.")
class QueryRunType:
    request_id: str
    answer: str = strawberry.field(
        description="The model's answer from the results; when the replans were spent, it says "
        "what failed."
    )
    plans: list[QueryRunPlanType] = strawberry.field(description="Every version, oldest first.")
    llm_calls: int = strawberry.field(description="Planning, replanning and answer calls.")
    usage: JSON = strawberry.field(description="Tokens over every call: inputTokens, outputTokens.")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueryRunType:
        """From ``AgentOutcome.to_json()``."""
        return cls(
            request_id=data["requestId"],
            answer=data["answer"],
            plans=[
                QueryRunPlanType(
                    plan_id=p["planId"], status=str(p["status"]), replan_of=p.get("replanOf")
                )
                for p in data["plans"]
            ],
            llm_calls=data["llmCalls"],
            usage=JSON(data["usage"]),
        )


@strawberry.type(
    name="PlanSummary",
    description="One plan of the plans list: its state, request, query and times, without the "
    "plan document (read plan(planId) for that).",
)
class PlanSummaryType:
    plan_id: str
    status: str = strawberry.field(
        description="The execution's status (queued, running, succeeded, partial, failed, "
        "cancelled), or the plan's (planned, needs_review) when it was never executed."
    )
    plan_status: str = strawberry.field(description="planned or needs_review.")
    execution_status: str | None = strawberry.field(
        description="Null when the plan was never executed."
    )
    request_id: str
    query: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    duration_ms: float | None = strawberry.field(
        description="finishedAt - startedAt of its execution; null until it finished."
    )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlanSummaryType:
        """From :func:`toolplan.service.listing.summary_json`."""
        return cls(
            plan_id=data["planId"],
            status=data["status"],
            plan_status=data["planStatus"],
            execution_status=data["executionStatus"],
            request_id=data["requestId"],
            query=data["query"],
            created_at=data["createdAt"],
            started_at=data["startedAt"],
            finished_at=data["finishedAt"],
            duration_ms=data["durationMs"],
        )


@strawberry.type(
    name="PlanList",
    description="A page of plans, newest first. nextCursor is null on the last page; pass it "
    "as after for the next one.",
)
class PlanListType:
    items: list[PlanSummaryType]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlanListType:
        """From :func:`toolplan.service.listing.page_json`."""
        return cls(
            items=[PlanSummaryType.from_json(plan) for plan in data["plans"]],
            next_cursor=data["nextCursor"],
        )
