"""What the plan page (``/ui/plans/{planId}``) shows of one plan, as one JSON object.

Everything the page draws is decided here, from the stored records: each step's state and marks,
where its box sits (:func:`toolplan.service.layout.layout` over the stored layers), the timeline
of the steps against the critical path and the estimate, and the other versions of the request
with each replan's reason. The browser only paints it; the API route only serves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, get_args

from toolplan.errors import InvalidInput, NotFound
from toolplan.plan_format.ids import require_id
from toolplan.plan_format.meta import VERSION_KEY
from toolplan.service.diagram import STATE_COLOURS
from toolplan.service.layout import layout
from toolplan.service.listing import MAX_LIMIT
from toolplan.service.operations import describe
from toolplan.store.protocol import StepStatus, Store

__all__ = [
    "DEFAULT_ITEM_PAGE",
    "FINISHED",
    "ITEMS_SHOWN",
    "MAX_ITEM_OFFSET",
    "MAX_ITEM_PAGE",
    "NOT_RUN",
    "item_page",
    "item_page_checks",
    "plan_view",
]

NOT_RUN = "not run"
"""The state of a step of a plan never executed."""
FINISHED = frozenset({"succeeded", "partial", "failed", "cancelled"})
"""Execution statuses after which nothing changes (unless resumed): the page stops listening."""
OFF_SCALE = 4.0
"""The timeline's axis covers the estimate unless it is more than this many times the run."""
_ITEM_DONE = frozenset({"succeeded", "failed", "skipped", "cancelled", "denied"})
ITEMS_SHOWN = 50
"""Items of a ``forEach`` step the page's data holds (the first ones); the page asks for more
(:func:`item_page`) when someone scrolls to them."""
DEFAULT_ITEM_PAGE = 100
"""Items in a page of :func:`item_page` when the caller names no limit (GraphQL ``items``)."""
MAX_ITEM_PAGE = 1000
"""The most items one page holds: a map of 100,000 items is read a page at a time."""
MAX_ITEM_OFFSET = 2**31 - 1
"""The largest offset of a page of items: GraphQL's ``Int``, far beyond any list a map may
have (``TOOLPLAN_MAX_ITEMS``), and within what every store's integers hold (a larger one
reached SQLite as an overflow: an internal error instead of bad input)."""
_ITEM_STATUSES: frozenset[str] = frozenset(get_args(StepStatus))


def item_page_checks(offset: int, limit: int, status: str | None = None) -> None:
    """:class:`~toolplan.errors.InvalidInput` unless ``offset``, ``limit`` and ``status``
    name a page of items :func:`item_page` serves."""
    if not 0 <= limit <= MAX_ITEM_PAGE:
        raise InvalidInput(
            f"an item page holds 0 to {MAX_ITEM_PAGE} items, not {limit}: page through the "
            "rest with offset"
        )
    if not 0 <= offset <= MAX_ITEM_OFFSET:
        raise InvalidInput(
            f"offset is the index to start from, 0 to {MAX_ITEM_OFFSET}, not {offset}"
        )
    if status is not None and status not in _ITEM_STATUSES:
        raise InvalidInput(
            f"{status!r} is not an item status: use one of {', '.join(sorted(_ITEM_STATUSES))}"
        )


def item_page(
    store: Store,
    plan_id: str,
    step_id: str,
    *,
    offset: int = 0,
    limit: int = DEFAULT_ITEM_PAGE,
    status: str | None = None,
) -> dict[str, Any] | None:
    """A page of one ``forEach`` step's items in index order (those with ``status`` only, when
    given), with the count per status: ``items``, ``counts``, ``total``, ``offset``, ``limit``,
    ``status`` and ``nextOffset`` (``None`` on the last page). ``None`` when the step's list is
    not known (not a ``forEach`` step, or not started); :class:`~toolplan.errors.NotFound` for an
    unknown plan, :class:`~toolplan.errors.InvalidInput` for a limit outside 0 to
    :data:`MAX_ITEM_PAGE`, a negative offset or an unknown status. The plan page and the
    GraphQL ``items`` field both read items through here."""
    require_id(plan_id, "plan")
    item_page_checks(offset, limit, status)
    counts = store.count_items(plan_id, step_id)
    if counts is None:
        if store.get_plan(plan_id) is None:
            raise NotFound(f"no plan {plan_id!r}")
        return None
    items = store.get_items(
        plan_id,
        step_id,
        offset=offset,
        limit=limit,
        status=status,  # type: ignore[arg-type]  # checked against StepStatus above
    )
    total = sum(counts.values())
    matching = total if status is None else counts.get(status, 0)  # type: ignore[call-overload]
    end = offset + len(items)
    return {
        "items": [item.to_json() for item in items],
        "counts": dict(counts),
        "total": total,
        "offset": offset,
        "limit": limit,
        "status": status,
        "nextOffset": end if end < matching and items else None,
    }


def plan_view(store: Store, plan_id: str, *, now: datetime | None = None) -> dict[str, Any]:
    """The page's data of ``plan_id`` (:class:`~toolplan.errors.NotFound` if unknown,
    :class:`~toolplan.errors.InvalidInput` if malformed): ``planId``, ``requestId``, ``query``,
    ``status``, ``finished``, ``estimate``, ``actualDurationMs``, ``error``, ``steps`` (in
    analysis order; a step whose call started while the model wrote the plan is marked
    ``started early``), ``graph`` (the layout), ``earlyStarts`` (the plan's
    ``meta.earlyStarts``: streamed execution), ``timeline``, ``versions`` and ``colours``."""
    require_id(plan_id, "plan")
    # Without items: a map's are counted per status and its first ITEMS_SHOWN read, so the
    # page's data stays small whatever the length of the list (the page asks for more).
    described = describe(store, plan_id, items=False)
    analysis: Mapping[str, Any] = described["analysis"]
    execution: Mapping[str, Any] | None = described["execution"]
    records = {step["id"]: step for step in execution["steps"]} if execution else {}
    critical = list(analysis.get("criticalPath") or [])
    planned = {step["id"]: step for step in described["plan"]["steps"]}
    order = [step for layer in analysis.get("layers") or [] for step in layer]
    pages = {
        step: item_page(store, plan_id, step, limit=ITEMS_SHOWN)
        for step in order
        if planned[step].get("forEach") is not None and step in records
    }
    steps = [
        _step(planned[step], records.get(step), step in critical, pages.get(step)) for step in order
    ]
    ordered: Mapping[str, Mapping[str, Any]] = analysis.get("orderEdges") or {}
    for step in steps:  # why a step waited for steps it takes nothing from
        step["after"] = [
            {"step": earlier, "on": list(on)}
            for earlier, on in (ordered.get(step["id"]) or {}).items()
        ]
    early = list((described.get("meta") or {}).get("earlyStarts") or [])
    adopted = {entry["step"] for entry in early if entry.get("status") == "adopted"}
    for step in steps:  # streamed execution: its call started while the model wrote the plan
        if step["id"] in adopted:
            step["marks"].append("started early")
    status = execution["status"] if execution else described["status"]
    return {
        "planId": described["planId"],
        "requestId": described["requestId"],
        "query": described["query"],
        "createdAt": described["createdAt"],
        "reasoning": described["plan"].get("reasoning"),
        "status": status,
        "finished": status in FINISHED,
        "error": execution.get("error") if execution else None,
        "estimate": described["estimate"],
        "actualDurationMs": described["actualDurationMs"],
        "steps": steps,
        "graph": layout(
            analysis.get("layers") or [],
            analysis.get("dependencies") or {},
            critical,
            analysis.get("orderEdges") or {},
        ).to_json(),
        "criticalPath": critical,
        "earlyStarts": early,
        "earlySavedMs": (described.get("meta") or {}).get("earlySavedMs"),
        "timeline": _timeline(steps, described["estimate"], now or datetime.now(UTC)),
        "versions": _versions(store, described["requestId"], plan_id),
        "colours": {state: list(colours) for state, colours in STATE_COLOURS.items()},
    }


def _step(
    planned: Mapping[str, Any],
    record: Mapping[str, Any] | None,
    critical: bool,
    page: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One node: state, counts, marks, and what a click shows (arguments, output, error, the
    first items of a map: ``itemDetails``, with ``itemCounts`` per status and ``itemsNext``, the
    offset of the next page, ``None`` when all are shown)."""
    record = record or {}
    for_each = planned.get("forEach")
    counts: Mapping[str, int] = page["counts"] if page else {}
    total = page["total"] if page else len(for_each) if isinstance(for_each, list) else None
    decision = record.get("decision")
    marks = []
    if record.get("cached"):
        marks.append("cached")
    if record.get("reusedFrom"):
        marks.append("reused")
    if record.get("usedFallback"):
        marks.append("fallback")
    if decision:
        marks.append(f"{decision['decision']} by {decision['by']}")
    elif record.get("status") == "waiting_approval":
        marks.append("needs approval")
    return {
        "id": planned["id"],
        "tool": planned["tool"],
        "state": record.get("status", NOT_RUN),
        "attempts": record.get("attempts", 0),
        "durationMs": record.get("durationMs"),
        "startedAt": record.get("startedAt"),
        "finishedAt": record.get("finishedAt"),
        "critical": critical,
        "marks": marks,
        "fallbackTool": (planned.get("fallback") or {}).get("tool"),
        "reason": record.get("reason"),
        "forEach": for_each is not None,
        "items": None
        if for_each is None
        else {
            "done": sum(n for status, n in counts.items() if status in _ITEM_DONE),
            "total": total,
            "failed": counts.get("failed", 0),
        },
        "parameters": planned.get("parameters"),
        "resolvedParameters": record.get("resolvedParameters"),
        "pendingArguments": record.get("pendingArguments"),
        "output": record.get("output"),
        "error": record.get("error"),
        "itemDetails": page["items"] if page else None,
        "itemCounts": dict(counts) if page else None,
        "itemsNext": page["nextOffset"] if page else None,
    }


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _timeline(
    steps: Sequence[Mapping[str, Any]], estimate: Mapping[str, Any] | None, now: datetime
) -> dict[str, Any]:
    """Bars of the steps that started, in milliseconds from the first start: ``startMs``,
    ``endMs`` (``now`` for a step still running, with ``running``), ``critical``; ``spanMs``,
    what the axis covers (the run so far or the estimate, whichever is longer, unless the
    estimate is more than :data:`OFF_SCALE` times the run: ``estimateOffScale``)."""
    starts = [_instant(step["startedAt"]) for step in steps if step["startedAt"]]
    origin = min((start for start in starts if start), default=None)
    rows: list[dict[str, Any]] = []
    if origin is not None:
        for step in steps:
            started = _instant(step["startedAt"])
            if started is None:
                continue
            finished = _instant(step["finishedAt"])
            running = finished is None and step["state"] in ("running", "waiting_approval")
            end = finished or (now if running else started)
            rows.append(
                {
                    "id": step["id"],
                    "state": step["state"],
                    "critical": step["critical"],
                    "running": running,
                    "startMs": round((started - origin).total_seconds() * 1000, 1),
                    "endMs": round(max(0.0, (end - origin).total_seconds() * 1000), 1),
                }
            )
    estimated = float(estimate["durationMs"]) if estimate else None
    ran = max([row["endMs"] for row in rows] + [1.0])
    # An estimate far beyond the run would squash every bar into a sliver: the axis then covers
    # the run, and the estimate is named as off the scale.
    off_scale = estimated is not None and bool(rows) and estimated > OFF_SCALE * ran
    span = ran if off_scale or estimated is None else max(ran, estimated)
    return {
        "origin": origin.isoformat() if origin else None,
        "rows": rows,
        "estimateMs": estimated,
        "estimateOffScale": off_scale,
        "spanMs": span,
    }


def _versions(store: Store, request_id: str, plan_id: str) -> list[dict[str, Any]]:
    """Every plan version of the request, oldest first, with its status and, for a replan, the
    plan it replaced and why (the agent loop records ``replanOf`` and ``replanReason``)."""
    statuses = {
        summary.plan_id: summary.status
        for summary in store.recent_plans(request_id=request_id, limit=MAX_LIMIT).items
    }
    return [
        {
            "planId": record.plan_id,
            "version": record.meta.get(VERSION_KEY, index),
            "status": statuses.get(record.plan_id, record.status),
            "createdAt": record.created_at,
            "replanOf": record.meta.get("replanOf"),
            "replanReason": record.meta.get("replanReason"),
            "current": record.plan_id == plan_id,
        }
        for index, record in enumerate(store.list_plans(request_id), start=1)
    ]
