"""Records to store: requests, plans and executions of a known shape, built and saved in one call.

The conformance tests use them, and a backend's own tests may too (``from toolplan_conformance
import started_execution``)."""

from __future__ import annotations

from toolplan.plan_format.ids import new_id
from toolplan.store import ExecutionRecord, PlanRecord, RequestRecord, Store, utc_now

__all__ = [
    "new_plan",
    "new_request",
    "queued",
    "started_execution",
    "step_pairs",
    "stored_plan",
]


def new_request(query: str | None = "make a blog") -> RequestRecord:
    """A new request (not stored), with ``query`` as its text."""
    return RequestRecord(new_id("req"), query, utc_now())


def new_plan(request_id: str, *, steps: int = 3, query: str | None = "make a blog") -> PlanRecord:
    """A new ``planned`` plan (not stored) of ``request_id``: ``steps`` ``echo`` steps ``s0``,
    ``s1``, ..., each in its own layer, with an analysis and planner metadata."""
    return PlanRecord(
        plan_id=new_id("plan"),
        request_id=request_id,
        plan={
            "steps": [
                {"id": f"s{i}", "tool": "echo", "parameters": {"value": f"{{{{s{i - 1}}}}}"}}
                for i in range(steps)
            ]
        },
        analysis={"layers": [[f"s{i}"] for i in range(steps)], "criticalPathMs": 3.5},
        status="planned",
        created_at=utc_now(),
        query=query,
        meta={"model": "test:model", "llmCalls": 1, "usage": {"inputTokens": 12}},
    )


def stored_plan(store: Store, *, steps: int = 3) -> PlanRecord:
    """A plan of ``steps`` steps saved in ``store`` with its new request."""
    request = new_request()
    plan = new_plan(request.request_id, steps=steps)
    store.save_plan(plan, request)
    return plan


def step_pairs(plan: PlanRecord) -> list[tuple[str, str]]:
    """``(step ID, tool)`` of each step of ``plan``, as ``create_execution`` and ``enqueue``
    take them."""
    return [(step["id"], step["tool"]) for step in plan.plan["steps"]]


def started_execution(store: Store, *, steps: int = 3) -> ExecutionRecord:
    """The execution of a new stored plan, created ``running`` as a direct run creates it."""
    plan = stored_plan(store, steps=steps)
    return store.create_execution(plan.plan_id, step_pairs(plan), status="running")


def queued(store: Store, count: int) -> list[str]:
    """The plan IDs of ``count`` stored two-step plans enqueued in that order (oldest first)."""
    plan_ids = []
    for _ in range(count):
        plan = stored_plan(store, steps=2)
        store.enqueue(plan.plan_id, step_pairs(plan))
        plan_ids.append(plan.plan_id)
    return plan_ids
