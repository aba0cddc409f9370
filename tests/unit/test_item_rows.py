"""Items of ``forEach`` steps in their own rows (SQLite) and documents (MongoDB), per backend:
what the shared conformance suite cannot see. Writing one item writes that item only (measured
in bytes written, not in time), and stores written by older versions, which kept a step's items
in one JSON value on the step, still read correctly.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from pymongo import MongoClient

from toolplan.store import open_store
from toolplan.store.protocol import ItemRecord
from toolplan_conformance import started_execution

_OUTPUT = "x" * 400
"""An item output of a realistic size: what makes a rewritten list costly."""


def _wal_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_sqlite_one_item_write_writes_about_one_item(tmp_path: Path) -> None:
    """With 2,000 finished items (~1 MB), updating one item appends a few pages to the WAL,
    not the whole list: the cost of an item update does not grow with the list."""
    path = tmp_path / "toolplan.db"
    with closing(open_store(f"sqlite:///{path}")) as store:
        plan_id = started_execution(store, steps=1).plan_id
        count = 2000
        store.update_step(plan_id, "s0", {"items": [ItemRecord(i) for i in range(count)]})
        store.update_steps(
            plan_id,
            [("s0", {"item": ItemRecord(i, "succeeded", 1, output=_OUTPUT)}) for i in range(count)],
        )
        # Start the next writes from an empty WAL, so its size is what they wrote.
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        assert _wal_bytes(path) == 0
        for index in (5, 1000, 1999):
            store.update_step(plan_id, "s0", {"item": ItemRecord(index, "running", 2)})
        written = _wal_bytes(path)
        page = 4096
        # Three one-item writes: each a handful of b-tree pages (leaf, parents, WAL headers).
        assert written < 3 * 8 * page, f"{written} bytes written for 3 item updates"
        items = store.get_items(plan_id, "s0", offset=999, limit=3)
        assert items[1] == ItemRecord(1000, "running", 2)
        assert items[0] == ItemRecord(999, "succeeded", 1, output=_OUTPUT)
        assert items[2] == ItemRecord(1001, "succeeded", 1, output=_OUTPUT)


_LEGACY_ITEMS = [
    ItemRecord(0, "succeeded", 1, output={"id": 0}, duration_ms=2.0).to_json(),
    ItemRecord(1, "failed", 3, error="boom").to_json(),
    ItemRecord(2).to_json(),
]


def _legacy_sqlite(path: Path) -> str:
    """A store file as versions before item rows left it: a forEach step whose items are one
    JSON array in ``tp_steps.items``, and no ``tp_items`` table nor ``item_count`` column."""
    with closing(open_store(f"sqlite:///{path}")) as store:
        plan_id = started_execution(store, steps=2).plan_id
    db = sqlite3.connect(path)
    db.execute("DROP TABLE tp_items")
    db.execute("ALTER TABLE tp_steps DROP COLUMN item_count")
    db.execute(
        "UPDATE tp_steps SET status = 'running', items = ? WHERE plan_id = ? AND step_id = 's0'",
        (json.dumps(_LEGACY_ITEMS), plan_id),
    )
    db.commit()
    db.close()
    return plan_id


def test_sqlite_items_of_an_older_file_are_moved_to_rows(tmp_path: Path) -> None:
    """Opening a file of an older version moves each step's JSON items into rows: they read as
    before, page and count, and an item update then writes its own row."""
    path = tmp_path / "old.db"
    plan_id = _legacy_sqlite(path)
    with closing(open_store(f"sqlite:///{path}")) as store:
        execution = store.get_execution(plan_id)
        assert execution is not None
        expected = [ItemRecord.from_json(item) for item in _LEGACY_ITEMS]
        assert execution.step("s0").items == expected
        assert execution.step("s1").items is None
        assert store.get_items(plan_id, "s0", offset=1, limit=1) == expected[1:2]
        assert store.count_items(plan_id, "s0") == {"succeeded": 1, "failed": 1, "pending": 1}
        store.update_step(plan_id, "s0", {"item": ItemRecord(2, "succeeded", 1, output=2)})
        assert store.get_items(plan_id, "s0")[2] == ItemRecord(2, "succeeded", 1, output=2)
    db = sqlite3.connect(path)
    rows = db.execute("SELECT items, item_count FROM tp_steps WHERE step_id = 's0'").fetchall()
    db.close()
    assert rows == [(None, 3)]


@pytest.mark.mongodb
def test_mongodb_items_are_documents_of_their_own(mongodb_uri: str) -> None:
    """Each item is a document keyed by (plan, step, index); the step document holds a count."""
    with closing(open_store(mongodb_uri)) as store, MongoClient(mongodb_uri) as client:
        plan_id = started_execution(store, steps=1).plan_id
        store.update_step(plan_id, "s0", {"items": [ItemRecord(i) for i in range(4)]})
        store.update_step(plan_id, "s0", {"item": ItemRecord(2, "succeeded", 1, output="two")})
        db = client.get_default_database()
        step = db.steps.find_one({"planId": plan_id, "stepId": "s0"})
        assert step is not None and step.get("items") is None and step["itemCount"] == 4
        assert db["items"].count_documents({"planId": plan_id, "stepId": "s0"}) == 4
        unique = [i["key"] for i in db["items"].index_information().values() if i.get("unique")]
        assert [("planId", 1), ("stepId", 1), ("index", 1)] in unique


@pytest.mark.mongodb
def test_mongodb_items_of_an_older_store_still_read(mongodb_uri: str) -> None:
    """Step documents written before item documents kept the items in the step (``items``:
    ``{"index": JSON text}``): read, paged and counted as before; a new list moves them."""
    with closing(open_store(mongodb_uri)) as store, MongoClient(mongodb_uri) as client:
        plan_id = started_execution(store, steps=1).plan_id
        db = client.get_default_database()
        db.steps.update_one(
            {"planId": plan_id, "stepId": "s0"},
            {"$set": {"items": {str(i["index"]): json.dumps(i) for i in _LEGACY_ITEMS}}},
        )
        expected = [ItemRecord.from_json(item) for item in _LEGACY_ITEMS]
        execution = store.get_execution(plan_id)
        assert execution is not None and execution.step("s0").items == expected
        assert store.get_items(plan_id, "s0", status="failed") == expected[1:2]
        assert store.count_items(plan_id, "s0") == {"succeeded": 1, "failed": 1, "pending": 1}
        store.update_step(plan_id, "s0", {"items": expected})  # what a resume writes first
        store.update_step(plan_id, "s0", {"item": ItemRecord(2, "succeeded", 1)})
        assert store.get_items(plan_id, "s0")[2] == ItemRecord(2, "succeeded", 1)
        step = db.steps.find_one({"planId": plan_id, "stepId": "s0"})
        assert step is not None and step.get("items") is None
