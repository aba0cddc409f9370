"""The engine's crash-safety order, seen from inside the tools: when a tool starts, the store
already holds its step (or item) as ``running`` with this attempt's number, committed (another
connection reads it), and every step it depends on as ``succeeded`` with its output. A process
killed at any moment therefore leaves records a resume can trust: a step that may have had an
effect is never still ``pending``, and a success a dependent acted on is never lost.

The tool opens its own connection to the store for every read, so it sees only what was
committed, never what the engine's writer merely queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store import open_store
from toolplan.tools import ToolCatalog

pytestmark = [pytest.mark.e2e]

HUNG = 120.0
"""Seconds after which a run counts as hung (a guard against deadlocks, not a timing check)."""

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=30)


@pytest.fixture(params=["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb), "memory"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store URI: a SQLite file, a fresh MongoDB database, or ``memory://`` (the bench's
    in-memory store, which the engine writes on the event loop instead of a writer thread)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'toolplan.db'}"
    elif request.param == "mongodb":
        yield request.getfixturevalue("mongodb_uri")
    else:
        yield "memory://"


_MEMORY: dict[str, Any] = {}


def _open(uri: str) -> Any:
    """A store for ``uri``: a connection of its own, or the one in-memory store of the test
    (it has no other connection to read through)."""
    if uri != "memory://":
        return open_store(uri)
    from bench.memstore import MemoryStore

    return _MEMORY.setdefault("store", MemoryStore())


class Witness:
    """Tools that read the store, through a connection of their own, before they do anything:
    what each call saw is kept in :attr:`seen`."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.seen: list[dict[str, Any]] = []
        self.flaky_failures = 1

    def _look(self, config: RunnableConfig) -> dict[str, Any]:
        metadata = config.get("metadata") or {}
        reader = _open(self.uri)
        execution = reader.get_execution(metadata["plan_id"])
        if self.uri != "memory://":
            reader.close()
        assert execution is not None
        steps = {s.step_id: s for s in execution.steps}
        me = steps[metadata["step_id"]]
        item = metadata.get("item")
        record = me if item is None else (me.items or [])[item]
        seen = {
            "step": metadata["step_id"],
            "item": item,
            "attempt": metadata["attempt"],
            "status": record.status,
            "attempts": record.attempts,
            "others": {s.step_id: (s.status, s.output) for s in execution.steps},
        }
        self.seen.append(seen)
        return seen

    def catalog(self) -> ToolCatalog:
        @tool
        async def witness(value: Any, config: RunnableConfig) -> Any:
            """Return ``value`` after reading the store."""
            self._look(config)
            return value

        @tool
        async def flaky_witness(value: Any, config: RunnableConfig) -> Any:
            """Read the store, then fail the first call(s) with a transient error."""
            self._look(config)
            if self.flaky_failures > 0:
                self.flaky_failures -= 1
                raise RuntimeError("transient")
            return value

        return ToolCatalog([witness, flaky_witness])


async def _run(uri: str, witness: Witness, plan: dict[str, Any]) -> str:
    _MEMORY.clear()
    store = _open(uri)
    try:
        catalog = witness.catalog()
        plan_id = submit_plan(plan, store=store, catalog=catalog, max_steps=50).plan_id
        ctx = ExecutionContext(store=store, catalog=catalog, options=FAST)
        result = await asyncio.wait_for(execute_stored_plan(plan_id, ctx), timeout=HUNG)
        return result.status
    finally:
        store.close()


async def test_a_tool_starts_only_once_its_running_record_and_its_inputs_are_committed(
    uri: str,
) -> None:
    witness = Witness(uri)
    plan = {
        "steps": [
            {"id": "a", "tool": "witness", "parameters": {"value": 1}},
            {"id": "b", "tool": "witness", "parameters": {"value": 2}},
            {"id": "c", "tool": "flaky_witness", "parameters": {"value": "{{a}}"}},
            {"id": "d", "tool": "witness", "parameters": {"value": ["{{b}}", "{{c}}"]}},
            {
                "id": "each",
                "tool": "witness",
                "forEach": "{{d}}",
                "parameters": {"value": "{{$item}}"},
            },
        ]
    }
    assert await _run(uri, witness, plan) == "succeeded"

    calls = [(s["step"], s["item"], s["attempt"]) for s in witness.seen]
    assert sorted(calls, key=str) == sorted(
        [
            ("a", None, 1),
            ("b", None, 1),
            ("c", None, 1),
            ("c", None, 2),
            ("d", None, 1),
            ("each", 0, 1),
            ("each", 1, 1),
        ],
        key=str,
    )
    for seen in witness.seen:
        # Its own record: running, with the attempt being made.
        assert (seen["status"], seen["attempts"]) == ("running", seen["attempt"]), seen
    depends = {"c": {"a": 1}, "d": {"b": 2, "c": 1}, "each": {"d": [2, 1]}}
    for seen in witness.seen:
        for dependency, output in depends.get(seen["step"], {}).items():
            assert seen["others"][dependency] == ("succeeded", output), seen
