"""The store conformance suite (:mod:`toolplan_conformance`) on every backend.

``sqlite`` runs on a file in the test's temporary directory; ``mongodb`` on a fresh database of
the session's MongoDB server (jongodb, or ``TOOLPLAN_TEST_MONGODB_URI``); ``memory`` on the
benchmark's in-memory store (``bench/memstore.py``), registered for the ``memory`` scheme here:
its lease state machine is a third implementation, so it passes the same suite.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, TypedDict

import pytest
from bench.memstore import MemoryStore
from pymongo import MongoClient
from pymongo.errors import AutoReconnect

from tests.support.ports import free_port
from toolplan.config import Settings
from toolplan.errors import InvalidInput, StoreUnavailable
from toolplan.store import Store, mongo, open_store
from toolplan.store._mongo_client import database_name
from toolplan.store.mongo import DEFAULT_DATABASE, TIMEOUT_ENV, MongoStore, client_options
from toolplan.store.registry import register_store
from toolplan_conformance import *  # noqa: F403
from toolplan_conformance import (
    new_plan,
    new_request,
    queued,
    started_execution,
    step_pairs,
    stored_plan,
)

_MEMORY: dict[str, MemoryStore] = {}


def _open_memory(uri: str) -> MemoryStore:
    """One in-memory store per URI: every "connection" to it shares the same state."""
    return _MEMORY.setdefault(uri, MemoryStore())


@pytest.fixture(params=["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb), "memory"])
def store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store of each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'toolplan.db'}"
    elif request.param == "memory":
        register_store("memory", _open_memory)
        uri = f"memory://{tmp_path.name}"
        yield uri
        _MEMORY.pop(uri, None)
    else:
        yield request.getfixturevalue("mongodb_uri")


@pytest.fixture
def store(store_uri: str) -> Iterator[Store]:
    opened = open_store(store_uri)
    yield opened
    opened.close()


# -- every backend: a contract the end-to-end tests rely on ----------------------------------------


def test_a_released_execution_keeps_the_reason_it_waits(store: Store) -> None:
    """A worker that cannot run a claimed plan records why, then releases it (the queue worker's
    requeue): the execution is queued again with that reason, for ``toolplan show``, and the next
    worker claims it. Checked end to end on SQLite (tests/e2e/test_trust_boundaries.py)."""
    (plan_id,) = queued(store, 1)
    assert store.claim("w1", 60) == plan_id
    store.set_execution_status(plan_id, "running", error="cannot load the tools recorded with it")
    store.release(plan_id, "w1")
    record = store.get_execution(plan_id)
    assert record is not None and (record.status, record.worker_id) == ("queued", None)
    assert record.error == "cannot load the tools recorded with it"
    assert store.claim("w2", 60) == plan_id
    store.set_execution_status(plan_id, "running")  # the worker that runs it clears the reason
    record = store.get_execution(plan_id)
    assert record is not None and (record.status, record.error) == ("running", None)


# -- MongoDB only: what the shared suite cannot see -----------------------------------------------


def test_mongodb_client_options(monkeypatch: pytest.MonkeyPatch) -> None:
    options = client_options("mongodb://h:1/db")
    assert options["w"] == "majority" and options["appname"] == "toolplan"
    assert options["serverSelectionTimeoutMS"] == options["connectTimeoutMS"] == 5000
    timeout = Settings.from_env({TIMEOUT_ENV: "700"}).store_options.mongo_timeout_ms
    faster = client_options("mongodb://h/db?w=1&serverSelectionTimeoutMS=50", timeout)
    assert faster["w"] == "majority"  # claims and leases need acknowledged majority writes
    assert "serverSelectionTimeoutMS" not in faster  # the URI's own setting stands
    assert faster["connectTimeoutMS"] == 700
    with pytest.raises(InvalidInput, match=TIMEOUT_ENV):
        Settings.from_env({TIMEOUT_ENV: "soon"})


@pytest.mark.mongodb
def test_mongodb_unreachable_is_store_unavailable_with_password_hidden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "300")
    uri = f"mongodb://alice:s3cret-pw@127.0.0.1:{free_port()}/toolplan"
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as caught:
        open_store(uri)
    assert time.monotonic() - started < 10
    message = caught.value.message
    assert "mongodb://alice:***@127.0.0.1:" in message and "s3cret-pw" not in message
    assert caught.value.exit_code == 3


@pytest.mark.mongodb
def test_mongodb_invalid_uri_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="invalid MongoDB store URI") as caught:
        open_store("mongodb://bob:pw@host:notaport/db")
    assert "pw@" not in caught.value.message


@pytest.mark.mongodb
def test_mongodb_layout_and_indexes(mongodb_uri: str) -> None:
    with closing(open_store(mongodb_uri)) as store, MongoClient(mongodb_uri) as client:
        plan = stored_plan(store, steps=3)
        store.create_execution(plan.plan_id, step_pairs(plan), status="running")
        db = client.get_default_database()
        execution = db.executions.find_one({"planId": plan.plan_id})
        assert execution is not None and "steps" not in execution  # steps are their own documents
        assert db.steps.count_documents({"planId": plan.plan_id}) == 3
        for collection, key in [
            ("plans", [("planId", 1)]),
            ("requests", [("requestId", 1)]),
            ("executions", [("planId", 1)]),
            ("steps", [("planId", 1), ("stepId", 1)]),
        ]:
            unique = [
                info["key"]
                for info in db[collection].index_information().values()
                if info.get("unique")
            ]
            assert key in unique, (collection, unique)


def test_mongodb_database_name_comes_from_the_uri() -> None:
    assert database_name("mongodb://h:1/plans?w=1") == "plans"
    assert database_name("mongodb+srv://u:p@cluster.example.net/prod") == "prod"
    assert database_name("mongodb://h1:1,h2:2/") == DEFAULT_DATABASE
    assert database_name("mongodb://h:1") == DEFAULT_DATABASE


class _CrashingInserts:
    """A collection whose inserts fail as if the server went away mid-operation."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def insert_one(self, *args: Any, **kwargs: Any) -> Any:
        raise AutoReconnect("connection closed")


@pytest.mark.mongodb
def test_mongodb_crash_between_plan_and_request_leaves_no_orphan(mongodb_uri: str) -> None:
    """The plan insert is the commit point: a request is never stored without its plan, and a
    plan whose request document was never written still shows its request."""
    with closing(open_store(mongodb_uri)) as store:
        assert isinstance(store, MongoStore)
        request = new_request("half-written?")
        plan = new_plan(request.request_id)
        store._requests = _CrashingInserts(store._requests)  # type: ignore[assignment]
        with pytest.raises(StoreUnavailable):
            store.save_plan(plan, request)
    with closing(open_store(mongodb_uri)) as store:
        assert store.get_request(request.request_id) == request
        assert store.list_plans(request.request_id) == [plan]
        second = new_plan(request.request_id)
        store.save_plan(second)  # the request can get new versions as usual
        assert [p.plan_id for p in store.list_plans(request.request_id)] == [
            plan.plan_id,
            second.plan_id,
        ]

        # And the other order of failure: the plan cannot be stored, so nothing is.
        store._plans = _CrashingInserts(store._plans)  # type: ignore[attr-defined]
        lost = new_request()
        with pytest.raises(StoreUnavailable):
            store.save_plan(new_plan(lost.request_id), lost)
        assert store.get_request(lost.request_id) is None


@pytest.mark.mongodb
def test_mongodb_caps_payloads_beyond_the_document_limit(
    mongodb_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mongo, "MAX_PAYLOAD_BYTES", 2000)
    with closing(open_store(mongodb_uri)) as store:
        execution = started_execution(store, steps=1)
        huge = {"blob": "é" * 5000}
        store.update_step(
            execution.plan_id,
            "s0",
            {"status": "succeeded", "output": huge, "output_truncated": False},
        )
        step = store.get_execution(execution.plan_id).step("s0")  # type: ignore[union-attr]
        assert step.output_truncated and step.output["truncated"] is True
        assert len(step.output["preview"].encode()) <= 2000


@pytest.mark.mongodb
async def test_mongodb_a_checkpoint_write_that_fails_in_the_graph_is_store_unavailable(
    mongodb_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver's error from a checkpoint write inside a running graph becomes the store's
    one-line error (exit 3), as the store's own writes do."""
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        n: int

    builder = StateGraph(State)
    builder.add_node("step", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)

    def lost(*args: Any, **kwargs: Any) -> Any:
        raise AutoReconnect("connection closed")

    with closing(open_store(mongodb_uri)) as store:
        with pytest.raises(StoreUnavailable) as caught:
            async with store.checkpointer() as saver:
                monkeypatch.setattr(saver, "put", lost)
                graph = builder.compile(checkpointer=saver)
                await graph.ainvoke({"n": 0}, {"configurable": {"thread_id": "t"}})
        assert f"cannot reach the MongoDB store {mongodb_uri!r}" in caught.value.message
        assert caught.value.exit_code == 3


def test_sqlite_files_from_before_the_lease_owner_columns_are_upgraded(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    opened = open_store(f"sqlite:///{path}")
    plan_id = started_execution(opened).plan_id
    opened.close()
    with closing(sqlite3.connect(path)) as raw:
        raw.execute("ALTER TABLE tp_executions DROP COLUMN owner_host")
        raw.execute("ALTER TABLE tp_executions DROP COLUMN owner_pid")
        raw.commit()
    with closing(open_store(f"sqlite:///{path}")) as upgraded:
        assert upgraded.acquire(plan_id, "w", 60, expected_owner=None)
        record = upgraded.get_execution(plan_id)
        assert record is not None and record.owner_pid is not None


def test_sqlite_files_from_before_the_controls_are_upgraded(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    opened = open_store(f"sqlite:///{path}")
    execution = started_execution(opened, steps=1)
    opened.close()
    with closing(sqlite3.connect(path)) as raw:
        raw.execute("DROP TABLE tp_cache")
        raw.execute("DROP INDEX tp_steps_by_tool_time")
        raw.execute("ALTER TABLE tp_executions DROP COLUMN cancel_requested_at")
        for column in ("cached", "cache_age_seconds", "timeout", "timeout_source"):
            raw.execute(f"ALTER TABLE tp_steps DROP COLUMN {column}")
        raw.commit()
    with closing(open_store(f"sqlite:///{path}")) as upgraded:
        step = upgraded.get_execution(execution.plan_id).step("s0")  # type: ignore[union-attr]
        assert not step.cached and step.timeout is None
        assert upgraded.request_cancel(execution.plan_id, []).cancel_requested_at is not None
        upgraded.cache_put("k", "tool", {"v": 1}, 60)
        assert upgraded.cache_get("k").result is not None
        assert upgraded.tool_durations(["echo"], 5) == {"echo": []}


def test_sqlite_files_from_before_the_plan_list_are_upgraded(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    opened = open_store(f"sqlite:///{path}")
    executed = started_execution(opened, steps=1)
    never = stored_plan(opened, steps=1)
    opened.close()
    with closing(sqlite3.connect(path)) as raw:
        for index in (
            "tp_plans_by_time",
            "tp_plans_by_request_time",
            "tp_plans_unexecuted",
            "tp_executions_by_status",
        ):
            raw.execute(f"DROP INDEX {index}")
        raw.execute("ALTER TABLE tp_plans DROP COLUMN executed")
        raw.execute("ALTER TABLE tp_executions DROP COLUMN plan_created_at")
        raw.execute("ALTER TABLE tp_executions DROP COLUMN request_id")
        raw.commit()
    with closing(open_store(f"sqlite:///{path}")) as upgraded:
        running = upgraded.recent_plans(status="running").items
        assert [s.plan_id for s in running] == [executed.plan_id]
        planned = upgraded.recent_plans(status="planned").items
        assert [s.plan_id for s in planned] == [never.plan_id]


@pytest.mark.mongodb
def test_mongodb_executions_from_before_the_plan_list_are_upgraded(mongodb_uri: str) -> None:
    from pymongo import MongoClient

    opened = open_store(mongodb_uri)
    executed = started_execution(opened, steps=1)
    opened.close()
    client: MongoClient[dict[str, Any]] = MongoClient(mongodb_uri)
    try:
        db = client.get_default_database()
        db["executions"].update_many({}, {"$unset": {"planCreatedAt": "", "requestId": ""}})
        db["plans"].update_many({}, {"$unset": {"executed": ""}})
        db["migrations"].delete_many({})  # a database from before: never upgraded
        with closing(open_store(mongodb_uri)) as upgraded:  # opening upgrades
            running = upgraded.recent_plans(status="running").items
            assert [s.plan_id for s in running] == [executed.plan_id]
            assert upgraded.recent_plans(status="planned").items == []
        stored = db["executions"].find_one({"planId": executed.plan_id})
        assert stored is not None and stored["requestId"].startswith("req_")
        # done once: a later open reads the marker, not every execution
        assert db["migrations"].count_documents({}) == 1
    finally:
        client.close()


@pytest.mark.parametrize(
    ("status", "request_filter", "index"),
    [
        (None, False, "tp_plans_by_time"),
        (None, True, "tp_plans_by_request_time"),
        ("planned", False, "tp_plans_unexecuted"),
        ("succeeded", False, "tp_executions_by_status"),
    ],
)
def test_sqlite_plan_list_reads_an_index_in_its_order(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: str | None,
    request_filter: bool,
    index: str,
) -> None:
    """Each query of ``recent_plans`` walks an index in the list's order: no table scan and no
    sort of every row (``USE TEMP B-TREE FOR ORDER BY``), so a page costs about its size."""
    store = open_store(f"sqlite:///{tmp_path / 'toolplan.db'}")
    plan = stored_plan(store, steps=1)
    plans: list[str] = []
    original = store._query  # type: ignore[attr-defined]

    def explain(sql: str, params: tuple[Any, ...] = ()) -> Any:
        if "LIMIT" in sql:
            plans.extend(row[3] for row in original("EXPLAIN QUERY PLAN " + sql, params))
        return original(sql, params)

    monkeypatch.setattr(store, "_query", explain)
    with closing(store):
        store.recent_plans(  # type: ignore[attr-defined]
            status=status, request_id=plan.request_id if request_filter else None
        )
    assert any(index in detail for detail in plans), plans
    assert not any(detail.startswith("SCAN") and "INDEX" not in detail for detail in plans), plans
    assert not any("TEMP B-TREE" in detail for detail in plans), plans


def test_a_cache_entry_from_before_resource_versions_is_never_served(tmp_path: Path) -> None:
    # Kept before writes moved versions, it cannot say what it was read from: never trusted.
    import sqlite3

    path = tmp_path / "old-cache.db"
    with closing(open_store(f"sqlite:///{path}")) as store:
        store.cache_put("k", "lookup", {"v": 1}, 60, {})
        assert store.cache_get("k").result is not None
    with closing(sqlite3.connect(path)) as raw:
        raw.execute("UPDATE tp_cache SET versions = NULL")
        raw.commit()
    with closing(open_store(f"sqlite:///{path}")) as store:
        assert store.cache_get("k").result is None


def test_mongodb_checkpoints_without_their_extra_say_how_to_install_it(
    mongodb_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The saver is an extra (toolplan[mongodb]): plans and executions need pymongo only.
    import sys

    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.mongodb", None)  # not installed
    with closing(open_store(mongodb_uri)) as store:
        assert store.get_plan("plan_1_abcdefghij") is None  # the store works without it
        with pytest.raises(InvalidInput, match=r"pip install 'toolplan\[mongodb\]'"):
            asyncio.run(_enter_checkpointer(store))


async def _enter_checkpointer(store: Any) -> None:
    async with store.checkpointer():
        pass
