"""The embedded default store: one SQLite file holds requests, plans, executions, step records,
toolset records and the LangGraph checkpoints (``AsyncSqliteSaver``, in its own tables).

Durability: WAL journal with ``synchronous=NORMAL``. Every committed transition survives a killed
process (``kill -9``); an operating-system crash may lose the last few commits.

Faults: every method is :func:`~toolplan.store._sqlite_faults.guarded`: a lock held by another
process is waited for (``TOOLPLAN_STORE_BUSY_TIMEOUT``), and every ``sqlite3`` error becomes
``StoreUnavailable`` or ``InvalidInput`` with one line naming the file and the cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolplan.errors import InvalidInput, StoreUnavailable
from toolplan.store._kept_saver import KeptCheckpointers
from toolplan.store._sqlite_controls import SqliteControls
from toolplan.store._sqlite_faults import (
    DEFAULT_BUSY_TIMEOUT,
    file_gone,
    guarded,
    is_busy,
    retry_busy,
    translate,
)
from toolplan.store._sqlite_items import (
    SqliteItems,
    Statement,
    apply,
    item_statements,
    move_items_to_rows,
)
from toolplan.store.codec import dumps, loads
from toolplan.store.protocol import (
    EXECUTION_STATUSES,
    STEP_FIELDS,
    Decision,
    ExecutionRecord,
    ExecutionStatus,
    ListedStatus,
    PlanPage,
    PlanRecord,
    PlanSummary,
    RequestRecord,
    StepRecord,
    StoreOptions,
    ToolStats,
    decode_plan_cursor,
    encode_plan_cursor,
    lease_holder,
    utc_now,
)

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

__all__ = ["SqliteStore", "open_sqlite"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tp_requests (
    request_id TEXT PRIMARY KEY,
    query TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tp_plans (
    plan_id TEXT PRIMARY KEY,
    request_id TEXT NOT NULL REFERENCES tp_requests(request_id),
    query TEXT,
    plan TEXT NOT NULL,
    analysis TEXT NOT NULL,
    status TEXT NOT NULL,
    meta TEXT NOT NULL,
    created_at TEXT NOT NULL,
    executed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tp_plans_by_request ON tp_plans(request_id, created_at);
CREATE TABLE IF NOT EXISTS tp_executions (
    plan_id TEXT PRIMARY KEY REFERENCES tp_plans(plan_id),
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    error TEXT,
    worker_id TEXT,
    lease_until REAL,
    owner_host TEXT,
    owner_pid INTEGER,
    queued_at REAL,
    cancel_requested_at TEXT,
    plan_created_at TEXT,
    request_id TEXT
);
CREATE INDEX IF NOT EXISTS tp_executions_queue ON tp_executions(status, queued_at);
CREATE TABLE IF NOT EXISTS tp_steps (
    plan_id TEXT NOT NULL REFERENCES tp_executions(plan_id),
    step_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    tool TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    resolved_parameters TEXT,
    output TEXT,
    error TEXT,
    started_at TEXT,
    finished_at TEXT,
    duration_ms REAL,
    output_truncated INTEGER NOT NULL DEFAULT 0,
    used_fallback INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    cache_age_seconds REAL,
    timeout REAL,
    timeout_source TEXT,
    reused_from TEXT,
    reason TEXT,
    items TEXT,
    decision TEXT,
    item_count INTEGER,
    PRIMARY KEY (plan_id, step_id)
);
CREATE TABLE IF NOT EXISTS tp_items (
    plan_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (plan_id, step_id, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tp_steps_by_tool ON tp_steps(tool, status);
CREATE INDEX IF NOT EXISTS tp_steps_by_tool_time ON tp_steps(tool, status, finished_at);
CREATE TABLE IF NOT EXISTS tp_records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    idempotency_key TEXT,
    doc TEXT NOT NULL,
    UNIQUE (collection, id),
    UNIQUE (collection, idempotency_key)
);
CREATE TABLE IF NOT EXISTS tp_record_keys (
    collection TEXT NOT NULL,
    lookup_key TEXT NOT NULL,
    seq INTEGER NOT NULL REFERENCES tp_records(seq) ON DELETE CASCADE,
    PRIMARY KEY (collection, lookup_key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tp_cache (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    output TEXT NOT NULL,
    stored_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    versions TEXT
);
CREATE TABLE IF NOT EXISTS tp_resource_versions (
    resource TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tp_cache_by_expiry ON tp_cache(expires_at);
CREATE INDEX IF NOT EXISTS tp_cache_by_tool ON tp_cache(tool);
"""

_TABLES = _SCHEMA.count("CREATE TABLE")

_LIST_INDEXES = {
    "tp_plans_by_time": "ON tp_plans(created_at, plan_id)",
    "tp_plans_by_request_time": "ON tp_plans(request_id, created_at, plan_id)",
    "tp_plans_unexecuted": "ON tp_plans(status, created_at, plan_id) WHERE executed = 0",
    "tp_executions_by_status": "ON tp_executions(status, plan_created_at, plan_id)",
}
"""The indexes ``recent_plans`` reads, each ordered by its sort key: every plan; a request's; plans never
executed, by plan status; executions by status (they carry their plan's creation time and
request, copied when created). Created when missing, so files from before them get them."""

_SUMMARY_COLUMNS = (
    "p.plan_id, p.request_id, p.query, p.status AS plan_status, p.created_at,"
    " e.status AS execution_status, e.started_at, e.finished_at"
)

_KEYS_PER_QUERY = 500
"""Lookup keys bound into one ``IN (...)`` (SQLite allows 32,766 variables; older builds 999)."""

_JSON_STEP_FIELDS = frozenset({"resolved_parameters", "output"})


_ADDED_COLUMNS = {
    "tp_executions": (
        "owner_host TEXT",
        "owner_pid INTEGER",
        "cancel_requested_at TEXT",
        "plan_created_at TEXT",
        "request_id TEXT",
    ),
    "tp_plans": ("executed INTEGER NOT NULL DEFAULT 0",),
    "tp_cache": ("versions TEXT",),  # NULL: stored before versions were kept, never served
    "tp_steps": (
        "cached INTEGER NOT NULL DEFAULT 0",
        "cache_age_seconds REAL",
        "timeout REAL",
        "timeout_source TEXT",
        "reused_from TEXT",
        "reason TEXT",
        "items TEXT",
        "decision TEXT",
        "item_count INTEGER",
    ),
}
"""Columns added after the first release: files created before get them when opened."""


def _add_missing_columns(db: sqlite3.Connection) -> None:
    for table, columns in _ADDED_COLUMNS.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        missing = [c for c in columns if c.split()[0] not in have]
        if not missing:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            for column in missing:
                if column.split()[0] not in have:  # another process may have added it meanwhile
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            if table == "tp_executions" and "plan_created_at" not in have:
                # Executions stored before the plan list: copy what it sorts and filters on.
                db.execute(
                    "UPDATE tp_executions SET (plan_created_at, request_id) = (SELECT"
                    " created_at, request_id FROM tp_plans WHERE plan_id = tp_executions.plan_id)"
                )
            if table == "tp_steps" and "item_count" not in have:
                move_items_to_rows(db)
            if table == "tp_plans" and "executed" not in have:
                db.execute(
                    "UPDATE tp_plans SET executed = 1"
                    " WHERE plan_id IN (SELECT plan_id FROM tp_executions)"
                )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


def _add_missing_indexes(db: sqlite3.Connection) -> None:
    present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    missing = [name for name in _LIST_INDEXES if name not in present]
    if not missing:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for name in missing:
            db.execute(f"CREATE INDEX IF NOT EXISTS {name} {_LIST_INDEXES[name]}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


class SqliteStore(SqliteItems, SqliteControls):
    """:class:`~toolplan.store.protocol.Store` on one SQLite file."""

    def __init__(
        self, path: str | Path, *, uri: str | None = None, busy_timeout: float | None = None
    ) -> None:
        self.path = Path(path)
        self.uri = uri or f"sqlite:///{self.path}"
        self.busy_timeout = DEFAULT_BUSY_TIMEOUT if busy_timeout is None else busy_timeout
        """Seconds to wait for a lock another process holds (``TOOLPLAN_STORE_BUSY_TIMEOUT``,
        which the settings read: :class:`~toolplan.store.StoreOptions`)."""
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreUnavailable(
                f"cannot open the SQLite store {self.uri!r}: cannot create its directory "
                f"({error.strerror})"
            ) from None
        self._db = retry_busy(self._connect, self.uri, self.busy_timeout)
        self._identity = self._file_identity()
        self._kept_savers = KeptCheckpointers(self._open_checkpointer)

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return stat.st_dev, stat.st_ino

    def _check_file(self) -> None:
        """The file must still be the one opened: a deleted or replaced file would swallow every
        later write in WAL mode (an ``os.stat``, microseconds, before each store call)."""
        if self._file_identity() != self._identity:
            raise file_gone(self.uri)

    def _connect(self) -> sqlite3.Connection:
        """Open the file and create the schema. Several processes may do this at once on a new
        file: each step that writes takes the write lock up front, and a busy step is retried."""
        db = sqlite3.connect(
            self.path,
            check_same_thread=False,
            isolation_level=None,
            # SQLite's own busy handler waits in short slices; retry_busy bounds the total wait.
            timeout=min(self.busy_timeout, 1.0),
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            present = db.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'tp_%'"
            ).fetchone()[0]
            if present < _TABLES:
                # One transaction holding the write lock from the start: no reader-to-writer
                # upgrade, which SQLite refuses at once (without waiting) under contention.
                db.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
            _add_missing_columns(db)
            _add_missing_indexes(db)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.close()
            raise
        return db

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, rolled back if anything fails (the commit too),
        so a failed attempt leaves nothing and :func:`guarded` may run the method again."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            cursor = self._db.execute(sql, params)
            cursor.row_factory = sqlite3.Row
            return cursor.fetchall()

    # -- requests and plans --------------------------------------------------------------------

    @guarded
    def save_plan(self, plan: PlanRecord, request: RequestRecord | None = None) -> None:
        try:
            with self._transaction() as db:
                if request is not None:
                    db.execute(
                        "INSERT INTO tp_requests (request_id, query, created_at) VALUES (?, ?, ?)",
                        (request.request_id, request.query, request.created_at),
                    )
                elif not db.execute(
                    "SELECT 1 FROM tp_requests WHERE request_id = ?", (plan.request_id,)
                ).fetchone():
                    raise InvalidInput(f"request {plan.request_id!r} does not exist")
                db.execute(
                    "INSERT INTO tp_plans (plan_id, request_id, query, plan, analysis, status,"
                    " meta, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        plan.plan_id,
                        plan.request_id,
                        plan.query,
                        dumps(plan.plan),
                        dumps(plan.analysis),
                        plan.status,
                        dumps(plan.meta),
                        plan.created_at,
                    ),
                )
        except sqlite3.IntegrityError as error:
            raise InvalidInput(
                f"cannot store plan {plan.plan_id!r}: {error} (plans are immutable; "
                "store a new version under a new plan ID)"
            ) from None

    @guarded
    def get_request(self, request_id: str) -> RequestRecord | None:
        rows = self._query("SELECT * FROM tp_requests WHERE request_id = ?", (request_id,))
        if not rows:
            return None
        row = rows[0]
        return RequestRecord(row["request_id"], row["query"], row["created_at"])

    @staticmethod
    def _plan_from(row: sqlite3.Row) -> PlanRecord:
        return PlanRecord(
            plan_id=row["plan_id"],
            request_id=row["request_id"],
            plan=loads(row["plan"]),
            analysis=loads(row["analysis"]),
            status=row["status"],
            created_at=row["created_at"],
            query=row["query"],
            meta=loads(row["meta"]),
        )

    @guarded
    def get_plan(self, plan_id: str) -> PlanRecord | None:
        rows = self._query("SELECT * FROM tp_plans WHERE plan_id = ?", (plan_id,))
        return self._plan_from(rows[0]) if rows else None

    @guarded
    def list_plans(self, request_id: str) -> list[PlanRecord]:
        rows = self._query(
            "SELECT * FROM tp_plans WHERE request_id = ? ORDER BY created_at, rowid",
            (request_id,),
        )
        return [self._plan_from(row) for row in rows]

    @guarded
    def recent_plans(
        self,
        *,
        status: ListedStatus | None = None,
        request_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> PlanPage:
        limit = max(1, limit)
        where: list[str] = []
        params: list[Any] = []
        if status in EXECUTION_STATUSES:
            # Executions of that status, through their own index (sorted by their plan's time).
            source = "tp_executions e JOIN tp_plans p ON p.plan_id = e.plan_id"
            key = ("e.plan_created_at", "e.plan_id")
            where.append("e.status = ?")
            params.append(status)
            if request_id is not None:
                where.append("e.request_id = ?")
                params.append(request_id)
        else:
            source = "tp_plans p LEFT JOIN tp_executions e ON e.plan_id = p.plan_id"
            key = ("p.created_at", "p.plan_id")
            if status is not None:
                # Plans never executed, through the partial index (``executed = 0`` literally).
                where.append("p.executed = 0 AND p.status = ? AND e.plan_id IS NULL")
                params.append(status)
            if request_id is not None:
                where.append("p.request_id = ?")
                params.append(request_id)
        if after is not None:
            where.append(f"({key[0]}, {key[1]}) < (?, ?)")
            params.extend(decode_plan_cursor(after))
        sql = (
            f"SELECT {_SUMMARY_COLUMNS} FROM {source}"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + f" ORDER BY {key[0]} DESC, {key[1]} DESC LIMIT ?"
        )
        rows = self._query(sql, (*params, limit + 1))
        items = [
            PlanSummary(
                plan_id=row["plan_id"],
                request_id=row["request_id"],
                query=row["query"],
                plan_status=row["plan_status"],
                created_at=row["created_at"],
                execution_status=row["execution_status"],
                started_at=row["started_at"],
                finished_at=row["finished_at"],
            )
            for row in rows[:limit]
        ]
        more = len(rows) > limit
        return PlanPage(items, encode_plan_cursor(items[-1]) if more else None)

    # -- executions ----------------------------------------------------------------------------

    @guarded
    def create_execution(
        self, plan_id: str, steps: list[tuple[str, str]], *, status: ExecutionStatus
    ) -> ExecutionRecord:
        with self._transaction() as db:
            exists = db.execute(
                "SELECT 1 FROM tp_executions WHERE plan_id = ?", (plan_id,)
            ).fetchone()
            if not exists:
                inserted = db.execute(
                    "INSERT INTO tp_executions (plan_id, status, created_at, queued_at,"
                    " plan_created_at, request_id) SELECT ?, ?, ?, ?, created_at, request_id"
                    " FROM tp_plans WHERE plan_id = ?",
                    (
                        plan_id,
                        status,
                        utc_now(),
                        time.time() if status == "queued" else None,
                        plan_id,
                    ),
                )
                if inserted.rowcount != 1:
                    raise InvalidInput(f"cannot create the execution of {plan_id!r}: no such plan")
                _mark_executed(db, plan_id)
                db.executemany(
                    "INSERT INTO tp_steps (plan_id, step_id, position, tool, status)"
                    " VALUES (?, ?, ?, ?, 'pending')",
                    [(plan_id, step_id, i, tool) for i, (step_id, tool) in enumerate(steps)],
                )
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    @guarded
    def get_execution(self, plan_id: str, *, items: bool = True) -> ExecutionRecord | None:
        with self._lock:
            rows = self._query("SELECT * FROM tp_executions WHERE plan_id = ?", (plan_id,))
            if not rows:
                return None
            step_rows = self._query(
                "SELECT * FROM tp_steps WHERE plan_id = ? ORDER BY position", (plan_id,)
            )
            listed = {s["step_id"]: self._step_items(plan_id, s) for s in step_rows if items}
        row = rows[0]
        steps = [
            StepRecord(
                step_id=s["step_id"],
                tool=s["tool"],
                status=s["status"],
                attempts=s["attempts"],
                resolved_parameters=loads(s["resolved_parameters"]),
                output=loads(s["output"]),
                error=s["error"],
                started_at=s["started_at"],
                finished_at=s["finished_at"],
                duration_ms=s["duration_ms"],
                output_truncated=bool(s["output_truncated"]),
                used_fallback=bool(s["used_fallback"]),
                cached=bool(s["cached"]),
                cache_age_seconds=s["cache_age_seconds"],
                timeout=s["timeout"],
                timeout_source=s["timeout_source"],
                reused_from=s["reused_from"],
                reason=s["reason"],
                items=listed.get(s["step_id"]),
                decision=_decision_from(s["decision"]),
            )
            for s in step_rows
        ]
        return ExecutionRecord(
            plan_id=row["plan_id"],
            status=row["status"],
            steps=steps,
            created_at=row["created_at"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            error=row["error"],
            worker_id=row["worker_id"],
            lease_until=row["lease_until"],
            owner_host=row["owner_host"],
            owner_pid=row["owner_pid"],
            cancel_requested_at=row["cancel_requested_at"],
        )

    @guarded
    def update_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> None:
        writes = _step_writes(plan_id, step_id, changes)
        if len(writes) == 1:  # one statement is atomic on its own
            with self._lock:
                apply(self._db, plan_id, step_id, writes)
            return
        with self._transaction() as db:
            apply(db, plan_id, step_id, writes)

    @guarded
    def update_steps(self, plan_id: str, updates: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        writes = [(step_id, _step_writes(plan_id, step_id, c)) for step_id, c in updates]
        if not writes:
            return
        with self._transaction() as db:
            for step_id, statements in writes:
                apply(db, plan_id, step_id, statements)

    @guarded
    def decide_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> bool:
        if {"item", "items"} & set(changes):
            raise ValueError("a decision does not change a step's items")
        ((sql, values, _, _),) = _step_writes(plan_id, step_id, changes)
        with self._transaction() as db:
            if db.execute(sql + " AND status = 'waiting_approval'", values).rowcount == 1:
                return True
            exists = db.execute(
                "SELECT 1 FROM tp_steps WHERE plan_id = ? AND step_id = ?", (plan_id, step_id)
            ).fetchone()
        if exists is None:
            raise KeyError(f"no step {step_id!r} in the execution of {plan_id!r}")
        return False

    @guarded
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
            self._db.execute(
                "UPDATE tp_executions SET status = ?, error = ?,"
                " started_at = COALESCE(?, started_at), finished_at = COALESCE(?, finished_at)"
                " WHERE plan_id = ?",
                (status, error, started_at, finished_at, plan_id),
            )

    # -- work queue ----------------------------------------------------------------------------

    @guarded
    def enqueue(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        self.create_execution(plan_id, steps, status="queued")
        with self._lock:
            self._db.execute(
                "UPDATE tp_executions SET status = 'queued', queued_at = ?, worker_id = NULL,"
                " lease_until = NULL, owner_host = NULL, owner_pid = NULL"
                " WHERE plan_id = ? AND status IN ('queued', 'running', 'waiting')"
                " AND (lease_until IS NULL OR lease_until < ?)",
                (time.time(), plan_id, time.time()),
            )
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    @guarded
    def claim(self, worker_id: str, lease_seconds: float) -> str | None:
        now = time.time()
        with self._transaction() as db:
            row = db.execute(
                "SELECT plan_id FROM tp_executions WHERE status = 'queued'"
                " OR (status = 'running' AND queued_at IS NOT NULL AND lease_until < ?)"
                " ORDER BY queued_at LIMIT 1",
                (now,),
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE tp_executions SET status = 'running', worker_id = ?, lease_until = ?,"
                " owner_host = ?, owner_pid = ? WHERE plan_id = ?",
                (worker_id, now + lease_seconds, *lease_holder(), row[0]),
            )
            return str(row[0])

    @guarded
    def acquire(
        self, plan_id: str, worker_id: str, lease_seconds: float, *, expected_owner: str | None
    ) -> bool:
        """Take the lease of one execution if it is free, expired, or held by ``expected_owner``."""
        now = time.time()
        with self._lock:
            cursor = self._db.execute(
                "UPDATE tp_executions SET status = 'running', worker_id = ?, lease_until = ?,"
                " owner_host = ?, owner_pid = ?"
                " WHERE plan_id = ? AND status IN ('queued', 'running', 'waiting')"
                " AND (worker_id IS NULL"
                " OR lease_until IS NULL OR lease_until < ? OR worker_id = ? OR worker_id = ?)",
                (
                    worker_id,
                    now + lease_seconds,
                    *lease_holder(),
                    plan_id,
                    now,
                    worker_id,
                    expected_owner,
                ),
            )
        return cursor.rowcount == 1

    @guarded
    def acquire_execution(
        self, plan_id: str, worker_id: str, lease_seconds: float, *, expected_owner: str | None
    ) -> ExecutionRecord | None:
        """:meth:`acquire` and the execution under the lease, read under the same lock."""
        with self._lock:
            if not self.acquire(plan_id, worker_id, lease_seconds, expected_owner=expected_owner):
                return None
            return self.get_execution(plan_id)

    @guarded
    def renew_lease(self, plan_id: str, worker_id: str, lease_seconds: float) -> bool:
        with self._lock:
            cursor = self._db.execute(
                "UPDATE tp_executions SET lease_until = ? WHERE plan_id = ? AND worker_id = ?"
                " AND status = 'running'",
                (time.time() + lease_seconds, plan_id, worker_id),
            )
        return cursor.rowcount == 1

    @guarded
    def release(self, plan_id: str, worker_id: str) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE tp_executions SET status = CASE WHEN status = 'running' THEN 'queued'"
                " ELSE status END, worker_id = NULL, lease_until = NULL, owner_host = NULL,"
                " owner_pid = NULL WHERE plan_id = ? AND worker_id = ?",
                (plan_id, worker_id),
            )

    # -- statistics and toolset data -----------------------------------------------------------

    @guarded
    def tool_stats(self) -> dict[str, ToolStats]:
        rows = self._query(
            "SELECT tool, COUNT(*) AS calls,"
            " AVG(CASE WHEN status = 'succeeded' THEN duration_ms END) AS avg_ms,"
            " AVG(CASE WHEN status = 'failed' THEN 1.0 ELSE 0.0 END) AS failure_rate"
            " FROM tp_steps WHERE status IN ('succeeded', 'failed') AND cached = 0 GROUP BY tool"
        )
        return {
            row["tool"]: ToolStats(row["calls"], row["avg_ms"], row["failure_rate"]) for row in rows
        }

    # -- toolset records -----------------------------------------------------------------------

    @guarded
    def put_record(
        self,
        collection: str,
        record: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        lookup_keys: Sequence[str] = (),
    ) -> dict[str, Any]:
        with self._transaction() as db:
            if idempotency_key is not None:
                row = db.execute(
                    "SELECT doc FROM tp_records WHERE collection = ? AND idempotency_key = ?",
                    (collection, idempotency_key),
                ).fetchone()
                if row is not None:
                    existing: dict[str, Any] = loads(row[0])
                    return existing
            stored = {"_id": secrets.token_hex(12), **record}
            cursor = db.execute(
                "INSERT INTO tp_records (collection, id, idempotency_key, doc) VALUES (?, ?, ?, ?)",
                (collection, stored["_id"], idempotency_key, dumps(stored)),
            )
            db.executemany(
                "INSERT INTO tp_record_keys (collection, lookup_key, seq) VALUES (?, ?, ?)",
                [(collection, key, cursor.lastrowid) for key in sorted(set(lookup_keys))],
            )
            return stored

    @guarded
    def find_records(
        self,
        collection: str,
        where: Mapping[str, Any],
        *,
        lookup_keys: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        if lookup_keys is None:
            rows = self._query(
                "SELECT doc FROM tp_records WHERE collection = ? ORDER BY seq", (collection,)
            )
            docs = [loads(row["doc"]) for row in rows]
        else:
            found: dict[int, str] = {}
            keys = sorted(set(lookup_keys))
            for start in range(0, len(keys), _KEYS_PER_QUERY):
                chunk = keys[start : start + _KEYS_PER_QUERY]
                rows = self._query(
                    "SELECT seq, doc FROM tp_records WHERE seq IN (SELECT seq FROM tp_record_keys"
                    f" WHERE collection = ? AND lookup_key IN ({', '.join('?' * len(chunk))}))",
                    (collection, *chunk),
                )
                found.update((row["seq"], row["doc"]) for row in rows)
            docs = [loads(found[seq]) for seq in sorted(found)]
        return [d for d in docs if all(d.get(k) == v for k, v in where.items())]

    # -- checkpoints and lifecycle -------------------------------------------------------------

    @asynccontextmanager
    async def checkpointer(self) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        """``AsyncSqliteSaver`` on this file; its ``sqlite3`` errors are translated like the
        store's, and its schema set-up waits for locks as long as the store does. Inside
        :meth:`keep_checkpointer`, the one kept open is shared."""
        kept = await self._kept_savers.saver()
        if kept is None:
            async with self._open_checkpointer() as saver:
                yield saver
            return
        try:
            yield kept
        except BaseException as error:
            await _heal(kept)
            if isinstance(error, sqlite3.Error):
                raise translate(error, self.uri) from None
            raise

    def keep_checkpointer(self) -> AbstractAsyncContextManager[None]:
        """While inside, executions in this event loop share one checkpointer connection,
        opened on first use, instead of opening one each (for long-lived callers)."""
        return self._kept_savers.keep()

    @asynccontextmanager
    async def _open_checkpointer(self) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        try:
            async with AsyncSqliteSaver.from_conn_string(str(self.path)) as saver:
                # Same durability as the store's own connection: WAL commits survive a killed
                # process without an fsync per checkpoint (~2 ms per execution, more under load).
                await saver.conn.execute("PRAGMA synchronous=NORMAL")
                await saver.conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
                await self._setup_checkpoints(saver)
                yield saver
        except sqlite3.Error as error:
            raise translate(error, self.uri) from None

    async def _setup_checkpoints(self, saver: Any) -> None:
        """Create the checkpoint tables, retrying while a new file is being set up by another
        process (SQLite can refuse that at once instead of waiting)."""
        deadline = time.monotonic() + self.busy_timeout
        delay = 0.005
        while True:
            try:
                await saver.setup()
                return
            except sqlite3.Error as error:
                if not is_busy(error) or time.monotonic() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    def close(self) -> None:
        with self._lock:
            self._db.close()


async def _heal(saver: Any) -> None:
    """After a failed execution, end the transaction a failed checkpoint write may have left
    open on a kept saver's connection (it would hold a lock the next executions wait on). The
    saver's lock is taken, so no other execution's write is in the middle of its transaction."""
    async with saver.lock:
        if saver.conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                await saver.conn.rollback()


def _mark_executed(db: sqlite3.Connection, plan_id: str) -> None:
    """The plan has an execution now: it leaves the index of plans never executed."""
    db.execute("UPDATE tp_plans SET executed = 1 WHERE plan_id = ?", (plan_id,))


def _step_writes(plan_id: str, step_id: str, changes: Mapping[str, Any]) -> list[Statement]:
    """The statements applying ``changes`` to one step record, in order. Items are rows of
    ``tp_items``: a whole list replaces the step's rows, one item its own row only."""
    unknown = set(changes) - STEP_FIELDS
    if unknown:
        raise ValueError(f"cannot update step fields {sorted(unknown)}")
    assignments: list[str] = []
    values: list[Any] = []
    for name, value in changes.items():
        if name == "item":
            continue
        if name == "items":
            # The legacy column is cleared: the rows are the items from now on.
            assignments.extend(["items = NULL", "item_count = ?"])
            values.append(None if value is None else len(value))
        elif name == "decision":
            assignments.append("decision = ?")
            values.append(None if value is None else dumps(value.to_json()))
        else:
            assignments.append(f"{name} = ?")
            values.append(dumps(value) if name in _JSON_STEP_FIELDS else value)
    statements: list[Statement] = []
    if assignments or "item" not in changes:
        # No changes still checks that the step exists (rowcount), like the other backends.
        columns = ", ".join(assignments) or "step_id = step_id"
        sql = f"UPDATE tp_steps SET {columns} WHERE plan_id = ? AND step_id = ?"
        statements.append(Statement(sql, (*values, plan_id, step_id), checked=True))
    statements.extend(item_statements(plan_id, step_id, changes, checked=not statements))
    return statements


def _decision_from(text: str | None) -> Decision | None:
    return None if text is None else Decision.from_json(loads(text))


def open_sqlite(uri: str, *, options: StoreOptions | None = None) -> SqliteStore:
    """The store of a ``sqlite:///path`` URI (the ``sqlite`` scheme's opener), waiting for a
    lock as long as ``options`` say."""
    if not uri.startswith("sqlite:///"):
        raise InvalidInput(f"a SQLite store URI looks like sqlite:///path/to/file.db, not {uri!r}")
    path = uri[len("sqlite:///") :]
    if not path or path == ":memory:":
        raise InvalidInput(
            "the SQLite store needs a file path (sqlite:///./.toolplan/toolplan.db); "
            "':memory:' cannot be shared by the engine and its checkpointer"
        )
    # Named by its absolute path, so messages say which file, wherever the command ran.
    absolute = Path(path).expanduser().resolve()
    return SqliteStore(
        absolute,
        uri=f"sqlite:///{absolute}",
        busy_timeout=None if options is None else options.busy_timeout,
    )
