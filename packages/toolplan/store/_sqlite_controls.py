"""The SQLite store's orchestration controls: cancel requests, the durations adaptive timeouts
and estimates read, and the result cache of read-only tools (a mixin of
:class:`~toolplan.store.sqlite.SqliteStore`, which provides the connection and its lock)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from typing import Any

from toolplan.store._sqlite_faults import guarded
from toolplan.store.codec import dumps, loads
from toolplan.store.protocol import (
    CANCELLED_BEFORE_START,
    CachedResult,
    CacheLookup,
    ExecutionRecord,
    cache_fresh,
    utc_now,
)

__all__ = ["SqliteControls"]


class SqliteControls:
    """Cancel requests, tool durations and the result cache, on the store's connection."""

    uri: str
    busy_timeout: float
    _db: sqlite3.Connection
    _lock: threading.RLock

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def _check_file(self) -> None:
        raise NotImplementedError

    def get_execution(self, plan_id: str, *, items: bool = True) -> ExecutionRecord | None:
        raise NotImplementedError

    # -- cancel requests -----------------------------------------------------------------------

    @guarded
    def request_cancel(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        now = utc_now()
        with self._transaction() as db:
            row = db.execute(
                "SELECT status FROM tp_executions WHERE plan_id = ?", (plan_id,)
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO tp_executions (plan_id, status, created_at, finished_at,"
                    " cancel_requested_at, plan_created_at, request_id) SELECT ?, 'cancelled',"
                    " ?, ?, ?, created_at, request_id FROM tp_plans WHERE plan_id = ?",
                    (plan_id, now, now, now, plan_id),
                )
                db.execute("UPDATE tp_plans SET executed = 1 WHERE plan_id = ?", (plan_id,))
                db.executemany(
                    "INSERT INTO tp_steps (plan_id, step_id, position, tool, status, error,"
                    " finished_at) VALUES (?, ?, ?, ?, 'cancelled', ?, ?)",
                    [
                        (plan_id, step_id, i, tool, CANCELLED_BEFORE_START, now)
                        for i, (step_id, tool) in enumerate(steps)
                    ],
                )
            elif row[0] in ("queued", "waiting"):
                db.execute(
                    "UPDATE tp_executions SET status = 'cancelled', finished_at = ?,"
                    " cancel_requested_at = ?, worker_id = NULL, lease_until = NULL,"
                    " owner_host = NULL, owner_pid = NULL WHERE plan_id = ?",
                    (now, now, plan_id),
                )
                db.execute(
                    "UPDATE tp_steps SET status = 'cancelled', error = ?, finished_at = ?"
                    " WHERE plan_id = ? AND status IN ('pending', 'running', 'waiting_approval')",
                    (CANCELLED_BEFORE_START, now, plan_id),
                )
            elif row[0] == "running":
                db.execute(
                    "UPDATE tp_executions SET cancel_requested_at = COALESCE("
                    "cancel_requested_at, ?) WHERE plan_id = ?",
                    (now, plan_id),
                )
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    @guarded
    def cancel_requested(self, plan_id: str) -> bool:
        rows = self._query(
            "SELECT 1 FROM tp_executions WHERE plan_id = ? AND cancel_requested_at IS NOT NULL",
            (plan_id,),
        )
        return bool(rows)

    @guarded
    def reopen(self, plan_id: str) -> bool:
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tp_executions SET status = 'running', finished_at = NULL, error = NULL,"
                " cancel_requested_at = NULL, worker_id = NULL, lease_until = NULL,"
                " owner_host = NULL, owner_pid = NULL WHERE plan_id = ? AND status = 'cancelled'",
                (plan_id,),
            )
            if cursor.rowcount != 1:
                return False
            db.execute(
                "UPDATE tp_steps SET status = 'pending', error = NULL, finished_at = NULL"
                " WHERE plan_id = ? AND status = 'cancelled'",
                (plan_id,),
            )
        return True

    # -- tool durations ------------------------------------------------------------------------

    @guarded
    def tool_durations(self, tools: Collection[str], limit: int) -> dict[str, list[float]]:
        durations: dict[str, list[float]] = {}
        with self._lock:
            for tool in tools:
                rows = self._db.execute(
                    "SELECT duration_ms FROM tp_steps WHERE tool = ? AND status = 'succeeded'"
                    " AND attempts = 1 AND cached = 0 AND used_fallback = 0"
                    " AND duration_ms IS NOT NULL ORDER BY finished_at DESC LIMIT ?",
                    (tool, limit),
                ).fetchall()
                durations[tool] = [float(row[0]) for row in rows]
        return durations

    # -- result cache --------------------------------------------------------------------------

    @guarded
    def cache_get(self, key: str, resources: Collection[str] = ()) -> CacheLookup:
        # The entry first, then the versions: a write between the two makes it stale, never
        # the other way round.
        rows = self._query(
            "SELECT output, stored_at, versions FROM tp_cache WHERE key = ? AND expires_at > ?",
            (key, time.time()),
        )
        names = sorted(set(resources))
        found: dict[str, int] = {}
        if names:
            marks = ", ".join("?" * len(names))
            found = {
                row["resource"]: int(row["version"])
                for row in self._query(
                    f"SELECT resource, version FROM tp_resource_versions WHERE resource IN ({marks})",
                    tuple(names),
                )
            }
        versions = {name: found.get(name, 0) for name in names}
        stored = loads(rows[0]["versions"]) if rows and rows[0]["versions"] else None
        if not rows or not cache_fresh(stored, versions):
            return CacheLookup(None, versions)
        return CacheLookup(
            CachedResult(loads(rows[0]["output"]), float(rows[0]["stored_at"])), versions
        )

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
        text = dumps(output)
        with self._transaction() as db:
            # Expired entries go as new ones come: the table holds what is live, and a little.
            db.execute("DELETE FROM tp_cache WHERE expires_at <= ?", (now,))
            db.execute(
                "INSERT OR REPLACE INTO tp_cache (key, tool, output, stored_at, expires_at,"
                " versions) VALUES (?, ?, ?, ?, ?, ?)",
                (key, tool, text, now, now + ttl_seconds, dumps(dict(versions or {}))),
            )

    @guarded
    def cache_written(self, resources: Collection[str]) -> None:
        names = sorted(set(resources))
        if not names:
            return
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO tp_resource_versions (resource, version) VALUES (?, 1)"
                " ON CONFLICT(resource) DO UPDATE SET version = version + 1",
                [(name,) for name in names],
            )

    @guarded
    def cache_clear(self, tool: str | None = None) -> int:
        now = time.time()
        where, params = ("WHERE tool = ?", (tool,)) if tool is not None else ("", ())
        with self._transaction() as db:
            live = db.execute(
                f"SELECT count(*) FROM tp_cache {where}"
                + (" AND" if where else " WHERE")
                + " expires_at > ?",
                (*params, now),
            ).fetchone()[0]
            db.execute(f"DELETE FROM tp_cache {where}", params)
        return int(live)
