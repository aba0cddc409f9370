"""The list of recent plans (``toolplan list``, GraphQL ``plans``): inputs checked once here,
then one store read through its indexes (:meth:`~toolplan.store.PlanRepository.recent_plans`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, get_args

from toolplan.errors import InvalidInput
from toolplan.plan_format.ids import require_id
from toolplan.store.protocol import ListedStatus, PlanPage, PlanRepository, PlanSummary

__all__ = [
    "DEFAULT_LIMIT",
    "LISTED_STATUSES",
    "MAX_LIMIT",
    "duration_ms",
    "page_json",
    "recent_plans",
    "summary_json",
]

DEFAULT_LIMIT = 20
MAX_LIMIT = 500
"""The most plans one page holds: page on with the cursor for more."""

LISTED_STATUSES: tuple[str, ...] = get_args(ListedStatus)


def recent_plans(
    store: PlanRepository,
    *,
    status: str | None = None,
    request_id: str | None = None,
    limit: int = DEFAULT_LIMIT,
    after: str | None = None,
) -> PlanPage:
    """Plans newest first with their execution's status (or their own, never executed), at
    most ``limit``, from after the cursor ``after`` (the ``next_cursor`` of the page before).

    :class:`~toolplan.errors.InvalidInput` for an unknown status, a malformed request ID or
    cursor, or a limit outside 1..:data:`MAX_LIMIT`."""
    if status is not None and status not in LISTED_STATUSES:
        raise InvalidInput(
            f"{status!r} is not a plan status; use one of {', '.join(LISTED_STATUSES)}"
        )
    if request_id is not None:
        require_id(request_id, "req")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"the limit must be between 1 and {MAX_LIMIT}, not {limit}")
    return store.recent_plans(
        status=status,  # type: ignore[arg-type]  # checked against ListedStatus above
        request_id=request_id,
        limit=limit,
        after=after,
    )


def duration_ms(summary: PlanSummary) -> float | None:
    """Wall time of the plan's execution (``finishedAt - startedAt``), once it finished."""
    if not summary.started_at or not summary.finished_at:
        return None
    started = datetime.fromisoformat(summary.started_at.replace("Z", "+00:00"))
    finished = datetime.fromisoformat(summary.finished_at.replace("Z", "+00:00"))
    return round((finished - started).total_seconds() * 1000, 1)


def summary_json(summary: PlanSummary) -> dict[str, Any]:
    """One listed plan as ``toolplan list --json`` prints it and GraphQL ``plans`` returns it."""
    return {
        "planId": summary.plan_id,
        "status": summary.status,
        "planStatus": summary.plan_status,
        "executionStatus": summary.execution_status,
        "requestId": summary.request_id,
        "query": summary.query,
        "createdAt": summary.created_at,
        "startedAt": summary.started_at,
        "finishedAt": summary.finished_at,
        "durationMs": duration_ms(summary),
    }


def page_json(page: PlanPage) -> dict[str, Any]:
    """A page: ``{"plans": [...], "nextCursor": ...}``."""
    return {"plans": [summary_json(s) for s in page.items], "nextCursor": page.next_cursor}
