"""OpenTelemetry spans (toolplan.engine.tracing) with the SDK's in-memory exporter: one span per
model call, per execution and per step, their parents, attributes and error statuses, and that a
broken exporter or span processor never changes a run."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.support.fake_models import ToolCallingFake
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.recorder import StepEvent
from toolplan.engine.result import ExecutionResult
from toolplan.engine.tracing import SpanHandle, with_step_spans
from toolplan.errors import LLMUnavailable
from toolplan.planning.call import ModelCall, StructuredRequest, call_model
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=5)


def _install(*processors: SpanProcessor, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = TracerProvider()
    for processor in processors:
        provider.add_span_processor(processor)
    # The global provider can be set only once per process; the test sets it for itself.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    _install(SimpleSpanProcessor(memory), monkeypatch=monkeypatch)
    yield memory
    memory.clear()


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


async def run(
    store: SqliteStore, steps: list[dict[str, Any]], events: list[StepEvent] | None = None
) -> ExecutionResult:
    catalog = load_tool_modules(["tests.support.tools"])
    ref = submit_plan({"steps": steps}, store=store, catalog=catalog, max_steps=50)
    ctx = ExecutionContext(
        store=store,
        catalog=catalog,
        options=FAST,
        listener=events.append if events is not None else None,
    )
    return await execute_stored_plan(ref.plan_id, ctx)


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {str(span.attributes.get("toolplan.step.id", span.name)): span for span in spans}  # type: ignore[union-attr]


async def test_an_execution_span_parents_one_span_per_step(
    store: SqliteStore, exporter: InMemorySpanExporter
) -> None:
    events: list[StepEvent] = []
    final = await run(
        store,
        [
            {"id": "a", "tool": "echo", "parameters": {"value": 1}},
            {"id": "b", "tool": "echo", "parameters": {"value": "{{a}}"}, "dependsOn": ["a"]},
            {"id": "c", "tool": "flaky", "parameters": {"failures": 1}, "maxAttempts": 2},
        ],
        events,
    )
    assert final.status == "succeeded"
    assert [e.kind for e in events if e.step_id == "a"] == ["started", "succeeded"]  # still told
    spans = by_name(exporter.get_finished_spans())
    assert set(spans) == {"invoke_workflow toolplan", "a", "b", "c"}
    run_span = spans["invoke_workflow toolplan"]
    assert run_span.attributes == {
        "gen_ai.operation.name": "invoke_workflow",
        "toolplan.plan.id": final.plan_id,
        "toolplan.request.id": final.request_id,
        "toolplan.plan.steps": 3,
        "toolplan.execution.status": "succeeded",
    }
    assert run_span.status.status_code is StatusCode.UNSET
    for step in "abc":
        span = spans[step]
        assert span.parent is not None and span.parent.span_id == run_span.context.span_id
        assert span.context.trace_id == run_span.context.trace_id
        assert span.start_time is not None and span.end_time is not None
        assert run_span.start_time <= span.start_time <= span.end_time <= run_span.end_time  # type: ignore[operator]
    assert spans["a"].name == "execute_tool echo"
    assert spans["a"].attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.call.id": f"{final.plan_id}:a",
        "toolplan.plan.id": final.plan_id,
        "toolplan.step.id": "a",
        "toolplan.step.attempt": 1,
        "toolplan.step.status": "succeeded",
        "toolplan.step.cached": False,
        "toolplan.step.used_fallback": False,
    }
    # b starts once a has ended: the span is timed from the step's own duration
    assert spans["b"].start_time >= spans["a"].end_time - 2_000_000  # type: ignore[operator]
    # c's first attempt failed: a retry event on its span, at attempt 2 in the end
    assert spans["c"].attributes["toolplan.step.attempt"] == 2  # type: ignore[index]
    assert [(e.name, e.attributes["toolplan.step.attempt"]) for e in spans["c"].events] == [  # type: ignore[index]
        ("retrying", 1)
    ]


async def test_a_failed_step_is_an_error_span_and_its_dependents_are_skipped_spans(
    store: SqliteStore, exporter: InMemorySpanExporter
) -> None:
    final = await run(
        store,
        [
            {"id": "bad", "tool": "business_error", "parameters": {"message": "no stock"}},
            {"id": "after", "tool": "echo", "parameters": {"value": "{{bad}}"}},
        ],
    )
    assert final.status in ("failed", "partial")
    spans = by_name(exporter.get_finished_spans())
    bad, after, run_span = spans["bad"], spans["after"], spans["invoke_workflow toolplan"]
    assert bad.status.status_code is StatusCode.ERROR
    assert "no stock" in (bad.status.description or "")
    assert bad.attributes["error.type"] == "toolplan.step_failed"  # type: ignore[index]
    assert bad.attributes["toolplan.step.status"] == "failed"  # type: ignore[index]
    assert after.status.status_code is StatusCode.UNSET
    assert after.attributes["toolplan.step.status"] == "skipped"  # type: ignore[index]
    assert "bad" in str(after.attributes["toolplan.step.reason"])  # type: ignore[index]
    assert after.parent is not None and after.parent.span_id == run_span.context.span_id
    assert run_span.status.status_code is StatusCode.ERROR
    assert run_span.status.description == "steps failed: bad"
    assert run_span.attributes["toolplan.execution.status"] == final.status  # type: ignore[index]


async def test_a_step_served_from_the_cache_is_marked_cached(
    store: SqliteStore, exporter: InMemorySpanExporter
) -> None:
    steps = [{"id": "look", "tool": "lookup", "parameters": {"key": "k"}}]
    await run(store, steps)
    await run(store, steps)
    looks = [s for s in exporter.get_finished_spans() if s.name == "execute_tool lookup"]
    assert [s.attributes["toolplan.step.cached"] for s in looks] == [False, True]  # type: ignore[index]


class Broken(SpanProcessor):
    """A span processor that fails on every span it is told about."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor down")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("processor down")


class Refusing(SpanExporter):
    """An exporter that raises instead of exporting."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise ConnectionError("collector down")


@pytest.mark.parametrize("processor", [Broken(), SimpleSpanProcessor(Refusing())])
async def test_a_failing_processor_or_exporter_never_fails_a_run_or_a_model_call(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch, processor: SpanProcessor
) -> None:
    memory = InMemorySpanExporter()
    _install(processor, SimpleSpanProcessor(memory), monkeypatch=monkeypatch)
    events: list[StepEvent] = []
    final = await run(
        store,
        [
            {"id": "a", "tool": "echo", "parameters": {"value": 1}},
            {"id": "b", "tool": "echo", "parameters": {"value": "{{a}}"}},
        ],
        events,
    )
    assert final.status == "succeeded"
    assert [s.status for s in final.steps] == ["succeeded", "succeeded"]
    assert [e.kind for e in events] == ["started", "succeeded", "started", "succeeded"]
    reply = await call_model(ModelCall(answering(), "openai:gpt-test"), request())
    assert reply.usage == {"inputTokens": 11, "outputTokens": 7}


def test_without_an_sdk_an_execution_does_not_watch_its_steps_for_spans() -> None:
    def listener(event: StepEvent) -> None:
        pass

    untraced = SpanHandle(trace.INVALID_SPAN)
    assert with_step_spans(listener, "plan_x", untraced) is listener
    assert with_step_spans(None, "plan_x", untraced) is None


def answering() -> ToolCallingFake:
    ToolCallingFake.seen = []
    message = AIMessage(
        content="",
        tool_calls=[{"name": "Answer", "args": {"text": "hi"}, "id": "call_1"}],
        usage_metadata={"input_tokens": 11, "output_tokens": 7, "total_tokens": 18},
        response_metadata={"finish_reason": "tool_calls"},
    )
    return ToolCallingFake(messages=iter([message]))


def request() -> StructuredRequest:
    schema = {"title": "Answer", "type": "object", "properties": {"text": {"type": "string"}}}
    return StructuredRequest(messages=[HumanMessage("hello")], schema=schema)


async def test_a_model_call_is_a_client_span_with_genai_attributes(
    exporter: InMemorySpanExporter,
) -> None:
    call = ModelCall(
        answering(),
        "openai:gpt-test",
        endpoint="http://user:secret@llm.internal:8000/v1",
        max_tokens=512,
    )
    reply = await call_model(call, request())
    assert reply.answer.input_tokens == 11
    (span,) = exporter.get_finished_spans()
    assert span.name == "chat gpt-test"
    assert span.kind is SpanKind.CLIENT
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.request.max_tokens": 512,
        "server.address": "llm.internal",  # never the credentials or the path
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }
    assert span.status.status_code is StatusCode.UNSET


async def test_a_failed_model_call_is_an_error_span(exporter: InMemorySpanExporter) -> None:
    class Down(ToolCallingFake):
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("connection refused")

    with pytest.raises(LLMUnavailable):
        await call_model(ModelCall(Down(messages=iter([])), "openai:gpt-test"), request())
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "ConnectionError"  # type: ignore[index]
    assert [event.name for event in span.events] == ["exception"]
