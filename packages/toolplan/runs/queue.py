"""The lease queue's entry: an execution queued for ``toolplan worker`` processes
(:mod:`toolplan.adapters.queue_worker` claims and runs them)."""

from __future__ import annotations

from toolplan.plan_format.plan import parse_plan
from toolplan.store.lookup import find_plan, require_approval
from toolplan.store.protocol import ExecutionRecord, Store

__all__ = ["enqueue_plan"]


def enqueue_plan(
    store: Store, plan_id: str, *, approve: bool = False, resume: bool = False
) -> ExecutionRecord:
    """Queue a stored plan for workers and return its execution record.

    The status is ``queued``, unless the execution already finished or a live process is running
    it: then it is returned unchanged (queueing twice is harmless). An execution abandoned by a
    dead ``toolplan execute`` is queued again and a worker resumes it; a ``cancelled`` one only
    with ``resume`` (a worker continues it, keeping its finished steps). Raises
    :class:`~toolplan.errors.PlanNeedsReview` for a ``needs_review`` plan unless ``approve``.
    """
    record = find_plan(store, plan_id)
    require_approval(record.plan_id, record.status, record.plan, approve=approve, action="queued")
    steps = [(step.id, step.tool) for step in parse_plan(record.plan).steps]
    if resume:
        store.reopen(plan_id)
    return store.enqueue(plan_id, steps)
