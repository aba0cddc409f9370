"""Both backends retry exactly the same failures (issue 53): one table of failure kinds, tools'
own retry policies and a step's ``maxAttempts``, run in process and on a real Temporal server,
ends the same, with the same calls; and a resumed step counts its attempts across runs on
Temporal too. The decision is :meth:`toolplan.config.retry.RetryPolicy.after` in both."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from toolplan.config import TemporalSettings
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.runs import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.temporal import TemporalBackend
from toolplan.temporal.client import connect
from toolplan.temporal.worker import build_worker
from toolplan.tools import ToolCatalog, load_tool_modules

pytestmark = pytest.mark.temporal

OPTIONS = ExecutionOptions(
    default_timeout=10, retry=RetryPolicy(initial_backoff=0.01, jitter=0), graph_checkpoints=False
)

TABLE: dict[str, tuple[dict[str, Any], str, int]] = {
    # step id: (the step, how it ends, attempts made)
    "tool_error": ({"tool": "business_error", "parameters": {"message": "no"}}, "failed", 1),
    "invalid_arguments": (
        {"tool": "sleepy", "parameters": {"label": "x", "seconds": "{{raw.title}}"}},
        "failed",
        1,
    ),
    "invalid_output": ({"tool": "raw_bytes", "parameters": {}}, "failed", 1),
    "timeout": ({"tool": "hang", "parameters": {}, "timeout": 0.3, "maxAttempts": 2}, "failed", 2),
    "exception": ({"tool": "flaky", "parameters": {"failures": 9}}, "failed", 3),
    "transient_then_ok": ({"tool": "flaky", "parameters": {"failures": 1}}, "succeeded", 2),
    "tool_max_attempts": ({"tool": "patient", "parameters": {"failures": 4}}, "succeeded", 5),
    "step_over_tool": (
        {"tool": "patient", "parameters": {"failures": 9}, "maxAttempts": 2},
        "failed",
        2,
    ),
    "tool_retries_its_error": ({"tool": "busy_line", "parameters": {}}, "failed", 3),
    "predicate_retries": (
        {"tool": "picky", "parameters": {"error": "ConnectionError"}},
        "failed",
        3,
    ),
    "predicate_refuses": ({"tool": "picky", "parameters": {"error": "ValueError"}}, "failed", 1),
}
"""Every failure kind under the default policy, and a tool's own ``max_attempts``, ``retry_on``
kinds and ``retry_on`` predicate (``tests/support/retry_tools.py``), and a step's
``maxAttempts`` over its tool's."""

PLAN = {
    "steps": [
        {"id": "raw", "tool": "echo", "parameters": {"value": {"title": "T"}}},
        *({"id": step_id, **step} for step_id, (step, _, _) in TABLE.items()),
    ]
}


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


def calls(log: Path, plan_id: str) -> list[tuple[str, int]]:
    """The tool calls of ``plan_id``: step and attempt, sorted."""
    found = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return sorted((c["step"], c["attempt"]) for c in found if c["key"].startswith(plan_id))


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


@pytest.fixture
def catalog() -> ToolCatalog:
    return load_tool_modules(
        ["tests.support.tools", "tests.support.odd_outputs", "tests.support.retry_tools"]
    )


@pytest.fixture
async def worker(
    temporal_settings: TemporalSettings, store: SqliteStore, catalog: ToolCatalog
) -> AsyncIterator[None]:
    client = await connect(temporal_settings)
    async with build_worker(client, temporal_settings, store, catalog, concurrency=20, grace=0):
        yield


def contexts(
    store: SqliteStore, catalog: ToolCatalog, settings: TemporalSettings
) -> dict[str, ExecutionContext]:
    """The in-process engine and the Temporal backend, on the same store and tools."""
    return {
        "in process": ExecutionContext(store=store, catalog=catalog, options=OPTIONS),
        "temporal": ExecutionContext(
            store=store,
            catalog=catalog,
            options=OPTIONS,
            backend=TemporalBackend(settings, poll_seconds=0.05),
        ),
    }


async def test_both_backends_retry_exactly_the_same_failures(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Path,
) -> None:
    ended: dict[str, dict[str, tuple[str, int]]] = {}
    called: dict[str, list[tuple[str, int]]] = {}
    for name, ctx in contexts(store, catalog, temporal_settings).items():
        plan_id = submit_plan(PLAN, store=store, catalog=catalog, max_steps=50).plan_id
        result = await execute_stored_plan(plan_id, ctx)
        ended[name] = {s.step_id: (s.status, s.attempts) for s in result.steps}
        called[name] = calls(log, plan_id)

    expected = {step_id: (status, attempts) for step_id, (_, status, attempts) in TABLE.items()}
    assert ended["temporal"] == ended["in process"]
    assert {k: v for k, v in ended["temporal"].items() if k != "raw"} == expected
    assert called["temporal"] == called["in process"]  # the same calls, attempt by attempt


RESUMED = {
    "steps": [
        {
            "id": "pay",
            "tool": "flaky",
            "parameters": {"failures": 9},
            "fallback": {"tool": "echo", "parameters": {"value": "by hand"}},
        },
        {"id": "more", "tool": "patient", "parameters": {"failures": 9}},
    ]
}


async def test_a_resumed_step_counts_its_earlier_attempts_on_both_backends(
    worker: None,
    store: SqliteStore,
    catalog: ToolCatalog,
    temporal_settings: TemporalSettings,
    log: Path,
) -> None:
    """An earlier run made two attempts at ``pay`` (3 in all) and at ``more`` (its tool's 5 in
    all), then stopped. Resumed on either backend, ``pay`` makes one attempt more, records 3
    and hands 3 to its fallback; ``more`` makes attempts 3 to 5 (not 3 to 7)."""
    ended: dict[str, dict[str, tuple[str, int, bool]]] = {}
    called: dict[str, list[tuple[str, int]]] = {}
    for name, ctx in contexts(store, catalog, temporal_settings).items():
        plan_id = submit_plan(RESUMED, store=store, catalog=catalog, max_steps=50).plan_id
        store.create_execution(plan_id, [("pay", "flaky"), ("more", "patient")], status="running")
        earlier = {"status": "running", "attempts": 2}
        store.update_steps(plan_id, [("pay", earlier), ("more", earlier)])
        result = await execute_stored_plan(plan_id, ctx, resume=True)
        ended[name] = {s.step_id: (s.status, s.attempts, s.used_fallback) for s in result.steps}
        called[name] = calls(log, plan_id)

    assert (
        ended["temporal"]
        == ended["in process"]
        == {
            "pay": ("succeeded", 3, True),
            "more": ("failed", 5, False),
        }
    )
    assert (
        called["temporal"]
        == called["in process"]
        == [
            ("more", 3),
            ("more", 4),
            ("more", 5),
            ("pay", 3),  # the tool's last attempt
            ("pay", 3),  # its fallback, handed the attempts made
        ]
    )
