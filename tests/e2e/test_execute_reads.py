"""``toolplan execute PLAN_ID`` reads the plan record once and the execution record once before
its first step starts: the layers above the engine no longer read the store back and forth.

The store is SQLite behind a ``countsqlite://`` scheme (:func:`register_store`) that logs every
store call, so the real CLI (in-process), client, operations and engine run unchanged."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, Cli
from toolplan.store.registry import register_store
from toolplan.store.sqlite import SqliteStore

EXAMPLE = str(REPO / "examples" / "blog_chain.json")
READS = {"get_plan", "get_request", "get_execution", "list_plans", "find_records"}
"""The protocol's reads of plan, request and execution records."""
STEP_WRITES = {"update_step", "update_steps"}
"""A step transition: the first one is the first step starting."""


class CountingStore(SqliteStore):
    """SQLite, logging the name of every store call made from outside the store."""

    calls: list[str] = []
    _inside = threading.local()

    def __getattribute__(self, name: str) -> Any:
        attribute = super().__getattribute__(name)
        if name.startswith("_") or not callable(attribute) or name not in _LOGGED:
            return attribute

        def logged(*args: Any, **kwargs: Any) -> Any:
            inside = getattr(CountingStore._inside, "depth", 0)
            if inside == 0:  # a store method calling another is one call
                CountingStore.calls.append(name)
            CountingStore._inside.depth = inside + 1
            try:
                return attribute(*args, **kwargs)
            finally:
                CountingStore._inside.depth = inside

        return logged


_LOGGED = READS | STEP_WRITES | {"create_execution", "acquire", "acquire_execution", "release"}


@pytest.fixture
def counting(tmp_path: Path) -> Iterator[str]:
    register_store(
        "countsqlite", lambda uri: CountingStore(uri.replace("countsqlite://", "sqlite://", 1))
    )
    CountingStore.calls = []
    yield f"countsqlite:///{tmp_path / 'counted.db'}"


def _before_first_step(calls: list[str]) -> list[str]:
    first = next(i for i, name in enumerate(calls) if name in STEP_WRITES)
    return calls[:first]


def test_execute_reads_the_plan_and_the_execution_once_before_the_first_step(
    cli: Cli, counting: str
) -> None:
    submitted = cli("submit", "--file", EXAMPLE, "--store", counting, "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    CountingStore.calls = []

    done = cli("execute", plan_id, "--store", counting, "--json")

    assert done.code == 0, done.stderr
    assert done.json()["status"] == "succeeded"
    before = _before_first_step(CountingStore.calls)
    reads = [name for name in before if name in READS]
    assert reads == ["get_plan", "get_execution"], before
    # ... then the execution record is created and the lease taken with the state under it
    assert before[len(reads) :] == ["create_execution", "acquire_execution"], before
    # the whole run: no record is read back by a layer above the engine
    assert CountingStore.calls.count("get_plan") == 1, CountingStore.calls


def test_executing_a_finished_plan_reads_each_record_once_and_calls_no_tool(
    cli: Cli, counting: str
) -> None:
    ran = cli("run", "--file", EXAMPLE, "--store", counting, "--json")
    assert ran.code == 0, ran.stderr
    plan_id = ran.json()["planId"]
    CountingStore.calls = []

    again = cli("execute", plan_id, "--store", counting, "--json")

    assert again.code == 0, again.stderr
    assert CountingStore.calls == ["get_plan", "get_execution"]  # no step record written
    assert "already finished (succeeded)" in again.stderr
