"""The MongoDB store: ``TOOLPLAN_STORE=mongodb://host:port/dbname`` (or ``mongodb+srv://``).

Collections, in the database named by the URI (``toolplan`` when it names none):

``requests``
    one document per request (unique ``requestId``).
``plans``
    one document per plan version (unique ``planId``; ``requestId, createdAt`` for listing;
    ``createdAt, planId`` and, for plans never ``executed``, ``status, executed, createdAt,
    planId`` for the list of recent plans).
``executions``
    one small document per execution: status, lease and queue position (unique ``planId``), and
    its plan's ``planCreatedAt`` and ``requestId``, copied when it is created, so that the list
    of recent plans filtered by execution status reads ``status, planCreatedAt, planId``.
``steps``
    one document per step of an execution (unique ``planId, stepId``). No document grows with the
    plan, and every step transition is a single-document ``update_one``.
``items``
    one document per item of a ``forEach`` step (unique ``planId, stepId, index``; ``planId,
    stepId, status, index`` for counts and pages by status); its step document holds only
    ``itemCount``. Writing one item writes its own document only, and no document grows with the
    list. (Stores written before kept the items in the step document, ``items``; those are still
    read, and moved here when the step's list is written again.)
``records``
    toolset records (unique ``collection, key`` over idempotency keys; ``collection, lookup``
    indexes the lookup keys, a multikey index).
``cache``
    cached outputs of read-only tools (unique ``key``); a TTL index on ``expiresAt`` lets the
    server delete expired entries, and reads skip any not yet deleted. Each entry holds the
    versions of the resources it was read from; it is served only while they are unchanged.
``resource_versions``
    one counter per resource (``_id``: its name), moved on by every write on it
    (``cache_written``): what makes a cached read stale.
``checkpoints``, ``checkpoint_writes``
    LangGraph checkpoints, written by ``MongoDBSaver``.
``migrations``
    one document per one-time upgrade of older data done when a store opened (``_id``: its name).

Consistency without multi-document transactions, which a standalone ``mongod`` does not have:

- A plan is inserted *before* its new request, carrying a copy of the request: the plan insert is
  the commit point. If the process dies before the request document is written, the request is
  still read from its plan, and no request can exist without a plan.
- An execution's step documents are upserted before the execution document; readers start from
  the execution document, so they never see an execution with missing steps.
- Queue claims and leases are conditional ``update_one`` calls checked by ``modified_count``.
  (``find_one_and_update`` would be the textbook claim, but jongodb, the test server, does not
  re-check its filter under concurrency.)

Writes use ``w="majority"``. Free-form JSON (plans, analyses, step parameters and outputs) is
stored as JSON text: BSON cannot hold every JSON value (integers beyond 64 bits) and restricts
``$``-prefixed field names, and text keeps each payload exactly what the engine produced, as in
the SQLite store. Leases compare the clocks of the machines running workers: keep them in sync
(NTP) and keep leases much longer than any skew.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from pymongo import ASCENDING, IndexModel, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from toolplan.errors import InvalidInput, ToolplanError
from toolplan.store._mongo_client import (
    DEFAULT_DATABASE,
    DEFAULT_TIMEOUT_MS,
    TIMEOUT_ENV,
    MongoConnection,
    client_options,
)
from toolplan.store._mongo_controls import NO_OWNER, MongoControls
from toolplan.store._mongo_faults import MONGO_ERRORS, guarded
from toolplan.store._mongo_items import MongoItems
from toolplan.store.codec import dumps, loads
from toolplan.store.protocol import (
    EXECUTION_STATUSES,
    STEP_FIELDS,
    Decision,
    ExecutionRecord,
    ExecutionStatus,
    ItemRecord,
    ListedStatus,
    PlanPage,
    PlanRecord,
    PlanSummary,
    RequestRecord,
    StepRecord,
    StoreOptions,
    ToolStats,
    cap_output,
    decode_plan_cursor,
    encode_plan_cursor,
    lease_holder,
    utc_now,
)

if TYPE_CHECKING:
    from pymongo.collection import Collection

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_TIMEOUT_MS",
    "MAX_PAYLOAD_BYTES",
    "TIMEOUT_ENV",
    "MongoStore",
    "client_options",
]

MAX_PAYLOAD_BYTES = 7_000_000
"""Largest JSON payload (step parameters or output) kept whole in one step document.

The engine already caps outputs (``ExecutionOptions.output_limit_bytes``, 1 MB by default); this
is the backstop that keeps a step document, with its two payloads, under MongoDB's 16 MB limit
even when that limit is raised.
"""

_Document = dict[str, Any]

_NO_OWNER = NO_OWNER


def _owner(worker_id: str, until: float) -> _Document:
    """The lease fields of a grant to ``worker_id``, held by the calling process."""
    host, pid = lease_holder()
    return {"workerId": worker_id, "leaseUntil": until, "ownerHost": host, "ownerPid": pid}


_STEP_KEYS: dict[str, str] = {
    "status": "status",
    "attempts": "attempts",
    "resolved_parameters": "resolvedParameters",
    "output": "output",
    "error": "error",
    "started_at": "startedAt",
    "finished_at": "finishedAt",
    "duration_ms": "durationMs",
    "output_truncated": "outputTruncated",
    "used_fallback": "usedFallback",
    "cached": "cached",
    "cache_age_seconds": "cacheAgeSeconds",
    "timeout": "timeout",
    "timeout_source": "timeoutSource",
    "reused_from": "reusedFrom",
    "reason": "reason",
    "items": "itemCount",
    "item": "index",
    "decision": "decision",
}
assert set(_STEP_KEYS) == STEP_FIELDS

_CLAIM_BATCH = 8
"""Queue entries read per claim round; losers of a race try the next one."""
_CLAIM_ROUNDS = 16
_PLAN_KEYS_MIGRATION = "executions.planKeys"
"""The ``migrations`` document of the pass that copied plan keys onto older executions."""


def _summary(plan: _Document, execution: _Document | None) -> PlanSummary:
    return PlanSummary(
        plan_id=plan["planId"],
        request_id=plan["requestId"],
        query=plan.get("query"),
        plan_status=plan["status"],
        created_at=plan["createdAt"],
        execution_status=execution["status"] if execution is not None else None,
        started_at=execution.get("startedAt") if execution is not None else None,
        finished_at=execution.get("finishedAt") if execution is not None else None,
    )


class MongoStore(MongoItems, MongoControls):
    """:class:`~toolplan.store.protocol.Store` on a MongoDB database (see the module docstring)."""

    def __init__(self, uri: str, *, options: StoreOptions | None = None) -> None:
        self._connection = MongoConnection(
            uri, timeout_ms=(options or StoreOptions()).mongo_timeout_ms
        )
        self.uri = self._connection.uri
        self._client = self._connection.client
        self._db = self._connection.db
        self._requests: Collection[_Document] = self._db["requests"]
        self._plans: Collection[_Document] = self._db["plans"]
        self._executions: Collection[_Document] = self._db["executions"]
        self._steps: Collection[_Document] = self._db["steps"]
        self._items: Collection[_Document] = self._db["items"]
        self._records: Collection[_Document] = self._db["records"]
        self._cache: Collection[_Document] = self._db["cache"]
        self._resource_versions: Collection[_Document] = self._db["resource_versions"]
        self._migrations: Collection[_Document] = self._db["migrations"]
        self._saver: BaseCheckpointSaver[Any] | None = None
        self._saver_lock = threading.Lock()
        try:
            self._setup()
        except BaseException:
            self._connection.close()
            raise

    # -- plumbing ------------------------------------------------------------------------------

    def _translate(self, error: BaseException) -> ToolplanError:
        """Every driver error in one place: :func:`toolplan.store._mongo_faults.translate`."""
        return self._connection.translate(error)

    @guarded
    def _setup(self) -> None:
        self._client.admin.command("ping")
        self._requests.create_indexes([IndexModel("requestId", unique=True)])
        self._plans.create_indexes(
            [
                IndexModel("planId", unique=True),
                IndexModel([("requestId", 1), ("createdAt", 1)]),
                IndexModel([("createdAt", 1), ("planId", 1)]),
                IndexModel([("status", 1), ("executed", 1), ("createdAt", 1), ("planId", 1)]),
            ]
        )
        self._executions.create_indexes(
            [
                IndexModel("planId", unique=True),
                IndexModel([("status", 1), ("queuedAt", 1)]),
                IndexModel([("status", 1), ("planCreatedAt", 1), ("planId", 1)]),
            ]
        )
        self._backfill_plan_keys()
        self._steps.create_indexes(
            [
                IndexModel([("planId", 1), ("stepId", 1)], unique=True),
                IndexModel([("planId", 1), ("position", 1)]),
                IndexModel([("tool", 1), ("status", 1), ("finishedAt", 1)]),
            ]
        )
        self._items.create_indexes(
            [
                IndexModel([("planId", 1), ("stepId", 1), ("index", 1)], unique=True),
                IndexModel([("planId", 1), ("stepId", 1), ("status", 1), ("index", 1)]),
            ]
        )
        self._records.create_indexes(
            [
                # Only records written with an idempotency key take part in the uniqueness.
                IndexModel(
                    [("collection", 1), ("key", 1)],
                    unique=True,
                    partialFilterExpression={"key": {"$type": "string"}},
                ),
                IndexModel([("collection", 1), ("at", 1)]),
                IndexModel([("collection", 1), ("lookup", 1)]),
            ]
        )
        self._cache.create_indexes(
            [
                IndexModel("key", unique=True),
                IndexModel("tool"),
                IndexModel("expiresAt", expireAfterSeconds=0),
            ]
        )

    # -- requests and plans --------------------------------------------------------------------

    @guarded
    def save_plan(self, plan: PlanRecord, request: RequestRecord | None = None) -> None:
        if request is not None:
            if self._requests.find_one({"requestId": request.request_id}) is not None:
                raise InvalidInput(
                    f"cannot store plan {plan.plan_id!r}: request {request.request_id!r} exists "
                    "already (add a version to it without passing a new request)"
                )
        elif self.get_request(plan.request_id) is None:
            raise InvalidInput(f"request {plan.request_id!r} does not exist")
        document: _Document = {
            "planId": plan.plan_id,
            "requestId": plan.request_id,
            "query": plan.query,
            "plan": dumps(plan.plan),
            "analysis": dumps(plan.analysis),
            "status": plan.status,
            "meta": dumps(plan.meta),
            "createdAt": plan.created_at,
            "executed": False,
        }
        if request is not None:
            document["request"] = {"query": request.query, "createdAt": request.created_at}
        try:
            self._plans.insert_one(document)
        except DuplicateKeyError:
            raise InvalidInput(
                f"cannot store plan {plan.plan_id!r}: a plan with this ID exists (plans are "
                "immutable; store a new version under a new plan ID)"
            ) from None
        if request is None:
            return
        try:
            self._requests.insert_one(
                {
                    "requestId": request.request_id,
                    "query": request.query,
                    "createdAt": request.created_at,
                }
            )
        except DuplicateKeyError:
            # Another writer created the same request ID between our check and our insert.
            # Nobody has been told about this plan yet: take it back so nothing half-written stays.
            self._plans.delete_one({"planId": plan.plan_id})
            raise InvalidInput(
                f"cannot store plan {plan.plan_id!r}: request {request.request_id!r} was created "
                "concurrently by another writer"
            ) from None

    @guarded
    def get_request(self, request_id: str) -> RequestRecord | None:
        document = self._requests.find_one({"requestId": request_id})
        if document is not None:
            return RequestRecord(request_id, document.get("query"), document["createdAt"])
        # The process that stored the request's first plan died before writing the request
        # document: that plan holds the request.
        first = self._plans.find_one({"requestId": request_id, "request": {"$exists": True}})
        if first is not None and isinstance(first.get("request"), dict):
            embedded = first["request"]
            return RequestRecord(request_id, embedded.get("query"), embedded["createdAt"])
        return None

    @staticmethod
    def _plan_from(document: _Document) -> PlanRecord:
        return PlanRecord(
            plan_id=document["planId"],
            request_id=document["requestId"],
            plan=loads(document["plan"]),
            analysis=loads(document["analysis"]),
            status=document["status"],
            created_at=document["createdAt"],
            query=document.get("query"),
            meta=loads(document["meta"]),
        )

    @guarded
    def get_plan(self, plan_id: str) -> PlanRecord | None:
        document = self._plans.find_one({"planId": plan_id})
        return self._plan_from(document) if document is not None else None

    @guarded
    def list_plans(self, request_id: str) -> list[PlanRecord]:
        cursor = self._plans.find({"requestId": request_id}).sort(
            [("createdAt", ASCENDING), ("_id", ASCENDING)]
        )
        return [self._plan_from(document) for document in cursor]

    def _plan_keys(self, plan_id: str) -> _Document:
        """What an execution copies from its plan for the list of recent plans."""
        plan = self._plans.find_one({"planId": plan_id}, {"createdAt": 1, "requestId": 1})
        if plan is None:
            return {}
        return {"planCreatedAt": plan["createdAt"], "requestId": plan["requestId"]}

    def _backfill_plan_keys(self) -> None:
        """Executions written before the list of recent plans existed lack their plan's
        ``planCreatedAt`` and ``requestId``, so a list filtered by status would never show them:
        copy them once, when the store opens (the SQLite store does the same in its migration).
        Plans themselves without ``executed`` are left as they are: the list checks them against
        their execution. The pass is recorded in ``migrations``, so a later open costs one read
        by ``_id`` instead of a scan of every execution."""
        if self._migrations.find_one({"_id": _PLAN_KEYS_MIGRATION}) is not None:
            return
        for execution in self._executions.find(
            {"planCreatedAt": {"$exists": False}}, {"planId": 1}
        ):
            keys = self._plan_keys(execution["planId"])
            if keys:
                self._executions.update_one({"_id": execution["_id"]}, {"$set": keys})
                self._mark_executed(execution["planId"])
        self._migrations.update_one(
            {"_id": _PLAN_KEYS_MIGRATION}, {"$set": {"at": time.time()}}, upsert=True
        )

    def _mark_executed(self, plan_id: str) -> None:
        """The plan has an execution now: it leaves the plans never executed. Written after the
        execution document, so a crash between the two leaves a plan that the list checks
        against its execution (:meth:`recent_plans`), never one missing from it."""
        self._plans.update_one({"planId": plan_id}, {"$set": {"executed": True}})

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
        cursor = decode_plan_cursor(after) if after is not None else None
        if status in EXECUTION_STATUSES:
            found = self._executions_page(status, request_id, limit, cursor)
        else:
            found = self._plans_page(status, request_id, limit, cursor)
        items = found[:limit]
        more = len(found) > limit
        return PlanPage(items, encode_plan_cursor(items[-1]) if more else None)

    @staticmethod
    def _after(time_key: str, cursor: tuple[str, str] | None) -> _Document:
        if cursor is None:
            return {}
        created_at, plan_id = cursor
        return {
            "$or": [
                {time_key: {"$lt": created_at}},
                {time_key: created_at, "planId": {"$lt": plan_id}},
            ]
        }

    def _executions_page(
        self, status: str, request_id: str | None, limit: int, cursor: tuple[str, str] | None
    ) -> list[PlanSummary]:
        query: _Document = {"status": status, **self._after("planCreatedAt", cursor)}
        if request_id is not None:
            query["requestId"] = request_id
        executions = list(
            self._executions.find(query)
            .sort([("planCreatedAt", -1), ("planId", -1)])
            .limit(limit + 1)
        )
        plans = {
            p["planId"]: p
            for p in self._plans.find(
                {"planId": {"$in": [e["planId"] for e in executions]}},
                {"plan": 0, "analysis": 0, "meta": 0},
            )
        }
        return [_summary(plans[e["planId"]], e) for e in executions if e["planId"] in plans]

    def _plans_page(
        self,
        status: str | None,
        request_id: str | None,
        limit: int,
        cursor: tuple[str, str] | None,
    ) -> list[PlanSummary]:
        found: list[PlanSummary] = []
        while True:
            query: _Document = self._after("createdAt", cursor)
            if status is not None:
                query.update(status=status, executed={"$ne": True})
            if request_id is not None:
                query["requestId"] = request_id
            wanted = limit + 1 - len(found)
            plans = list(
                self._plans.find(query, {"plan": 0, "analysis": 0, "meta": 0})
                .sort([("createdAt", -1), ("planId", -1)])
                .limit(wanted)
            )
            executions = {
                e["planId"]: e
                for e in self._executions.find({"planId": {"$in": [p["planId"] for p in plans]}})
            }
            for plan in plans:
                execution = executions.get(plan["planId"])
                if status is None or execution is None:
                    found.append(_summary(plan, execution))
            if len(plans) < wanted or len(found) > limit:
                return found
            # Some were executed after all (a crash before marking them): read on past them.
            cursor = (plans[-1]["createdAt"], plans[-1]["planId"])

    # -- executions ----------------------------------------------------------------------------

    @guarded
    def create_execution(
        self, plan_id: str, steps: list[tuple[str, str]], *, status: ExecutionStatus
    ) -> ExecutionRecord:
        if self._executions.find_one({"planId": plan_id}) is None:
            self._upsert_steps(plan_id, steps)
            # A DuplicateKeyError means another process created it concurrently: theirs stands.
            with contextlib.suppress(DuplicateKeyError):
                self._executions.insert_one(
                    {
                        "planId": plan_id,
                        "status": status,
                        "createdAt": utc_now(),
                        "startedAt": None,
                        "finishedAt": None,
                        "error": None,
                        "workerId": None,
                        "leaseUntil": None,
                        "queuedAt": time.time() if status == "queued" else None,
                        **self._plan_keys(plan_id),
                    }
                )
                self._mark_executed(plan_id)
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    def _upsert_steps(
        self,
        plan_id: str,
        steps: list[tuple[str, str]],
        initial: _Document | None = None,
    ) -> None:
        """Create missing step documents; idempotent, so a crash half-way is simply redone."""
        if not steps:
            return
        operations = [
            UpdateOne(
                {"planId": plan_id, "stepId": step_id},
                {
                    "$setOnInsert": {
                        "position": position,
                        "tool": tool,
                        "status": "pending",
                        "attempts": 0,
                        "resolvedParameters": None,
                        "output": None,
                        "error": None,
                        "startedAt": None,
                        "finishedAt": None,
                        "durationMs": None,
                        "outputTruncated": False,
                        "usedFallback": False,
                        "cached": False,
                        "cacheAgeSeconds": None,
                        "timeout": None,
                        "timeoutSource": None,
                        **(initial or {}),
                    }
                },
                upsert=True,
            )
            for position, (step_id, tool) in enumerate(steps)
        ]
        try:
            self._steps.bulk_write(operations, ordered=False)
        except (BulkWriteError, DuplicateKeyError):
            # Two processes upserted the same new step at once and one lost on the unique index;
            # the documents exist now, so the retry only matches them.
            self._steps.bulk_write(operations, ordered=False)

    @staticmethod
    def _step_from(document: _Document, items: list[ItemRecord] | None) -> StepRecord:
        return StepRecord(
            step_id=document["stepId"],
            tool=document["tool"],
            status=document["status"],
            attempts=document.get("attempts", 0),
            resolved_parameters=loads(document.get("resolvedParameters")),
            output=loads(document.get("output")),
            error=document.get("error"),
            started_at=document.get("startedAt"),
            finished_at=document.get("finishedAt"),
            duration_ms=document.get("durationMs"),
            output_truncated=bool(document.get("outputTruncated")),
            used_fallback=bool(document.get("usedFallback")),
            cached=bool(document.get("cached")),
            cache_age_seconds=document.get("cacheAgeSeconds"),
            timeout=document.get("timeout"),
            timeout_source=document.get("timeoutSource"),
            reused_from=document.get("reusedFrom"),
            reason=document.get("reason"),
            items=items,
            decision=_decision_from(document.get("decision")),
        )

    @guarded
    def get_execution(self, plan_id: str, *, items: bool = True) -> ExecutionRecord | None:
        document = self._executions.find_one({"planId": plan_id})
        if document is None:
            return None
        steps = list(self._steps.find({"planId": plan_id}).sort("position", ASCENDING))
        listed = self._listed_items(plan_id, steps) if items else {}
        lease_until = document.get("leaseUntil")
        return ExecutionRecord(
            plan_id=plan_id,
            status=document["status"],
            steps=[self._step_from(step, listed.get(step["stepId"])) for step in steps],
            created_at=document["createdAt"],
            started_at=document.get("startedAt"),
            finished_at=document.get("finishedAt"),
            error=document.get("error"),
            worker_id=document.get("workerId"),
            owner_host=document.get("ownerHost"),
            owner_pid=document.get("ownerPid"),
            lease_until=float(lease_until) if lease_until is not None else None,
            cancel_requested_at=document.get("cancelRequestedAt"),
        )

    @staticmethod
    def _payload(value: Any) -> tuple[str, bool]:
        """``value`` as JSON text within :data:`MAX_PAYLOAD_BYTES`; (text, truncated)."""
        text = dumps(value)
        if len(text) * 4 <= MAX_PAYLOAD_BYTES or len(text.encode("utf-8")) <= MAX_PAYLOAD_BYTES:
            return text, False
        capped, _ = cap_output(value, MAX_PAYLOAD_BYTES)
        return dumps(capped), True

    def _step_fields(self, changes: Mapping[str, Any]) -> _Document:
        """The document fields that apply ``changes`` to one step record."""
        unknown = set(changes) - STEP_FIELDS
        if unknown:
            raise ValueError(f"cannot update step fields {sorted(unknown)}")
        fields: _Document = {}
        capped = False
        for name, value in changes.items():
            if name == "item":
                continue  # a document of its own (:meth:`_item_writes`)
            if name == "items":
                fields["items"] = None  # where stores written before kept them
                value = None if value is None else len(value)
            if name == "decision":
                value = None if value is None else value.to_json()
            if name in ("output", "resolved_parameters"):
                value, truncated = self._payload(value)
                capped = capped or (truncated and name == "output")
            fields[_STEP_KEYS[name]] = value
        if capped:
            fields["outputTruncated"] = True
        return fields

    @guarded
    def update_steps(self, plan_id: str, updates: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        # One ordered bulk write per collection (one round trip, one acknowledgement each): each
        # update is atomic on its document and they apply in order; without multi-document
        # transactions the batch as a whole is not atomic, which the step records do not need
        # (each one is self-contained). Items first: a reader that sees a list's count sees its
        # item documents.
        prepared = [(step_id, self._step_fields(changes)) for step_id, changes in updates]
        wanted = {step_id for step_id, _ in prepared}
        if not wanted:
            return
        item_writes = [
            write
            for step_id, changes in updates
            for write in self._item_writes(plan_id, step_id, changes)
        ]
        item_steps = {s for s, changes in updates if {"item", "items"} & set(changes)}
        self._write_items(plan_id, item_writes, item_steps)
        prepared = [
            (step_id, fields)
            for (step_id, fields), (_, changes) in zip(prepared, updates, strict=True)
            if fields or set(changes) != {"item"}
        ]
        if not prepared:
            return
        operations = [
            UpdateOne({"planId": plan_id, "stepId": step_id}, {"$set": fields})
            for step_id, fields in prepared
            if fields
        ]
        matched = (
            self._steps.bulk_write(operations, ordered=True).matched_count if operations else 0
        )
        if matched == len(operations) == len(prepared):
            return
        found = {
            document["stepId"]
            for document in self._steps.find(
                {"planId": plan_id, "stepId": {"$in": sorted(wanted)}}, {"stepId": 1}
            )
        }
        for step_id, _ in prepared:
            if step_id not in found:
                raise KeyError(f"no step {step_id!r} in the execution of {plan_id!r}")

    @guarded
    def update_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> None:
        fields = self._step_fields(changes)
        selector = {"planId": plan_id, "stepId": step_id}
        item_writes = self._item_writes(plan_id, step_id, changes)
        self._write_items(plan_id, item_writes, {step_id})
        if item_writes and not fields:
            return
        if fields:
            matched = self._steps.update_one(selector, {"$set": fields}).matched_count
        else:
            matched = self._steps.count_documents(selector, limit=1)
        if matched != 1:
            raise KeyError(f"no step {step_id!r} in the execution of {plan_id!r}")

    @guarded
    def decide_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> bool:
        if {"item", "items"} & set(changes):
            raise ValueError("a decision does not change a step's items")
        selector = {"planId": plan_id, "stepId": step_id}
        fields = self._step_fields(changes)
        won = self._steps.update_one({**selector, "status": "waiting_approval"}, {"$set": fields})
        if won.matched_count == 1:
            return True
        if self._steps.count_documents(selector, limit=1) != 1:
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
        fields: _Document = {"status": status, "error": error}
        if started_at is not None:
            fields["startedAt"] = started_at
        if finished_at is not None:
            fields["finishedAt"] = finished_at
        self._executions.update_one({"planId": plan_id}, {"$set": fields})

    # -- work queue ----------------------------------------------------------------------------

    @guarded
    def enqueue(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        self.create_execution(plan_id, steps, status="queued")
        now = time.time()
        # Unfinished and not held by a live lease: (back) into the queue. A finished execution,
        # or one a live process is running, is left alone.
        self._executions.update_one(
            {
                "planId": plan_id,
                "status": {"$in": ["queued", "running", "waiting"]},
                "$or": [{"leaseUntil": None}, {"leaseUntil": {"$lt": now}}],
            },
            {"$set": {"status": "queued", "queuedAt": now, **_NO_OWNER}},
        )
        execution = self.get_execution(plan_id)
        assert execution is not None
        return execution

    @guarded
    def claim(self, worker_id: str, lease_seconds: float) -> str | None:
        for _round in range(_CLAIM_ROUNDS):
            now = time.time()
            candidates = list(
                self._executions.find(
                    {
                        "$or": [
                            {"status": "queued"},
                            {
                                "status": "running",
                                "queuedAt": {"$ne": None},
                                "leaseUntil": {"$lt": now},
                            },
                        ]
                    }
                )
                .sort([("queuedAt", ASCENDING), ("_id", ASCENDING)])
                .limit(_CLAIM_BATCH)
            )
            if not candidates:
                return None
            for seen in candidates:
                # Compare-and-set on exactly the state we read: if another worker claimed it (or
                # its holder renewed the lease) in between, nothing matches and we try the next.
                won = self._executions.update_one(
                    {
                        "planId": seen["planId"],
                        "status": seen["status"],
                        "workerId": seen.get("workerId"),
                        "leaseUntil": seen.get("leaseUntil"),
                    },
                    {
                        "$set": {
                            "status": "running",
                            **_owner(worker_id, now + lease_seconds),
                        }
                    },
                )
                if won.modified_count == 1:
                    return str(seen["planId"])
            # Every candidate went to other workers; read the queue again.
        return None  # heavy contention: report an empty queue, the caller polls again

    @guarded
    def acquire(
        self, plan_id: str, worker_id: str, lease_seconds: float, *, expected_owner: str | None
    ) -> bool:
        """Take the lease of one execution if it is free, expired, or held by ``expected_owner``."""
        now = time.time()
        until = now + lease_seconds
        holders: list[_Document] = [
            {"workerId": None},
            {"leaseUntil": None},
            {"leaseUntil": {"$lt": now}},
            {"workerId": worker_id},
        ]
        if expected_owner is not None:
            holders.append({"workerId": expected_owner})
        result = self._executions.update_one(
            {
                "planId": plan_id,
                "status": {"$in": ["queued", "running", "waiting"]},
                "$or": holders,
            },
            {"$set": {"status": "running", **_owner(worker_id, until)}},
        )
        return result.matched_count == 1

    @guarded
    def acquire_execution(
        self, plan_id: str, worker_id: str, lease_seconds: float, *, expected_owner: str | None
    ) -> ExecutionRecord | None:
        """:meth:`acquire`, then the execution under the lease (read after the lease is held,
        so no earlier holder's step record is missed)."""
        if not self.acquire(plan_id, worker_id, lease_seconds, expected_owner=expected_owner):
            return None
        return self.get_execution(plan_id)

    @guarded
    def renew_lease(self, plan_id: str, worker_id: str, lease_seconds: float) -> bool:
        result = self._executions.update_one(
            {"planId": plan_id, "workerId": worker_id, "status": "running"},
            {"$set": {"leaseUntil": time.time() + lease_seconds}},
        )
        return result.matched_count == 1

    @guarded
    def release(self, plan_id: str, worker_id: str) -> None:
        # Two conditional updates instead of one with a conditional status (pipeline updates are
        # not available everywhere): a running execution goes back to the queue, a finished one
        # only loses its owner. Each matches only while ``worker_id`` still holds the lease.
        cleared = _NO_OWNER
        self._executions.update_one(
            {"planId": plan_id, "workerId": worker_id, "status": "running"},
            {"$set": {"status": "queued", **cleared}},
        )
        self._executions.update_one({"planId": plan_id, "workerId": worker_id}, {"$set": cleared})

    # -- statistics and toolset data -----------------------------------------------------------

    def _count_by_tool(self, match: _Document, total: str | None = None) -> dict[str, _Document]:
        group: _Document = {"_id": "$tool", "n": {"$sum": 1}}
        if total is not None:
            group["total"] = {"$sum": f"${total}"}
        rows = self._steps.aggregate([{"$match": match}, {"$group": group}])
        return {str(row["_id"]): row for row in rows}

    @guarded
    def tool_stats(self) -> dict[str, ToolStats]:
        # Only $sum is used: averages and rates are divided here, which works on every server.
        called = {"cached": {"$ne": True}}
        finished = self._count_by_tool({"status": {"$in": ["succeeded", "failed"]}, **called})
        failed = self._count_by_tool({"status": "failed", **called})
        timed = self._count_by_tool(
            {"status": "succeeded", "durationMs": {"$ne": None}, **called}, total="durationMs"
        )
        stats: dict[str, ToolStats] = {}
        for tool, row in finished.items():
            calls = int(row["n"])
            durations = timed.get(tool)
            average = float(durations["total"]) / durations["n"] if durations else None
            failures = int(failed[tool]["n"]) if tool in failed else 0
            stats[tool] = ToolStats(calls, average, failures / calls)
        return stats

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
        if idempotency_key is not None:
            found = self._records.find_one({"collection": collection, "key": idempotency_key})
            if found is not None:
                earlier: dict[str, Any] = found["doc"]
                return earlier
        stored = {"_id": secrets.token_hex(12), **record}
        entry: _Document = {"collection": collection, "doc": stored, "at": time.time()}
        if idempotency_key is not None:
            entry["key"] = idempotency_key
        if lookup_keys:
            entry["lookup"] = sorted(set(lookup_keys))  # a multikey index: one entry per key
        try:
            self._records.insert_one(entry)
        except DuplicateKeyError:
            # The same step ran twice at once (a takeover): the first insert is the record.
            found = self._records.find_one({"collection": collection, "key": idempotency_key})
            if found is None:
                raise
            first: dict[str, Any] = found["doc"]
            return first
        return stored

    @guarded
    def find_records(
        self,
        collection: str,
        where: Mapping[str, Any],
        *,
        lookup_keys: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        query: _Document = {"collection": collection}
        if lookup_keys is not None:
            query["lookup"] = {"$in": sorted(set(lookup_keys))}
        for name, value in where.items():
            # Only plain string equality is pushed to the server: MongoDB matches arrays by their
            # elements and never matches True to 1, unlike plain equality. The Python check
            # below decides.
            if isinstance(value, str) and name and "." not in name and not name.startswith("$"):
                query[f"doc.{name}"] = value
        cursor = self._records.find(query).sort([("at", ASCENDING), ("_id", ASCENDING)])
        documents: list[dict[str, Any]] = [entry["doc"] for entry in cursor]
        return [d for d in documents if all(d.get(k) == v for k, v in where.items())]

    # -- checkpoints and lifecycle -------------------------------------------------------------

    @guarded
    def _checkpoint_saver(self) -> BaseCheckpointSaver[Any]:
        with self._saver_lock:
            if self._saver is None:
                try:
                    from langgraph.checkpoint.mongodb import MongoDBSaver
                except ImportError:
                    raise InvalidInput(
                        "LangGraph checkpoints in a MongoDB store (graph_checkpoints in the project config, "
                        "LangGraph Studio) need langgraph-checkpoint-mongodb: pip install "
                        "'toolplan[mongodb]'"
                    ) from None
                self._saver = MongoDBSaver(self._client, db_name=self._db.name)
            return self._saver

    @asynccontextmanager
    async def keep_checkpointer(self) -> AsyncIterator[None]:
        """Nothing to keep: this store's checkpointer is shared already."""
        yield

    @asynccontextmanager
    async def checkpointer(self) -> AsyncIterator[BaseCheckpointSaver[Any]]:
        """``MongoDBSaver`` on this store's client and database (one per store, reused)."""
        saver = await asyncio.to_thread(self._checkpoint_saver)
        try:
            yield saver
        except MONGO_ERRORS as error:
            # A checkpoint write failed inside the graph: the same clear error as the store's.
            raise self._translate(error) from None

    def close(self) -> None:
        """Close the client and its connection pool."""
        self._connection.close()


def _decision_from(stored: Mapping[str, Any] | None) -> Decision | None:
    return None if stored is None else Decision.from_json(stored)
