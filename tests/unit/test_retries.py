"""One retry decision (issue 53): :meth:`RetryPolicy.after` decides for every call, with a
tool's own ``max_attempts`` / ``retry_on`` over the run's and a step's ``maxAttempts`` over
both; attempts count across runs, so a resumed step never gets a fresh set. The same table of
failures through the Temporal backend is in ``tests/temporal/test_temporal_retries.py``."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
from langchain_core.tools import tool

from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.config.retry import TRANSIENT
from toolplan.errors import AttemptFailed, InvalidInput
from toolplan.runs import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.protocol import ItemRecord
from toolplan.store.sqlite import SqliteStore
from toolplan.temporal.messages import RunOptions
from toolplan.tools import ToolCatalog, load_tool_modules, tagged

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=10)


def failure(kind: str, error: BaseException | None = None) -> AttemptFailed:
    return AttemptFailed(f"{kind}!", kind=kind, tool="t", error=error)  # type: ignore[arg-type]


@tool
def plain(value: str) -> str:
    """Return `value`."""
    return value


def test_the_default_policy_retries_timeouts_and_exceptions_until_attempts_run_out() -> None:
    policy = RetryPolicy(initial_backoff=1, backoff_factor=2, jitter=0)
    assert policy.retry_on == TRANSIENT
    assert policy.after(failure("timeout"), "t", 1) == 1.0
    assert policy.after(failure("exception"), "t", 2) == 2.0
    assert policy.after(failure("exception"), "t", 3) is None  # the third of three
    for kind in ("tool_error", "invalid_arguments", "invalid_output"):
        assert policy.after(failure(kind), "t", 1) is None, kind
    assert policy.exhausted(failure("timeout"), "t", 3)
    assert not policy.exhausted(failure("tool_error"), "t", 3)  # given up for its kind
    assert not RetryPolicy(max_attempts=1).exhausted(failure("timeout"), "t", 1)


def test_retry_on_takes_kinds_or_a_predicate_given_the_failure_and_the_tool() -> None:
    assert RetryPolicy(retry_on=["tool_error"]).after(failure("tool_error"), "t", 1) is not None
    assert RetryPolicy(retry_on="timeout").kinds == frozenset({"timeout"})
    seen: list[tuple[str, str]] = []

    def only_connection_errors(failed: AttemptFailed, tool: str) -> bool:
        seen.append((failed.kind, tool))
        return isinstance(failed.error, ConnectionError)

    policy = RetryPolicy(retry_on=only_connection_errors, jitter=0)
    assert policy.kinds is None
    assert policy.after(failure("exception", ConnectionError()), "lookup", 1) == 0.5
    assert policy.after(failure("exception", ValueError()), "lookup", 1) is None
    assert seen == [("exception", "lookup"), ("exception", "lookup")]
    with pytest.raises(ValueError, match="unknown failure kind\\(s\\) 'timeot'; use any of"):
        RetryPolicy(retry_on={"timeot"})
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        RetryPolicy(max_attempts=0)


def test_a_tools_own_policy_is_over_the_runs_and_a_steps_max_attempts_over_both() -> None:
    run = RetryPolicy(max_attempts=3)
    own = tagged(tool(plain.func), max_attempts=5, retry_on={"tool_error"})  # type: ignore[arg-type]
    assert run.for_call(plain) is run
    assert run.for_call(own).max_attempts == 5
    assert run.for_call(own).retry_on == frozenset({"tool_error"})
    assert run.for_call(own, 2).max_attempts == 2
    assert run.for_call(plain, 4).max_attempts == 4
    with pytest.raises(ValueError, match="unknown failure kind"):
        tagged(tool(plain.func), retry_on={"sometimes"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_attempts must be a whole number of at least 1"):
        tagged(tool(plain.func), max_attempts=0)  # type: ignore[arg-type]


def test_a_retry_on_function_cannot_cross_to_temporal_workers() -> None:
    options = ExecutionOptions(retry=RetryPolicy(retry_on=lambda failed, tool: True))
    with pytest.raises(InvalidInput, match="declare the function on the tool"):
        RunOptions.of(options, heartbeat_seconds=1)
    kinds = ExecutionOptions(retry=RetryPolicy(retry_on={"tool_error", "timeout"}))
    crossed = RunOptions.of(kinds, heartbeat_seconds=1).execution_options().retry
    assert crossed.retry_on == frozenset({"tool_error", "timeout"})
    default = RunOptions.of(ExecutionOptions(), heartbeat_seconds=1)
    assert default.retry_on is None and default.execution_options().retry.retry_on == TRANSIENT


def test_jitter_draws_from_the_given_generator() -> None:
    policy = RetryPolicy(initial_backoff=1, jitter=0.5)
    assert policy.after(failure("timeout"), "t", 1, random.Random(7)) == policy.delay(
        1, random.Random(7)
    )


# -- resumed calls: attempts count across runs ---------------------------------------------------


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


def calls(log: Path) -> list[tuple[str, int]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [
        (c["step"] + (f"[{c['item']}]" if c["item"] is not None else ""), c["attempt"])
        for c in map(json.loads, lines)
    ]


def catalog() -> ToolCatalog:
    return load_tool_modules(["tests.support.tools"])


RESUMED = {
    "steps": [
        {
            "id": "pay",
            "tool": "flaky",
            "parameters": {"failures": 9},
            "fallback": {"tool": "echo", "parameters": {"value": "by hand"}},
        },
        {"id": "each", "tool": "flaky", "forEach": [9, 9], "parameters": {"failures": "{{$item}}"}},
    ]
}


async def test_a_resumed_step_out_of_attempts_records_three_not_five(
    tmp_path: Path, log: Path
) -> None:
    """An earlier run made two attempts at ``pay`` (maxAttempts 3 by default) and at item 1 of
    ``each``, then stopped. The resumed run makes one attempt more of each, number 3: the step
    and the item record 3 attempts, and ``pay``'s fallback is handed 3.

    The bug of issue 53: the earlier run's attempts were counted twice, in the numbers and in
    a fresh set of three: attempts 3, 4 and 5 were made, 5 recorded and handed on."""
    store = SqliteStore(tmp_path / "toolplan.db")
    plan_id = submit_plan(RESUMED, store=store, catalog=catalog(), max_steps=50).plan_id
    store.create_execution(plan_id, [("pay", "flaky"), ("each", "flaky")], status="running")
    left = [ItemRecord(0, "failed", 3, error="given up"), ItemRecord(1, "running", 2)]
    store.update_steps(
        plan_id,
        [
            ("pay", {"status": "running", "attempts": 2}),
            ("each", {"status": "running", "items": left, "attempts": 3}),
        ],
    )
    ctx = ExecutionContext(store=store, catalog=catalog(), options=FAST)
    result = await asyncio.wait_for(execute_stored_plan(plan_id, ctx, resume=True), timeout=60)

    assert sorted(calls(log)) == [("each[1]", 3), ("pay", 3), ("pay", 3)]  # the tool, its fallback
    pay = result.step("pay")
    assert (pay.status, pay.attempts, pay.used_fallback) == ("succeeded", 3, True)
    items = result.step("each").items or []
    assert [(i.status, i.attempts) for i in items] == [("failed", 3), ("failed", 3)]
    assert "(after 3 attempts)" in (items[1].error or "")
    store.close()
