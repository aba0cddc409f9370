"""Conformance tests of the list of recent plans (:meth:`~toolplan.store.PlanRepository.recent_plans`):
newest first, filtered by the status a plan shows (its execution's, else its own) and by request,
paged by an opaque cursor that survives other connections and new plans."""

from __future__ import annotations

from dataclasses import replace

import pytest

from toolplan.errors import InvalidInput
from toolplan.plan_format.ids import new_id
from toolplan.store import PlanRecord, Store
from toolplan_conformance.connections import other_store
from toolplan_conformance.records import new_plan, new_request, step_pairs

__all__ = [
    "test_recent_plans_cursor_pages_through_every_plan_once",
    "test_recent_plans_filter_by_plan_status_keeps_plans_never_executed",
    "test_recent_plans_filter_by_request_and_status",
    "test_recent_plans_newest_first_with_execution_status",
    "test_recent_plans_refuses_a_malformed_cursor",
]


def _plans(store: Store, count: int, *, request_id: str | None = None) -> list[PlanRecord]:
    """``count`` plans created one second apart (oldest first), each of its own request unless
    ``request_id``; two share a creation time, so the plan ID breaks the tie."""
    stored = []
    for i in range(count):
        second = min(i, count - 2) if count > 2 else i
        created_at = f"2031-01-01T00:00:{second:02d}.000Z"
        if request_id is None:
            request = replace(new_request(f"query {i}"), created_at=created_at)
            plan = replace(new_plan(request.request_id, query=f"query {i}"), created_at=created_at)
            store.save_plan(plan, request)
        else:
            plan = replace(new_plan(request_id, query=f"query {i}"), created_at=created_at)
            store.save_plan(plan)
        stored.append(plan)
    return stored


def _newest_first(plans: list[PlanRecord]) -> list[str]:
    return [p.plan_id for p in sorted(plans, key=lambda p: (p.created_at, p.plan_id), reverse=True)]


def test_recent_plans_newest_first_with_execution_status(store: Store) -> None:
    plans = _plans(store, 4)
    store.create_execution(plans[1].plan_id, step_pairs(plans[1]), status="running")
    store.set_execution_status(
        plans[1].plan_id,
        "succeeded",
        started_at="2031-01-01T00:01:00.000Z",
        finished_at="2031-01-01T00:01:02.500Z",
    )

    page = store.recent_plans(limit=10)
    assert [s.plan_id for s in page.items] == _newest_first(plans)
    assert page.next_cursor is None
    by_id = {s.plan_id: s for s in page.items}
    done = by_id[plans[1].plan_id]
    assert (done.status, done.plan_status, done.execution_status) == (
        "succeeded",
        "planned",
        "succeeded",
    )
    assert (done.started_at, done.finished_at) == (
        "2031-01-01T00:01:00.000Z",
        "2031-01-01T00:01:02.500Z",
    )
    assert (done.request_id, done.query, done.created_at) == (
        plans[1].request_id,
        "query 1",
        plans[1].created_at,
    )
    never = by_id[plans[0].plan_id]
    assert (never.status, never.execution_status, never.started_at) == ("planned", None, None)


def test_recent_plans_cursor_pages_through_every_plan_once(store: Store, store_uri: str) -> None:
    plans = _plans(store, 7)
    seen: list[str] = []
    page = store.recent_plans(limit=3)
    pages = 1
    while page.next_cursor is not None:
        seen.extend(s.plan_id for s in page.items)
        assert len(page.items) == 3
        # A cursor is plain text: another connection continues where this one stopped, and a
        # plan stored meanwhile (newer than every page) does not shift the pages.
        newer = new_request("newer")
        store.save_plan(
            replace(new_plan(newer.request_id), created_at="2032-01-01T00:00:00.000Z"), newer
        )
        with other_store(store_uri) as other:
            page = other.recent_plans(limit=3, after=page.next_cursor)
        pages += 1
    seen.extend(s.plan_id for s in page.items)
    assert pages == 3
    assert seen == _newest_first(plans)


def test_recent_plans_filter_by_plan_status_keeps_plans_never_executed(store: Store) -> None:
    plans = _plans(store, 5)
    review = replace(new_plan(plans[0].request_id), status="needs_review")
    store.save_plan(review)
    store.create_execution(plans[2].plan_id, step_pairs(plans[2]), status="running")
    store.enqueue(plans[3].plan_id, step_pairs(plans[3]))
    store.request_cancel(plans[4].plan_id, step_pairs(plans[4]))

    planned = store.recent_plans(status="planned")
    assert [s.plan_id for s in planned.items] == _newest_first([plans[0], plans[1]])
    assert [s.plan_id for s in store.recent_plans(status="needs_review").items] == [review.plan_id]
    assert [s.plan_id for s in store.recent_plans(status="running").items] == [plans[2].plan_id]
    assert [s.plan_id for s in store.recent_plans(status="queued").items] == [plans[3].plan_id]
    cancelled = store.recent_plans(status="cancelled").items
    assert [s.plan_id for s in cancelled] == [plans[4].plan_id]
    assert cancelled[0].status == "cancelled"
    assert store.recent_plans(status="failed").items == []

    first = store.recent_plans(status="planned", limit=1)
    assert [s.plan_id for s in first.items] == _newest_first([plans[0], plans[1]])[:1]
    assert first.next_cursor is not None
    rest = store.recent_plans(status="planned", limit=1, after=first.next_cursor)
    assert [s.plan_id for s in rest.items] == _newest_first([plans[0], plans[1]])[1:]
    assert rest.next_cursor is None


def test_recent_plans_filter_by_request_and_status(store: Store) -> None:
    request = new_request("versions")
    first = new_plan(request.request_id)
    store.save_plan(first, request)
    versions = [first, *_plans(store, 3, request_id=request.request_id)]
    _plans(store, 2)  # other requests
    store.create_execution(versions[1].plan_id, step_pairs(versions[1]), status="running")
    store.set_execution_status(versions[1].plan_id, "failed")

    mine = store.recent_plans(request_id=request.request_id)
    assert [s.plan_id for s in mine.items] == _newest_first(versions)
    failed = store.recent_plans(request_id=request.request_id, status="failed")
    assert [s.plan_id for s in failed.items] == [versions[1].plan_id]
    assert store.recent_plans(request_id=request.request_id, status="succeeded").items == []
    assert store.recent_plans(request_id=new_id("req")).items == []
    assert store.recent_plans(status="failed", request_id=new_id("req")).items == []


@pytest.mark.parametrize("cursor", ["", "nonsense", "bm9wZQ", "MjAzMXxub3QtYS1wbGFu"])
def test_recent_plans_refuses_a_malformed_cursor(store: Store, cursor: str) -> None:
    with pytest.raises(InvalidInput, match="cursor"):
        store.recent_plans(after=cursor)
