"""A minimal in-memory :class:`~toolplan.store.protocol.Store`: the "no persistence" row.

It implements the whole protocol with dicts behind one lock, and LangGraph's ``InMemorySaver`` as
the checkpointer, so the engine runs unchanged and only the durable writes disappear.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from toolplan.builtin_tools._records import MemoryRecords
from toolplan.errors import InvalidInput
from toolplan.store.protocol import (
    CANCELLED_BEFORE_START,
    STEP_FIELDS,
    CachedResult,
    CacheLookup,
    ExecutionRecord,
    ExecutionStatus,
    ItemRecord,
    ListedStatus,
    PlanPage,
    PlanRecord,
    PlanSummary,
    RequestRecord,
    StepRecord,
    StepStatus,
    cache_fresh,
    decode_plan_cursor,
    encode_plan_cursor,
    lease_holder,
    utc_now,
)
from toolplan.tools.catalog import ToolStats

__all__ = ["MemoryStore"]

_DURATIONS_KEPT = 400
"""Recent durations kept per tool (more than a timeout policy's history reads: 100 by default)."""


_NO_OWNER: dict[str, Any] = {
    "worker_id": None,
    "lease_until": None,
    "owner_host": None,
    "owner_pid": None,
}


def _owner(worker_id: str, until: float) -> dict[str, Any]:
    host, pid = lease_holder()
    return {"worker_id": worker_id, "lease_until": until, "owner_host": host, "owner_pid": pid}


def _copied(value: Any) -> Any:
    """A copy of a stored field that shares nothing mutable with the store, as a read from a
    database would be: JSON objects and lists are copied, everything else a field holds (text,
    numbers, frozen records) is immutable. Cheaper than ``copy.deepcopy``, which the engine's
    reads of a whole execution paid per step and per field."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


class MemoryStore:
    """Everything in process memory; nothing survives the process."""

    in_memory = True
    """No I/O to wait for: the engine's recorder writes on the event loop, with no thread hop."""

    def __init__(self) -> None:
        self.uri = "memory://"
        self._lock = threading.RLock()
        self._requests: dict[str, RequestRecord] = {}
        self._plans: dict[str, PlanRecord] = {}
        self._executions: dict[str, dict[str, Any]] = {}
        self._steps: dict[str, dict[str, dict[str, Any]]] = {}
        self._records = MemoryRecords()
        self._cache: dict[str, tuple[str, Any, float, float, dict[str, int]]] = {}
        self._versions: dict[str, int] = {}
        """key -> (tool, output, stored_at, expires_at)"""
        self._saver = InMemorySaver()
        self._durations: dict[str, deque[tuple[str, float]]] = {}
        """Per tool, (finished at, ms) of recent first-attempt successes, kept as steps succeed:
        what SQLite's index gives ``tool_durations``, so a run's fixed cost does not grow with
        every step the store has seen (the scheduling bench runs hundreds of plans on one)."""

    # requests and plans
    def save_plan(self, plan: PlanRecord, request: RequestRecord | None = None) -> None:
        with self._lock:
            if plan.plan_id in self._plans:
                raise InvalidInput(f"plan {plan.plan_id!r} exists already (plans are immutable)")
            if request is not None:
                if request.request_id in self._requests:
                    raise InvalidInput(f"request {request.request_id!r} exists already")
                self._requests[request.request_id] = request
            elif plan.request_id not in self._requests:
                raise InvalidInput(f"request {plan.request_id!r} does not exist")
            self._plans[plan.plan_id] = plan

    def get_request(self, request_id: str) -> RequestRecord | None:
        return self._requests.get(request_id)

    def get_plan(self, plan_id: str) -> PlanRecord | None:
        return self._plans.get(plan_id)

    def list_plans(self, request_id: str) -> list[PlanRecord]:
        with self._lock:
            return [p for p in self._plans.values() if p.request_id == request_id]

    def recent_plans(
        self,
        *,
        status: ListedStatus | None = None,
        request_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> PlanPage:
        """A sort of every plan: fine for a benchmark's store, not what the real ones do."""
        limit = max(1, limit)
        cursor = decode_plan_cursor(after) if after is not None else None
        with self._lock:
            rows = [
                PlanSummary(
                    plan_id=p.plan_id,
                    request_id=p.request_id,
                    query=p.query,
                    plan_status=p.status,
                    created_at=p.created_at,
                    execution_status=(self._executions.get(p.plan_id) or {}).get("status"),
                    started_at=(self._executions.get(p.plan_id) or {}).get("started_at"),
                    finished_at=(self._executions.get(p.plan_id) or {}).get("finished_at"),
                )
                for p in self._plans.values()
            ]
        rows = [
            r
            for r in rows
            if (status is None or r.status == status)
            and (request_id is None or r.request_id == request_id)
            and (cursor is None or (r.created_at, r.plan_id) < cursor)
        ]
        rows.sort(key=lambda r: (r.created_at, r.plan_id), reverse=True)
        more = len(rows) > limit
        return PlanPage(rows[:limit], encode_plan_cursor(rows[limit - 1]) if more else None)

    # executions
    def create_execution(
        self, plan_id: str, steps: list[tuple[str, str]], *, status: ExecutionStatus
    ) -> ExecutionRecord:
        with self._lock:
            if plan_id not in self._executions:
                self._executions[plan_id] = {
                    "plan_id": plan_id,
                    "status": status,
                    "created_at": utc_now(),
                    "queued_at": time.time() if status == "queued" else None,
                }
                self._steps[plan_id] = {
                    step_id: {"step_id": step_id, "tool": tool} for step_id, tool in steps
                }
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    def get_execution(self, plan_id: str, *, items: bool = True) -> ExecutionRecord | None:
        with self._lock:
            row = self._executions.get(plan_id)
            if row is None:
                return None
            steps = [self._step_record(s, items) for s in self._steps[plan_id].values()]
            return ExecutionRecord(
                plan_id=plan_id,
                status=row["status"],
                steps=steps,
                created_at=row["created_at"],
                started_at=row.get("started_at"),
                finished_at=row.get("finished_at"),
                error=row.get("error"),
                worker_id=row.get("worker_id"),
                lease_until=row.get("lease_until"),
                owner_host=row.get("owner_host"),
                owner_pid=row.get("owner_pid"),
                cancel_requested_at=row.get("cancel_requested_at"),
            )

    @staticmethod
    def _step_record(row: dict[str, Any], items: bool) -> StepRecord:
        fields = {k: _copied(v) for k, v in row.items() if k != "items"}
        stored = row.get("items")
        listed = None if stored is None or not items else list(stored)
        return StepRecord(**fields, items=copy.deepcopy(listed))

    def get_items(
        self,
        plan_id: str,
        step_id: str,
        *,
        offset: int = 0,
        limit: int | None = None,
        status: StepStatus | None = None,
    ) -> list[ItemRecord]:
        with self._lock:
            stored = self._steps.get(plan_id, {}).get(step_id, {}).get("items") or []
            chosen = [i for i in stored if status is None or i.status == status]
        end = None if limit is None else max(0, offset) + max(0, limit)
        return copy.deepcopy(chosen[max(0, offset) : end])

    def count_items(self, plan_id: str, step_id: str) -> dict[StepStatus, int] | None:
        with self._lock:
            stored = self._steps.get(plan_id, {}).get(step_id, {}).get("items")
            if stored is None:
                return None
            counts: dict[StepStatus, int] = {}
            for item in stored:
                counts[item.status] = counts.get(item.status, 0) + 1
            return counts

    def update_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> None:
        unknown = set(changes) - STEP_FIELDS
        if unknown:
            raise ValueError(f"cannot update step fields {sorted(unknown)}")
        with self._lock:
            try:
                row = self._steps[plan_id][step_id]
            except KeyError:
                raise KeyError(f"no step {step_id!r} in the execution of {plan_id!r}") from None
            changes = dict(changes)
            item = changes.pop("item", None)
            if changes.get("items") is not None:
                changes["items"] = list(changes["items"])  # the store's own list
            row.update(changes)
            if changes.get("status") == "succeeded":
                self._learn_duration(row)
            if item is not None:  # one element of a forEach step's items, replaced in place
                stored = row["items"] = row.get("items") or []
                if item.index < len(stored) and stored[item.index].index == item.index:
                    stored[item.index] = item
                else:
                    row["items"] = sorted(
                        [i for i in stored if i.index != item.index] + [item],
                        key=lambda i: i.index,
                    )

    def decide_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> bool:
        with self._lock:
            try:
                row = self._steps[plan_id][step_id]
            except KeyError:
                raise KeyError(f"no step {step_id!r} in the execution of {plan_id!r}") from None
            if row.get("status") != "waiting_approval":
                return False
            self.update_step(plan_id, step_id, changes)
            return True

    def update_steps(self, plan_id: str, updates: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        unknown = {name for _, changes in updates for name in changes} - STEP_FIELDS
        if unknown:
            raise ValueError(f"cannot update step fields {sorted(unknown)}")
        with self._lock:
            for step_id, changes in updates:
                self.update_step(plan_id, step_id, changes)

    def set_execution_status(
        self,
        plan_id: str,
        status: ExecutionStatus,
        *,
        error: str | None = None,
        started_at: str | None = None,
        finished_at: str | None = None,
    ) -> None:
        with self._lock:
            row = self._executions[plan_id]
            row.update(status=status, error=error)
            if started_at is not None:
                row["started_at"] = started_at
            if finished_at is not None:
                row["finished_at"] = finished_at

    def request_cancel(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        now = utc_now()
        with self._lock:
            if plan_id not in self._executions:
                self.create_execution(plan_id, steps, status="cancelled")
                self._executions[plan_id].update(finished_at=now, cancel_requested_at=now)
                self._cancel_steps(plan_id, now)
            row = self._executions[plan_id]
            if row["status"] in ("queued", "waiting"):
                row.update(
                    status="cancelled", finished_at=now, cancel_requested_at=now, **_NO_OWNER
                )
                self._cancel_steps(plan_id, now)
            elif row["status"] == "running" and row.get("cancel_requested_at") is None:
                row["cancel_requested_at"] = now
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    def _cancel_steps(self, plan_id: str, now: str) -> None:
        for step in self._steps[plan_id].values():
            if step.get("status", "pending") in ("pending", "running", "waiting_approval"):
                step.update(status="cancelled", error=CANCELLED_BEFORE_START, finished_at=now)

    def cancel_requested(self, plan_id: str) -> bool:
        with self._lock:
            row = self._executions.get(plan_id)
            return row is not None and row.get("cancel_requested_at") is not None

    def reopen(self, plan_id: str) -> bool:
        with self._lock:
            row = self._executions.get(plan_id)
            if row is None or row["status"] != "cancelled":
                return False
            row.update(
                status="running",
                finished_at=None,
                error=None,
                cancel_requested_at=None,
                **_NO_OWNER,
            )
            for step in self._steps[plan_id].values():
                if step.get("status") == "cancelled":
                    step.update(status="pending", error=None, finished_at=None)
            return True

    # work queue
    def enqueue(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        self.create_execution(plan_id, steps, status="queued")
        with self._lock:
            row = self._executions[plan_id]
            lease = row.get("lease_until")
            unfinished = row["status"] in ("queued", "running", "waiting")
            if unfinished and (lease is None or lease < time.time()):
                row.update(status="queued", queued_at=time.time(), **_NO_OWNER)
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    def claim(self, worker_id: str, lease_seconds: float) -> str | None:
        now = time.time()
        with self._lock:
            candidates = [
                row
                for row in self._executions.values()
                if row["status"] == "queued"
                or (
                    row["status"] == "running"
                    and row.get("queued_at") is not None
                    and (row.get("lease_until") or 0) < now
                )
            ]
            if not candidates:
                return None
            row = min(candidates, key=lambda r: r.get("queued_at") or 0)
            row.update(status="running", **_owner(worker_id, now + lease_seconds))
            return str(row["plan_id"])

    def acquire(
        self, plan_id: str, worker_id: str, lease_seconds: float, *, expected_owner: str | None
    ) -> bool:
        now = time.time()
        with self._lock:
            row = self._executions.get(plan_id)
            if row is None or row["status"] not in ("queued", "running", "waiting"):
                return False
            owner, lease = row.get("worker_id"), row.get("lease_until")
            if (
                owner is None
                or lease is None
                or lease < now
                or owner in (worker_id, expected_owner)
            ):
                row.update(status="running", **_owner(worker_id, now + lease_seconds))
                return True
            return False

    def renew_lease(self, plan_id: str, worker_id: str, lease_seconds: float) -> bool:
        with self._lock:
            row = self._executions.get(plan_id)
            if row is None or row.get("worker_id") != worker_id or row["status"] != "running":
                return False
            row["lease_until"] = time.time() + lease_seconds
            return True

    def release(self, plan_id: str, worker_id: str) -> None:
        with self._lock:
            row = self._executions.get(plan_id)
            if row is not None and row.get("worker_id") == worker_id:
                if row["status"] == "running":
                    row["status"] = "queued"
                row.update(**_NO_OWNER)

    # statistics and toolset data
    def tool_stats(self) -> dict[str, ToolStats]:
        with self._lock:
            per_tool: dict[str, list[dict[str, Any]]] = {}
            for steps in self._steps.values():
                for step in steps.values():
                    if step.get("status") in ("succeeded", "failed") and not step.get("cached"):
                        per_tool.setdefault(step["tool"], []).append(step)
        stats = {}
        for tool, records in per_tool.items():
            durations = [
                r["duration_ms"]
                for r in records
                if r["status"] == "succeeded" and r.get("duration_ms") is not None
            ]
            failures = sum(1 for r in records if r["status"] == "failed")
            stats[tool] = ToolStats(
                len(records),
                sum(durations) / len(durations) if durations else None,
                failures / len(records),
            )
        return stats

    def _learn_duration(self, row: Mapping[str, Any]) -> None:
        if (
            row.get("attempts") == 1
            and not row.get("cached")
            and not row.get("used_fallback")
            and row.get("duration_ms") is not None
        ):
            kept = self._durations.setdefault(row["tool"], deque(maxlen=_DURATIONS_KEPT))
            kept.append((row.get("finished_at") or "", row["duration_ms"]))

    def tool_durations(self, tools: Collection[str], limit: int) -> dict[str, list[float]]:
        with self._lock:
            found = {tool: list(self._durations.get(tool, ())) for tool in set(tools)}
        # Newest first; kept in write order, which is nearly finish order: a cheap sort.
        return {
            tool: [ms for _, ms in sorted(rows, reverse=True)[: max(0, limit)]]
            for tool, rows in found.items()
        }

    # result cache
    def cache_get(self, key: str, resources: Collection[str] = ()) -> CacheLookup:
        with self._lock:
            entry = self._cache.get(key)
            versions = {name: self._versions.get(name, 0) for name in sorted(set(resources))}
        if entry is None or entry[3] <= time.time() or not cache_fresh(entry[4], versions):
            return CacheLookup(None, versions)
        return CacheLookup(CachedResult(copy.deepcopy(entry[1]), entry[2]), versions)

    def cache_put(
        self,
        key: str,
        tool: str,
        output: Any,
        ttl_seconds: float,
        versions: Mapping[str, int] | None = None,
    ) -> None:
        now = time.time()
        with self._lock:
            entry = (tool, copy.deepcopy(output), now, now + ttl_seconds, dict(versions or {}))
            self._cache[key] = entry

    def cache_written(self, resources: Collection[str]) -> None:
        with self._lock:
            for name in set(resources):
                self._versions[name] = self._versions.get(name, 0) + 1

    def cache_clear(self, tool: str | None = None) -> int:
        now = time.time()
        with self._lock:
            doomed = [k for k, e in self._cache.items() if tool is None or e[0] == tool]
            live = sum(1 for k in doomed if self._cache[k][3] > now)
            for key in doomed:
                del self._cache[key]
        return live

    def put_record(
        self,
        collection: str,
        record: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        lookup_keys: Sequence[str] = (),
    ) -> dict[str, Any]:
        return self._records.put_record(
            collection, record, idempotency_key=idempotency_key, lookup_keys=lookup_keys
        )

    def find_records(
        self,
        collection: str,
        where: Mapping[str, Any],
        *,
        lookup_keys: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        return self._records.find_records(collection, where, lookup_keys=lookup_keys)

    # checkpoints and lifecycle
    @asynccontextmanager
    async def keep_checkpointer(self) -> AsyncIterator[None]:
        """Nothing to keep: this store's checkpointer is shared already."""
        yield

    @asynccontextmanager
    async def checkpointer(self) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        yield self._saver

    def close(self) -> None:
        return None
