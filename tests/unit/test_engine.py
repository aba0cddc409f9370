"""The engine end to end in-process: policies, fail-forward, outputs, durability, resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from tests.support import tools as test_tools
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.recorder import StepEvent
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog, load_tool_modules

SEEN_CONFIGS: list[dict[str, Any]] = []


@tool
def capture(value: str, config: RunnableConfig) -> dict[str, Any]:
    """Record the run config's metadata and return it."""
    SEEN_CONFIGS.append(dict(config.get("metadata") or {}))
    return {"value": value}


@tool
def grumpy() -> str:
    """Always raise an exception whose text looks like a business error's."""
    raise RuntimeError("the sensor reported an error")


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def catalog() -> ToolCatalog:
    cat = load_tool_modules(["blog", "weather", "tests.support.tools"])
    cat.add([capture, grumpy])
    return cat


FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=5)


async def run(
    store: SqliteStore,
    plan: dict[str, Any],
    *,
    options: ExecutionOptions = FAST,
    events: list[StepEvent] | None = None,
):  # type: ignore[no-untyped-def]
    cat = catalog()
    ref = submit_plan(plan, store=store, catalog=cat, max_steps=50)
    ctx = ExecutionContext(
        store=store,
        catalog=cat,
        options=options,
        listener=events.append if events is not None else None,
    )
    return await execute_stored_plan(ref.plan_id, ctx)


def s(sid: str, tool_name: str, **kw: Any) -> dict[str, Any]:
    extra = {k: kw.pop(k) for k in ("timeout", "maxAttempts", "fallback", "dependsOn") if k in kw}
    return {"id": sid, "tool": tool_name, "parameters": kw, **extra}


def test_retry_policy_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(initial_backoff=0.5, backoff_factor=2, max_backoff=3, jitter=0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    jittered = RetryPolicy(initial_backoff=1, jitter=0.25)
    delays = [jittered.delay(1) for _ in range(200)]
    assert all(0.75 <= d <= 1.25 for d in delays) and len(set(delays)) > 1


async def test_transient_errors_are_retried_until_success(store: SqliteStore, log: Path) -> None:
    events: list[StepEvent] = []
    result = await run(
        store, {"steps": [s("f", "flaky", failures=2, maxAttempts=3)]}, events=events
    )
    step = result.step("f")
    assert (result.status, step.status, step.attempts) == ("succeeded", "succeeded", 3)
    assert step.output == {"attempt": 3}
    assert [e.kind for e in events] == [
        "started",
        "retrying",
        "started",
        "retrying",
        "started",
        "succeeded",
    ]
    assert [c["attempt"] for c in calls(log)] == [1, 2, 3]


async def test_attempts_run_out(store: SqliteStore, log: Path) -> None:
    result = await run(store, {"steps": [s("f", "flaky", failures=5, maxAttempts=2)]})
    step = result.step("f")
    assert (step.status, step.attempts) == ("failed", 2)
    assert "ConnectionError" in (step.error or "") and "after 2 attempts" in (step.error or "")
    assert result.status == "failed" and result.exit_code == 1


async def test_retries_are_counted_by_the_kind_of_failure_not_its_wording(
    store: SqliteStore,
) -> None:
    result = await run(store, {"steps": [s("g", "grumpy", maxAttempts=2)]})
    step = result.step("g")
    assert (step.status, step.attempts) == ("failed", 2)
    assert step.error == (
        "tool 'grumpy' raised RuntimeError: the sensor reported an error (after 2 attempts)"
    )


async def test_business_errors_are_never_retried(store: SqliteStore, log: Path) -> None:
    result = await run(
        store, {"steps": [s("b", "business_error", message="no such city", maxAttempts=5)]}
    )
    step = result.step("b")
    assert (step.status, step.attempts) == ("failed", 1)
    assert step.error == "tool 'business_error' reported an error: no such city"
    assert len(calls(log)) == 1


async def test_timeout_cancels_a_hanging_tool(store: SqliteStore, log: Path) -> None:
    result = await run(store, {"steps": [s("h", "hang", timeout=0.05, maxAttempts=2)]})
    step = result.step("h")
    assert (step.status, step.attempts) == ("failed", 2)
    assert "timed out after 0.05s and was cancelled" in (step.error or "")
    assert [c["event"] for c in calls(log)] == ["start", "start"]


async def test_default_timeout_applies(store: SqliteStore, log: Path) -> None:
    options = ExecutionOptions(retry=RetryPolicy(max_attempts=1), default_timeout=0.05)
    result = await run(store, {"steps": [s("h", "hang")]}, options=options)
    assert "timed out after 0.05s" in (result.step("h").error or "")


async def test_fallback_after_business_error_becomes_the_output(
    store: SqliteStore, log: Path
) -> None:
    plan = {
        "steps": [
            s(
                "b",
                "business_error",
                message="down",
                fallback={"tool": "echo", "parameters": {"value": {"from": "fallback"}}},
            ),
            s("next", "echo", value="{{b.from}}"),
        ]
    }
    result = await run(store, plan)
    assert result.step("b").status == "succeeded" and result.step("b").used_fallback
    assert result.step("b").output == {"from": "fallback"}
    assert result.step("next").output == "fallback"
    assert [c["key"] for c in calls(log)][:2] == [
        f"{result.plan_id}:b",
        f"{result.plan_id}:b:fallback",
    ]


async def test_fallback_after_attempts_run_out_and_fallback_failure(
    store: SqliteStore, log: Path
) -> None:
    plan = {
        "steps": [
            s(
                "f",
                "flaky",
                failures=9,
                maxAttempts=2,
                fallback={"tool": "business_error", "parameters": {"message": "also down"}},
            ),
        ]
    }
    result = await run(store, plan)
    step = result.step("f")
    assert step.status == "failed" and step.attempts == 2
    assert "fallback 'business_error' failed too" in (step.error or "") and "also down" in (
        step.error or ""
    )


async def test_fail_forward_skips_dependents_and_continues_independent_steps(
    store: SqliteStore, log: Path
) -> None:
    plan = {
        "steps": [
            s("s1", "business_error", message="flaky api"),
            s("s2", "echo", value="reliable"),
            s("s3", "echo", value="{{s1}}"),
            s("s4", "echo", value="{{s3}}"),
        ],
        "outputSteps": ["s2", "s3"],
    }
    result = await run(store, plan)
    status = {st.step_id: st.status for st in result.steps}
    assert status == {"s1": "failed", "s2": "succeeded", "s3": "skipped", "s4": "skipped"}
    assert result.step("s3").error == "skipped because dependency 's1' failed"
    assert result.step("s4").error == "skipped because dependency 's1' failed"
    assert result.status == "partial" and result.outputs == {"s2": "reliable", "s3": None}


async def test_fail_fast(store: SqliteStore, log: Path) -> None:
    plan = {
        "steps": [
            s("bad", "business_error", message="x"),
            s("slow", "sleepy", label="l", seconds=5),
        ]
    }
    options = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001), fail_fast=True)
    result = await run(store, plan, options=options)
    assert result.step("bad").status == "failed"
    assert result.step("slow").status == "skipped" and "--fail-fast" in (
        result.step("slow").error or ""
    )


async def test_missing_template_key_fails_the_step_without_calling_the_tool(
    store: SqliteStore, log: Path
) -> None:
    plan = {
        "steps": [
            s("a", "echo", value={"x": 1}),
            s("b", "echo", value="{{a.y}}"),
            s("c", "echo", value="{{b}}"),
        ]
    }
    result = await run(store, plan)
    b = result.step("b")
    assert b.status == "failed" and b.attempts == 0
    assert "{{a.y}}" in (b.error or "") and "'y'" in (b.error or "")
    assert result.step("c").status == "skipped"
    assert [c["step"] for c in calls(log)] == ["a"]  # b's tool was never called


async def test_tool_argument_validation_after_resolution_is_not_retried(
    store: SqliteStore, log: Path
) -> None:
    plan = {
        "steps": [
            s("a", "echo", value={"n": [1]}),
            s("w", "get_weather", location="{{a.n}}", maxAttempts=3),
        ]
    }
    result = await run(store, plan)
    w = result.step("w")
    assert (w.status, w.attempts) == ("failed", 1)
    assert "rejected its arguments" in (w.error or "")


async def test_a_number_or_boolean_passed_whole_where_only_text_goes_is_passed_as_text(
    store: SqliteStore, log: Path
) -> None:
    # A model writes "location": "{{a.n}}" meaning the number as text; the tool takes a string
    # and would reject the bare number. Where the argument takes numbers, the number stays one.
    plan = {
        "steps": [
            s("a", "echo", value={"n": 1, "ok": True, "t": 21.5}),
            s("w", "get_weather", location="{{a.n}}"),
            s("flag", "capture", value="{{a.ok}}"),
            s("same", "echo", value="{{a.t}}"),
            s("f", "grumpy", fallback={"tool": "capture", "parameters": {"value": "{{a.t}}"}}),
        ]
    }
    result = await run(store, plan)
    assert result.step("w").status == "succeeded"
    assert result.step("w").resolved_parameters == {"location": "1"}
    assert result.step("flag").output == {"value": "true"}
    assert result.step("same").output == 21.5  # echo takes any value: the type is kept
    assert result.step("f").output == {"value": "21.5"}


async def test_string_outputs_parse_json_objects_and_lists_only(
    store: SqliteStore, log: Path
) -> None:
    plan = {
        "steps": [
            s("obj", "text", value='{"a": {"b": 2}}'),
            s("arr", "text", value="[1, 2]"),
            s("plain", "text", value="hello"),
            s("num", "text", value="42"),
            s("use", "echo", value="{{obj.a.b}}-{{arr[1]}}-{{plain}}-{{num}}"),
        ]
    }
    result = await run(store, plan)
    assert result.step("obj").output == {"a": {"b": 2}}
    assert result.step("arr").output == [1, 2]
    assert result.step("plain").output == "hello"
    assert result.step("num").output == "42"
    assert result.step("use").output == "2-2-hello-42"


async def test_run_config_metadata_carries_ids_attempt_and_idempotency_key(
    store: SqliteStore,
) -> None:
    SEEN_CONFIGS.clear()
    result = await run(store, {"steps": [s("cap", "capture", value="v")]})
    (metadata,) = SEEN_CONFIGS
    assert metadata["request_id"] == result.request_id
    assert metadata["plan_id"] == result.plan_id
    assert metadata["step_id"] == "cap" and metadata["attempt"] == 1
    assert metadata["idempotency_key"] == f"{result.plan_id}:cap"


async def test_blog_chain_records_resolved_parameters_and_outputs(store: SqliteStore) -> None:
    plan = json.loads((Path(__file__).parents[2] / "examples" / "blog_chain.json").read_text())
    result = await run(store, plan)
    assert result.status == "succeeded"
    author, blog = result.step("author"), result.step("blog")
    assert blog.resolved_parameters["authorId"] == author.output["_id"]
    assert blog.resolved_parameters["content"] == "about world, by Alice"
    assert set(result.outputs) == {"blog", "comment"}
    assert (
        store.find_records("blogs", {"_id": blog.output["_id"]})[0]["authorId"]
        == author.output["_id"]
    )
    assert all(
        st.started_at and st.finished_at and st.duration_ms is not None for st in result.steps
    )


async def test_finished_plan_is_returned_as_stored_without_calling_tools(
    store: SqliteStore, log: Path
) -> None:
    cat = catalog()
    ref = submit_plan({"steps": [s("a", "echo", value=1)]}, store=store, catalog=cat, max_steps=50)
    ctx = ExecutionContext(store=store, catalog=cat, options=FAST)
    first = await execute_stored_plan(ref.plan_id, ctx)
    second = await execute_stored_plan(ref.plan_id, ctx)
    assert first.to_json() == second.to_json()
    assert len(calls(log)) == 1


async def test_resume_uses_stored_outputs_and_skips_finished_steps(
    store: SqliteStore, log: Path
) -> None:
    cat = catalog()
    ref = submit_plan(
        {"steps": [s("a", "echo", value={"x": "first"}), s("b", "echo", value="{{a.x}}!")]},
        store=store,
        catalog=cat,
        max_steps=50,
    )
    # Simulate a crash after 'a' succeeded and 'b' started: the records are all that survive.
    store.create_execution(ref.plan_id, [("a", "echo"), ("b", "echo")], status="running")
    store.update_step(
        ref.plan_id, "a", {"status": "succeeded", "attempts": 1, "output": {"x": "stored"}}
    )
    store.update_step(ref.plan_id, "b", {"status": "running", "attempts": 1})
    result = await execute_stored_plan(
        ref.plan_id, ExecutionContext(store=store, catalog=cat, options=FAST)
    )
    assert result.status == "succeeded"
    assert result.step("b").output == "stored!"
    assert result.step("b").attempts == 2  # the interrupted attempt counts
    assert [c["step"] for c in calls(log)] == ["b"]


async def test_large_outputs_are_capped_and_flagged(store: SqliteStore) -> None:
    options = ExecutionOptions(output_limit_bytes=300)
    result = await run(store, {"steps": [s("big", "echo", value="x" * 5000)]}, options=options)
    step = result.step("big")
    assert step.output_truncated and step.output["truncated"] is True
    assert len(json.dumps(step.output)) < 400


async def test_unknown_plan_and_catalog_drift_are_rejected_before_running(
    store: SqliteStore, log: Path
) -> None:
    from toolplan.errors import NotFound, PlanInvalid

    cat = catalog()
    ref = submit_plan({"steps": [s("a", "echo", value=1)]}, store=store, catalog=cat, max_steps=50)
    with pytest.raises(NotFound):
        await execute_stored_plan(
            "plan_1700000000_abcdef", ExecutionContext(store=store, catalog=cat)
        )
    smaller = load_tool_modules(["weather"])
    with pytest.raises(PlanInvalid, match="unknown tool 'echo'"):
        await execute_stored_plan(ref.plan_id, ExecutionContext(store=store, catalog=smaller))
    assert calls(log) == []


_ = test_tools  # the module is loaded by name through the catalog
