"""Conformance tests of the items of ``forEach`` steps: each item is written on its own (one item
per write, the others left as they were), read back whole or a page at a time in index order,
counted per status, and left out of an execution read with ``items=False``; the items of one step
may add up to more than one MongoDB document holds.

``from toolplan_conformance import *`` collects these with the rest of the suite.
"""

from __future__ import annotations

from toolplan.store import Store
from toolplan.store.protocol import ItemRecord
from toolplan_conformance.records import started_execution

__all__ = [
    "test_execution_read_without_items",
    "test_item_counts_per_status",
    "test_item_pages_in_index_order",
    "test_items_may_outgrow_one_document",
    "test_one_item_write_leaves_the_others",
    "test_whole_list_replaces_the_items",
]


def _mapped(store: Store, count: int) -> str:
    """A running execution whose step ``s0`` maps over ``count`` pending items; its plan ID."""
    plan_id = started_execution(store, steps=2).plan_id
    items = [ItemRecord(i) for i in range(count)]
    store.update_step(plan_id, "s0", {"status": "running", "items": items})
    return plan_id


def test_one_item_write_leaves_the_others(store: Store) -> None:
    """Writing item k changes item k only, through ``update_step`` and ``update_steps`` alike."""
    plan_id = _mapped(store, 50)
    store.update_step(plan_id, "s0", {"item": ItemRecord(7, "succeeded", 1, output={"n": 7})})
    store.update_steps(
        plan_id,
        [
            ("s0", {"item": ItemRecord(3, "running", 1)}),
            ("s0", {"item": ItemRecord(3, "failed", 2, error="boom", used_fallback=True)}),
            ("s0", {"item": ItemRecord(49, "succeeded", 1, output=[1, 2], duration_ms=1.5)}),
        ],
    )
    expected = [ItemRecord(i) for i in range(50)]
    expected[7] = ItemRecord(7, "succeeded", 1, output={"n": 7})
    expected[3] = ItemRecord(3, "failed", 2, error="boom", used_fallback=True)
    expected[49] = ItemRecord(49, "succeeded", 1, output=[1, 2], duration_ms=1.5)
    execution = store.get_execution(plan_id)
    assert execution is not None
    assert execution.step("s0").items == expected
    assert execution.step("s0").status == "running"
    assert execution.step("s1").items is None


def test_item_pages_in_index_order(store: Store) -> None:
    """``get_items`` pages through a step's items in index order, filtered by status."""
    plan_id = _mapped(store, 30)
    store.update_steps(
        plan_id,
        [("s0", {"item": ItemRecord(i, "succeeded", 1, output=i)}) for i in range(0, 30, 3)],
    )
    every = store.get_items(plan_id, "s0")
    assert [item.index for item in every] == list(range(30))
    page = store.get_items(plan_id, "s0", offset=10, limit=5)
    assert [item.index for item in page] == [10, 11, 12, 13, 14]
    assert page[2] == ItemRecord(12, "succeeded", 1, output=12)
    assert store.get_items(plan_id, "s0", offset=28, limit=5) == every[28:]
    assert store.get_items(plan_id, "s0", offset=30, limit=5) == []
    assert store.get_items(plan_id, "s0", limit=0) == []
    succeeded = store.get_items(plan_id, "s0", status="succeeded", offset=2, limit=3)
    assert [item.index for item in succeeded] == [6, 9, 12]
    pending = store.get_items(plan_id, "s0", status="pending")
    assert [item.index for item in pending] == [i for i in range(30) if i % 3]
    assert store.get_items(plan_id, "s1") == []
    assert store.get_items(plan_id, "nope") == []


def test_item_counts_per_status(store: Store) -> None:
    """``count_items``: per status, or ``None`` for a step whose list is not known."""
    plan_id = _mapped(store, 12)
    store.update_steps(
        plan_id,
        [
            ("s0", {"item": ItemRecord(0, "succeeded", 1)}),
            ("s0", {"item": ItemRecord(1, "succeeded", 1)}),
            ("s0", {"item": ItemRecord(2, "failed", 3, error="boom")}),
            ("s0", {"item": ItemRecord(3, "running", 1)}),
        ],
    )
    assert store.count_items(plan_id, "s0") == {
        "succeeded": 2,
        "failed": 1,
        "running": 1,
        "pending": 8,
    }
    assert store.count_items(plan_id, "s1") is None
    assert store.count_items(plan_id, "nope") is None
    store.update_step(plan_id, "s1", {"items": []})
    assert store.count_items(plan_id, "s1") == {}


def test_whole_list_replaces_the_items(store: Store) -> None:
    """Setting ``items`` again (a resume with another list) replaces every item record."""
    plan_id = _mapped(store, 10)
    store.update_step(plan_id, "s0", {"item": ItemRecord(9, "succeeded", 1, output="x")})
    store.update_step(plan_id, "s0", {"items": [ItemRecord(0, "succeeded", 1), ItemRecord(1)]})
    assert store.get_items(plan_id, "s0") == [ItemRecord(0, "succeeded", 1), ItemRecord(1)]
    assert store.count_items(plan_id, "s0") == {"succeeded": 1, "pending": 1}
    store.update_step(plan_id, "s0", {"items": None})
    execution = store.get_execution(plan_id)
    assert execution is not None and execution.step("s0").items is None
    assert store.count_items(plan_id, "s0") is None


def test_execution_read_without_items(store: Store) -> None:
    """``get_execution(items=False)`` reads the steps without their items; by default they
    come with them."""
    plan_id = _mapped(store, 5)
    store.update_step(plan_id, "s0", {"item": ItemRecord(2, "succeeded", 1, output="two")})
    store.update_step(plan_id, "s1", {"status": "succeeded", "output": {"ok": True}})
    light = store.get_execution(plan_id, items=False)
    full = store.get_execution(plan_id)
    assert light is not None and full is not None
    assert light.step("s0").items is None
    assert full.step("s0").items is not None and len(full.step("s0").items or []) == 5
    assert light.step("s1").output == {"ok": True}
    assert light.step("s0").status == full.step("s0").status == "running"


def test_items_may_outgrow_one_document(store: Store) -> None:
    """A step's items may add up to more than 16 MB (MongoDB's document limit): each item is
    stored on its own, so only one item's size is bounded."""
    count, size = 20, 900_000  # each output under the engine's 1 MB cap; 18 MB in all
    plan_id = _mapped(store, count)
    for index in range(count):
        output = {"text": chr(ord("a") + index) * size}
        store.update_step(plan_id, "s0", {"item": ItemRecord(index, "succeeded", 1, output=output)})
    last = store.get_items(plan_id, "s0", offset=count - 1)
    assert [item.index for item in last] == [count - 1]
    assert last[0].output == {"text": chr(ord("a") + count - 1) * size}
    assert store.count_items(plan_id, "s0") == {"succeeded": count}
