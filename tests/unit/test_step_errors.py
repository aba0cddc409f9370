"""An unexpected exception in a step, an item or a fallback ends that step with a recorded
error (issue 42): never a step left ``running`` or ``pending`` in the store with no error,
never a run that stops. The exceptions are planted where a bug would raise them (template
resolution), and the store is read back to see what a resume, ``toolplan show`` or the API
would see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolplan.client import AsyncToolplan
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine import attempts
from toolplan.store.protocol import ExecutionRecord
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=5)


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncToolplan:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    return AsyncToolplan(
        store=SqliteStore(tmp_path / "toolplan.db"),
        tools=load_tool_modules(["tests.support.tools"]),
    )


def _raising_on(module: Any, marker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``module``'s template resolution raise an IndexError for parameters holding
    ``marker`` (as a bug reading one past the end of a list would), and work for the rest."""
    real = module.resolve

    def resolve(value: Any, outputs: Any, schema: Any = None) -> Any:
        if marker in repr(value):
            raise IndexError("list index out of range")
        return real(value, outputs, schema)

    monkeypatch.setattr(module, "resolve", resolve)


async def _stored(client: AsyncToolplan, plan_id: str) -> ExecutionRecord:
    execution = client.store.get_execution(plan_id)
    assert execution is not None
    return execution


async def test_an_unexpected_exception_fails_the_step_on_record(
    client: AsyncToolplan, monkeypatch: pytest.MonkeyPatch
) -> None:
    _raising_on(attempts, "BOOM", monkeypatch)
    plan = {
        "steps": [
            {"id": "a", "tool": "echo", "parameters": {"value": "BOOM"}},
            {"id": "b", "tool": "echo", "parameters": {"value": "{{a}}"}},
            {"id": "c", "tool": "echo", "parameters": {"value": "independent"}},
        ]
    }
    plan_id = (await client.submit(plan)).plan_id
    result = await client.execute(plan_id, options=FAST)
    assert result.status == "partial"
    stored = {s.step_id: s for s in (await _stored(client, plan_id)).steps}
    assert stored["a"].status == "failed"
    assert stored["a"].error is not None
    assert "internal error in step 'a': IndexError: list index out of range" in stored["a"].error
    assert stored["a"].finished_at is not None
    assert stored["b"].status == "skipped"  # its dependents are skipped, as after any failure
    assert stored["c"].status == "succeeded"


async def test_an_unexpected_exception_in_an_item_fails_that_item_on_record(
    client: AsyncToolplan, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = {
        "steps": [
            {
                "id": "each",
                "tool": "echo",
                "forEach": ["ok", "BOOM", "fine"],
                "parameters": {"value": "{{$item}}"},
            }
        ]
    }
    # the marker is in the item, not in the parameters: raise when the item is resolved
    real = attempts.resolve

    def resolve(value: Any, outputs: Any, schema: Any = None) -> Any:
        if outputs.get("$item") == "BOOM":
            raise IndexError("list index out of range")
        return real(value, outputs, schema)

    monkeypatch.setattr(attempts, "resolve", resolve)
    plan_id = (await client.submit(plan)).plan_id
    result = await client.execute(plan_id, options=FAST)
    assert result.status == "failed"
    [record] = (await _stored(client, plan_id)).steps
    assert record.status == "failed" and record.items is not None
    assert [item.status for item in record.items] == ["succeeded", "failed", "succeeded"]
    failed = record.items[1]
    assert failed.error is not None and "internal error in step 'each' item 1" in failed.error
    assert record.error is not None and record.error.startswith("item 1 of 3 failed")


async def test_an_unexpected_exception_in_a_fallback_fails_the_step_on_record(
    client: AsyncToolplan, monkeypatch: pytest.MonkeyPatch
) -> None:
    _raising_on(attempts, "FALLBACK", monkeypatch)
    plan = {
        "steps": [
            {
                "id": "a",
                "tool": "business_error",
                "parameters": {"message": "primary fails"},
                "fallback": {"tool": "echo", "parameters": {"value": "FALLBACK"}},
            }
        ]
    }
    plan_id = (await client.submit(plan)).plan_id
    result = await client.execute(plan_id, options=FAST)
    assert result.status == "failed"
    [record] = (await _stored(client, plan_id)).steps
    assert record.status == "failed", "the step was left as it was when the fallback raised"
    assert record.error is not None
    assert "primary fails" in record.error
    assert "fallback 'echo' failed too: internal error in step 'a'" in record.error


async def test_a_fallback_whose_template_cannot_resolve_names_the_template(
    client: AsyncToolplan,
) -> None:
    """Not the safety net's "internal error": a template the fallback cannot resolve is the
    step's own, named failure."""
    plan = {
        "steps": [
            {"id": "a", "tool": "echo", "parameters": {"value": {"x": 1}}},
            {
                "id": "b",
                "tool": "business_error",
                "parameters": {"message": "primary fails"},
                "fallback": {"tool": "echo", "parameters": {"value": "{{a.missing}}"}},
            },
        ]
    }
    plan_id = (await client.submit(plan)).plan_id
    await client.execute(plan_id, options=FAST)
    stored = {s.step_id: s for s in (await _stored(client, plan_id)).steps}
    error = stored["b"].error
    assert stored["b"].status == "failed" and error is not None
    assert "fallback 'echo' failed too: template '{{a.missing}}'" in error
    assert "internal error" not in error


async def test_a_cache_entry_that_cannot_be_written_leaves_the_success_as_recorded(
    client: AsyncToolplan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's success is recorded before its result is cached: a cache write that fails
    (not a store outage) is logged, and the step stays succeeded; the net of unexpected
    exceptions must not rewrite it as failed."""

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ValueError("cache table is read-only")

    monkeypatch.setattr(client.store, "cache_put", broken)
    plan = {
        "steps": [
            {"id": "a", "tool": "lookup", "parameters": {"key": "k"}},
            {"id": "b", "tool": "echo", "parameters": {"value": "{{a.key}}"}},
        ]
    }
    plan_id = (await client.submit(plan)).plan_id
    result = await client.execute(plan_id, options=FAST)
    assert result.status == "succeeded"
    stored = {s.step_id: s for s in (await _stored(client, plan_id)).steps}
    assert stored["a"].status == "succeeded" and stored["b"].output == "k"
