"""The MongoDB store's orchestration controls: cancel requests, the durations adaptive timeouts
and estimates read, and the result cache of read-only tools (a mixin of
:class:`~toolplan.store.mongo.MongoStore`, which provides the collections)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection as Many
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError

from toolplan.errors import ToolplanError
from toolplan.store._mongo_faults import guarded
from toolplan.store.codec import dumps, loads
from toolplan.store.protocol import (
    CANCELLED_BEFORE_START,
    CachedResult,
    CacheLookup,
    ExecutionRecord,
    cache_fresh,
    utc_now,
)

if TYPE_CHECKING:
    from pymongo.collection import Collection

__all__ = ["NO_OWNER", "MongoControls"]

_Document = dict[str, Any]

NO_OWNER: _Document = {"workerId": None, "leaseUntil": None, "ownerHost": None, "ownerPid": None}
"""The lease fields of an execution nobody holds."""


def _now_utc() -> datetime:
    return datetime.now(UTC)


class MongoControls:
    """Cancel requests, tool durations and the result cache, on the store's collections."""

    _executions: Collection[_Document]
    _steps: Collection[_Document]
    _cache: Collection[_Document]
    _resource_versions: Collection[_Document]

    def _translate(self, error: BaseException) -> ToolplanError:
        raise NotImplementedError

    def _upsert_steps(
        self, plan_id: str, steps: list[tuple[str, str]], initial: _Document | None = None
    ) -> None:
        raise NotImplementedError

    def get_execution(self, plan_id: str, *, items: bool = True) -> ExecutionRecord | None:
        raise NotImplementedError

    def _plan_keys(self, plan_id: str) -> _Document:
        raise NotImplementedError

    def _mark_executed(self, plan_id: str) -> None:
        raise NotImplementedError

    # -- cancel requests -----------------------------------------------------------------------

    @guarded
    def request_cancel(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        now = utc_now()
        if self._executions.find_one({"planId": plan_id}) is None:
            # Like create_execution: steps first, the execution document last (readers start
            # from it); a concurrent creator's execution stands, and is handled below.
            self._upsert_steps(
                plan_id,
                steps,
                {"status": "cancelled", "error": CANCELLED_BEFORE_START, "finishedAt": now},
            )
            with contextlib.suppress(DuplicateKeyError):
                self._executions.insert_one(
                    {
                        "planId": plan_id,
                        "status": "cancelled",
                        "createdAt": now,
                        "startedAt": None,
                        "finishedAt": now,
                        "error": None,
                        "queuedAt": None,
                        "cancelRequestedAt": now,
                        **NO_OWNER,
                        **self._plan_keys(plan_id),
                    }
                )
                self._mark_executed(plan_id)
        # Queued: nobody runs it, so it ends here. The conditional update races fairly with a
        # worker's claim (also conditional on the queued state): exactly one of them wins.
        ended = self._executions.update_one(
            {"planId": plan_id, "status": {"$in": ["queued", "waiting"]}},
            {
                "$set": {
                    "status": "cancelled",
                    "finishedAt": now,
                    "cancelRequestedAt": now,
                    **NO_OWNER,
                }
            },
        )
        if ended.modified_count == 1:
            self._steps.update_many(
                {"planId": plan_id, "status": {"$in": ["pending", "running", "waiting_approval"]}},
                {
                    "$set": {
                        "status": "cancelled",
                        "error": CANCELLED_BEFORE_START,
                        "finishedAt": now,
                    }
                },
            )
        else:
            self._executions.update_one(
                {"planId": plan_id, "status": "running", "cancelRequestedAt": None},
                {"$set": {"cancelRequestedAt": now}},
            )
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    @guarded
    def cancel_requested(self, plan_id: str) -> bool:
        document = self._executions.find_one(
            {"planId": plan_id}, projection={"cancelRequestedAt": 1}
        )
        return document is not None and document.get("cancelRequestedAt") is not None

    @guarded
    def reopen(self, plan_id: str) -> bool:
        reopened = self._executions.update_one(
            {"planId": plan_id, "status": "cancelled"},
            {
                "$set": {
                    "status": "running",
                    "finishedAt": None,
                    "error": None,
                    "cancelRequestedAt": None,
                    **NO_OWNER,
                }
            },
        )
        if reopened.modified_count != 1:
            return False
        self._steps.update_many(
            {"planId": plan_id, "status": "cancelled"},
            {"$set": {"status": "pending", "error": None, "finishedAt": None}},
        )
        return True

    # -- tool durations ------------------------------------------------------------------------

    @guarded
    def tool_durations(self, tools: Many[str], limit: int) -> dict[str, list[float]]:
        durations: dict[str, list[float]] = {}
        for tool in tools:
            cursor = (
                self._steps.find(
                    {
                        "tool": tool,
                        "status": "succeeded",
                        "attempts": 1,
                        "cached": {"$ne": True},
                        "usedFallback": {"$ne": True},
                        "durationMs": {"$ne": None},
                    },
                    projection={"durationMs": 1, "_id": 0},
                )
                .sort("finishedAt", DESCENDING)
                .limit(limit)
            )
            durations[tool] = [float(document["durationMs"]) for document in cursor]
        return durations

    # -- result cache --------------------------------------------------------------------------

    @guarded
    def cache_get(self, key: str, resources: Many[str] = ()) -> CacheLookup:
        # The TTL monitor deletes expired entries only every minute: check the time here too.
        # The entry first, then the versions: a write between the two makes it stale, never
        # the other way round.
        document = self._cache.find_one({"key": key, "expiresAt": {"$gt": _now_utc()}})
        names = sorted(set(resources))
        found: dict[str, int] = {}
        if names:
            found = {
                str(d["_id"]): int(d["version"])
                for d in self._resource_versions.find({"_id": {"$in": names}})
            }
        versions = {name: found.get(name, 0) for name in names}
        if document is None or not cache_fresh(document.get("versions"), versions):
            return CacheLookup(None, versions)
        result = CachedResult(loads(document["output"]), float(document["storedAt"]))
        return CacheLookup(result, versions)

    @guarded
    def cache_put(
        self,
        key: str,
        tool: str,
        output: Any,
        ttl_seconds: float,
        versions: Mapping[str, int] | None = None,
    ) -> None:
        now = time.time()
        entry: _Document = {
            "tool": tool,
            "output": dumps(output),
            "storedAt": now,
            "expiresAt": datetime.fromtimestamp(now + ttl_seconds, UTC),
            "versions": dict(versions or {}),
        }
        try:
            self._cache.update_one({"key": key}, {"$set": entry}, upsert=True)
        except DuplicateKeyError:
            # Another process inserted the same key at the same moment: now it exists, update it.
            self._cache.update_one({"key": key}, {"$set": entry})

    @guarded
    def cache_written(self, resources: Many[str]) -> None:
        for name in sorted(set(resources)):
            try:
                self._resource_versions.update_one(
                    {"_id": name}, {"$inc": {"version": 1}}, upsert=True
                )
            except DuplicateKeyError:  # created by another process at the same moment
                self._resource_versions.update_one({"_id": name}, {"$inc": {"version": 1}})

    @guarded
    def cache_clear(self, tool: str | None = None) -> int:
        selector: _Document = {} if tool is None else {"tool": tool}
        live = self._cache.count_documents({**selector, "expiresAt": {"$gt": _now_utc()}})
        self._cache.delete_many(selector)
        return live
