"""The MongoDB store's items of ``forEach`` steps: one document per item in ``items``, keyed by
plan, step and index (a mixin of :class:`~toolplan.store.mongo.MongoStore`, which provides the
collections).

Writing one item writes its document only, and no document grows with the list (a step's items
may add up to more than MongoDB's 16 MB document limit); the step document holds the list's
length (``itemCount``). Stores written before kept the items in the step document (``items``:
``{"index": JSON text}``): those are still read, and moved here when the step's list is written
again (a resume writes it first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, DeleteMany, InsertOne, ReplaceOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from toolplan.errors import ToolplanError
from toolplan.store._mongo_faults import guarded
from toolplan.store.codec import dumps, loads
from toolplan.store.protocol import ItemRecord, StepStatus

if TYPE_CHECKING:
    from pymongo.collection import Collection

__all__ = ["MongoItems", "legacy_items"]

_Document = dict[str, Any]


class MongoItems:
    """Writing and reading the items of ``forEach`` steps."""

    _steps: Collection[_Document]
    _items: Collection[_Document]

    def _translate(self, error: BaseException) -> ToolplanError:
        raise NotImplementedError

    def _listed_items(self, plan_id: str, steps: list[_Document]) -> dict[str, list[ItemRecord]]:
        """The items of the steps of one execution that have them, by step ID (one query)."""
        listed: dict[str, list[ItemRecord]] = {}
        for step in steps:
            legacy = legacy_items(step.get("items"))
            if legacy is not None:
                listed[step["stepId"]] = legacy
            elif step.get("itemCount") is not None:
                listed[step["stepId"]] = []
        if any(step.get("itemCount") is not None for step in steps):
            found = self._items.find({"planId": plan_id}, {"_id": 0, "stepId": 1, "record": 1})
            for item in found.sort([("stepId", ASCENDING), ("index", ASCENDING)]):
                if item["stepId"] in listed:
                    listed[item["stepId"]].append(ItemRecord.from_json(loads(item["record"])))
        return listed

    @staticmethod
    def _item_writes(plan_id: str, step_id: str, changes: Mapping[str, Any]) -> list[Any]:
        """The writes to ``items`` that apply ``changes``: a whole list replaces the step's item
        documents; one item replaces its own document only."""
        selector = {"planId": plan_id, "stepId": step_id}
        operations: list[Any] = []
        if "items" in changes:
            operations.append(DeleteMany(selector))
            operations.extend(
                InsertOne(_item_document(plan_id, step_id, item)) for item in changes["items"] or ()
            )
        item = changes.get("item")
        if item is not None:
            operations.append(
                ReplaceOne(
                    {**selector, "index": item.index},
                    _item_document(plan_id, step_id, item),
                    upsert=True,
                )
            )
        return operations

    def _write_items(self, plan_id: str, item_writes: list[Any], step_ids: set[str]) -> None:
        """Item writes in order, once every step they are about is known to exist (no item
        document is left behind for a step that is not there)."""
        if not item_writes:
            return
        found = {
            document["stepId"]
            for document in self._steps.find(
                {"planId": plan_id, "stepId": {"$in": sorted(step_ids)}}, {"stepId": 1}
            )
        }
        for step_id in sorted(step_ids - found):
            raise KeyError(f"no step {step_id!r} in the execution of {plan_id!r}")
        try:
            self._items.bulk_write(item_writes, ordered=True)
        except (BulkWriteError, DuplicateKeyError):
            # Two writers upserted the same new item at once and one lost on the unique index;
            # the document exists now, so the same writes again replace it (they are idempotent).
            self._items.bulk_write(item_writes, ordered=True)

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
        if limit is not None and limit <= 0:
            return []
        step = self._steps.find_one({"planId": plan_id, "stepId": step_id}, {"items": 1})
        legacy = None if step is None else legacy_items(step.get("items"))
        if legacy is not None:
            chosen = [item for item in legacy if status is None or item.status == status]
            end = None if limit is None else max(0, offset) + limit
            return chosen[max(0, offset) : end]
        selector: _Document = {"planId": plan_id, "stepId": step_id}
        if status is not None:
            selector["status"] = status
        found = self._items.find(selector, {"_id": 0, "record": 1}).sort("index", ASCENDING)
        found = found.skip(max(0, offset))
        if limit is not None:
            found = found.limit(limit)
        return [ItemRecord.from_json(loads(document["record"])) for document in found]

    @guarded
    def count_items(self, plan_id: str, step_id: str) -> dict[StepStatus, int] | None:
        step = self._steps.find_one(
            {"planId": plan_id, "stepId": step_id}, {"items": 1, "itemCount": 1}
        )
        if step is None:
            return None
        legacy = legacy_items(step.get("items"))
        counts: dict[StepStatus, int] = {}
        if legacy is not None:
            for item in legacy:
                counts[item.status] = counts.get(item.status, 0) + 1
            return counts
        if step.get("itemCount") is None:
            return None
        # Counted by the server, over the (planId, stepId, status) index: no item is sent here.
        grouped = self._items.aggregate(
            [
                {"$match": {"planId": plan_id, "stepId": step_id}},
                {"$group": {"_id": "$status", "n": {"$sum": 1}}},
            ]
        )
        return {group["_id"]: int(group["n"]) for group in grouped}


def legacy_items(stored: Mapping[str, str] | None) -> list[ItemRecord] | None:
    """The items of a ``forEach`` step as stores written before item documents kept them, in
    the step document as ``{"index": JSON text}``, in index order."""
    if stored is None:
        return None
    return [ItemRecord.from_json(loads(stored[key])) for key in sorted(stored, key=int)]


def _item_document(plan_id: str, step_id: str, item: ItemRecord) -> _Document:
    """One item's document: its key, its status (for counts and pages) and its record as JSON
    text (like every free-form payload of this store)."""
    return {
        "planId": plan_id,
        "stepId": step_id,
        "index": item.index,
        "status": item.status,
        "record": dumps(item.to_json()),
    }
