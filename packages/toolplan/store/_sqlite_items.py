"""The SQLite store's items of ``forEach`` steps: one row of ``tp_items`` per item, keyed by
plan, step and index (a mixin of :class:`~toolplan.store.sqlite.SqliteStore`, which provides the
connection and its lock).

Writing one item writes its row only, whatever the length of the list; the step row holds the
list's length (``item_count``). Files from before item rows kept a step's items in one JSON
column (``tp_steps.items``), rewritten whole on every item update: they are moved to rows when
such a file is opened (:func:`move_items_to_rows`), and still read should a row hold them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from toolplan.store._sqlite_faults import guarded
from toolplan.store.codec import dumps, loads
from toolplan.store.protocol import ItemRecord, StepStatus

__all__ = ["SqliteItems", "Statement", "apply", "item_statements", "move_items_to_rows"]


class Statement(NamedTuple):
    """One statement of a step update, in order with the others."""

    sql: str
    values: Any
    many: bool = False
    """``values`` is a list of rows (``executemany``)."""
    checked: bool = False
    """Changes one row exactly when the step exists: the ``KeyError`` check."""


def item_statements(
    plan_id: str, step_id: str, changes: Mapping[str, Any], *, checked: bool
) -> list[Statement]:
    """The statements writing the ``items`` (a whole list: the step's rows replaced) and
    ``item`` (one row) of ``changes``; ``checked``: the item's statement is the one that tells
    whether the step exists (no other statement updates the step row)."""
    where = (plan_id, step_id)
    statements: list[Statement] = []
    if "items" in changes:
        statements.append(
            Statement("DELETE FROM tp_items WHERE plan_id = ? AND step_id = ?", where)
        )
        if changes["items"]:
            statements.append(
                Statement(
                    "INSERT INTO tp_items (plan_id, step_id, idx, status, record)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [(*where, *_item_row(item)) for item in changes["items"]],
                    many=True,
                )
            )
    if "item" in changes:
        # One row written, whatever the length of the list; only when the step exists.
        statements.append(
            Statement(
                "INSERT OR REPLACE INTO tp_items (plan_id, step_id, idx, status, record)"
                " SELECT ?, ?, ?, ?, ? WHERE EXISTS"
                " (SELECT 1 FROM tp_steps WHERE plan_id = ? AND step_id = ?)",
                (*where, *_item_row(changes["item"]), *where),
                checked=checked,
            )
        )
    return statements


def apply(db: sqlite3.Connection, plan_id: str, step_id: str, writes: list[Statement]) -> None:
    """Run the statements of one step update; ``KeyError`` when the step does not exist."""
    for write in writes:
        if write.many:
            db.executemany(write.sql, write.values)
            continue
        if db.execute(write.sql, write.values).rowcount != 1 and write.checked:
            raise KeyError(f"no step {step_id!r} in the execution of {plan_id!r}")


def move_items_to_rows(db: sqlite3.Connection) -> None:
    """Move the items of a file from before item rows, each step's JSON array in
    ``tp_steps.items``, to ``tp_items`` (run once, inside the transaction that adds
    ``item_count``)."""
    rows = db.execute(
        "SELECT plan_id, step_id, items FROM tp_steps WHERE items IS NOT NULL"
    ).fetchall()
    for plan_id, step_id, text in rows:
        items = legacy_items(text) or []
        db.executemany(
            "INSERT OR REPLACE INTO tp_items (plan_id, step_id, idx, status, record)"
            " VALUES (?, ?, ?, ?, ?)",
            [(plan_id, step_id, *_item_row(item)) for item in items],
        )
        db.execute(
            "UPDATE tp_steps SET items = NULL, item_count = ? WHERE plan_id = ? AND step_id = ?",
            (len(items), plan_id, step_id),
        )


def legacy_items(text: str | None) -> list[ItemRecord] | None:
    """Items in the JSON column of files from before item rows."""
    if text is None:
        return None
    return [ItemRecord.from_json(item) for item in loads(text)]


def _item_row(item: ItemRecord) -> tuple[int, str, str]:
    """The ``(idx, status, record)`` columns of one item row."""
    return item.index, item.status, dumps(item.to_json())


def _counted(statuses: Iterable[StepStatus]) -> dict[StepStatus, int]:
    counts: dict[StepStatus, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return counts


class SqliteItems:
    """Reading the items of ``forEach`` steps: whole, a page at a time, counted per status."""

    uri: str
    busy_timeout: float
    _lock: threading.RLock

    def _check_file(self) -> None:
        raise NotImplementedError

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def _items(
        self, plan_id: str, step_id: str, extra: str = " ORDER BY idx", params: tuple[Any, ...] = ()
    ) -> list[ItemRecord]:
        rows = self._query(
            f"SELECT record FROM tp_items WHERE plan_id = ? AND step_id = ?{extra}",
            (plan_id, step_id, *params),
        )
        return [ItemRecord.from_json(loads(r["record"])) for r in rows]

    def _step_items(self, plan_id: str, step: sqlite3.Row) -> list[ItemRecord] | None:
        """The items of one step row read by ``get_execution`` (``None``: none known)."""
        if step["item_count"] is not None:
            return self._items(plan_id, step["step_id"])
        return legacy_items(step["items"])

    @guarded
    def get_items(
        self,
        plan_id: str,
        step_id: str,
        *,
        offset: int = 0,
        limit: int | None = None,
        status: StepStatus | None = None,
    ) -> list[ItemRecord]:
        where = "" if status is None else " AND status = ?"
        params: tuple[Any, ...] = () if status is None else (status,)
        # The primary key is (plan_id, step_id, idx): a page is read in index order from it.
        return self._items(
            plan_id,
            step_id,
            f"{where} ORDER BY idx LIMIT ? OFFSET ?",
            (*params, -1 if limit is None else max(0, limit), max(0, offset)),
        )

    @guarded
    def count_items(self, plan_id: str, step_id: str) -> dict[StepStatus, int] | None:
        with self._lock:
            rows = self._query(
                "SELECT item_count, items FROM tp_steps WHERE plan_id = ? AND step_id = ?",
                (plan_id, step_id),
            )
            if not rows or (rows[0]["item_count"] is None and rows[0]["items"] is None):
                return None
            if rows[0]["item_count"] is None:
                legacy = legacy_items(rows[0]["items"]) or []
                return _counted(item.status for item in legacy)
            counts = self._query(
                "SELECT status, COUNT(*) AS n FROM tp_items WHERE plan_id = ? AND step_id = ?"
                " GROUP BY status",
                (plan_id, step_id),
            )
        return {r["status"]: r["n"] for r in counts}
