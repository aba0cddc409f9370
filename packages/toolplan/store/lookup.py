"""Stored plans and requests by ID, and the gate a plan passes before it runs.

Every entry point (CLI, API, workers, planner, graphs) finds records through :func:`find_plan` and
:func:`find_request` (and the newest plan through :func:`latest_plan_id`): the ID's shape is checked before any store query, and a missing record is
:class:`~toolplan.errors.NotFound` naming the store (to
the CLI; API clients see only the ID). :func:`require_approval` is the one
"needs review" gate, used before a plan is executed or queued.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from toolplan.errors import NotFound, PlanNeedsReview
from toolplan.plan_format.ids import require_id
from toolplan.store.protocol import PlanRecord, PlanRepository, PlanStatus, RequestRecord

__all__ = ["GatedAction", "find_plan", "find_request", "latest_plan_id", "require_approval"]


def find_plan(store: PlanRepository, plan_id: str) -> PlanRecord:
    """The stored plan; :class:`InvalidInput` for a malformed ID, :class:`NotFound` if absent."""
    record = store.get_plan(require_id(plan_id, "plan"))
    if record is None:
        raise NotFound(f"plan {plan_id!r} does not exist", where=store.uri)
    return record


def find_request(store: PlanRepository, request_id: str) -> RequestRecord:
    """The stored request; :class:`InvalidInput` for a malformed ID, :class:`NotFound` if absent."""
    record = store.get_request(require_id(request_id, "req"))
    if record is None:
        raise NotFound(f"request {request_id!r} does not exist", where=store.uri)
    return record


def latest_plan_id(store: PlanRepository) -> str:
    """The ID of the newest plan in the store (the first line of ``toolplan list``: ``toolplan
    show --last``); :class:`NotFound` when it holds none. In a store others write to as well,
    that may be someone else's: their IDs are in ``toolplan list``."""
    page = store.recent_plans(limit=1)
    if not page.items:
        raise NotFound(
            "no plan is stored yet: store one with toolplan run --file PLAN or toolplan submit",
            where=store.uri,
        )
    return page.items[0].plan_id


GatedAction = Literal["executed", "queued"]
"""What the gate refuses: running the plan here, or queueing it for workers."""


def require_approval(
    plan_id: str,
    status: PlanStatus,
    plan: Mapping[str, Any],
    *,
    approve: bool,
    action: GatedAction = "executed",
    details: dict[str, object] | None = None,
) -> None:
    """Refuse a plan stored as ``needs_review`` unless ``approve``: raises
    :class:`~toolplan.errors.PlanNeedsReview` (exit code 2) saying how to inspect and approve it.

    ``plan`` is the stored plan JSON (its step confidences go into the message); ``details`` are
    extra JSON fields for ``--json`` output and API error extensions.
    """
    if status != "needs_review" or approve:
        return
    confidences = [
        step["confidence"]
        for step in plan.get("steps") or ()
        if isinstance(step, Mapping) and isinstance(step.get("confidence"), int | float)
    ]
    lowest = f" ({min(confidences):g})" if confidences else ""
    how = (
        f"run it with `toolplan execute {plan_id} --yes`"
        if action == "executed"
        else f"queue it with `toolplan execute {plan_id} --enqueue --yes`"
    )
    raise PlanNeedsReview(
        f"plan {plan_id} needs review: it is stored as needs_review because the planner's lowest "
        f"step confidence{lowest} is under the threshold, and it was NOT {action}. Check it with "
        f"`toolplan show {plan_id}`, then {how} (approve: true in the API).",
        details=details,
    )
