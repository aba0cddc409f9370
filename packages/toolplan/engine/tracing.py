"""OpenTelemetry spans of model calls, executions and steps; observers, never a run's business.

toolplan depends on ``opentelemetry-api`` only: until the application installs an SDK and sets a
tracer provider (``opentelemetry-sdk``, Logfire, Langfuse, Phoenix), every span here is the API's
non-recording no-op, and an execution does not even watch its steps for spans.

Names follow the GenAI semantic conventions (development status) where they apply:

- a model call (:func:`model_call_span`): ``chat {model}``, kind ``CLIENT``, with
  ``gen_ai.operation.name`` ``chat``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.request.max_tokens``, ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
  ``gen_ai.usage.cache_read.input_tokens`` and ``gen_ai.response.finish_reasons``;
- an execution (:func:`execution_span`): ``invoke_workflow toolplan``, with ``toolplan.plan.id``,
  ``toolplan.request.id``, ``toolplan.plan.steps`` and, at its end, ``toolplan.execution.status``;
- a step (:class:`StepSpans`): ``execute_tool {tool}``, a child of its execution's span, with
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` (the step's idempotency key, ``PLAN:STEP``),
  ``toolplan.plan.id``, ``toolplan.step.id``, ``toolplan.step.attempt``,
  ``toolplan.step.status``, ``toolplan.step.cached`` and ``toolplan.step.used_fallback``.

A failed model call, step or execution ends with the span status ``ERROR`` and ``error.type``.

Spans are observers, like the step events they are made from (:mod:`toolplan.engine.observers`):
whatever the SDK, a span processor or an exporter raises is logged once and ignored, so tracing
never fails or changes a run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

if TYPE_CHECKING:
    from toolplan.engine.recorder import EventListener, StepEvent

__all__ = [
    "TRACER_NAME",
    "SpanHandle",
    "StepSpans",
    "execution_span",
    "model_call_span",
    "record_execution",
    "record_usage",
    "with_step_spans",
]

TRACER_NAME = "toolplan"
"""The instrumentation scope of every span here (filter on it in a backend)."""

logger = logging.getLogger("toolplan.engine")

T = TypeVar("T")

Attributes = Mapping[str, str | bool | int | float | Sequence[str] | None]
"""Span attributes; a ``None`` value is left out."""


class _Quiet:
    """Runs calls into OpenTelemetry; a failure is logged (once at warning level) and ignored."""

    def __init__(self) -> None:
        self.failures = 0

    def __call__(self, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except Exception as error:
            self.failures += 1
            if self.failures == 1:
                logger.warning(
                    "OpenTelemetry failed (%s: %s); the span is dropped and the run goes on "
                    "(further failures are logged at debug level only)",
                    type(error).__name__,
                    error,
                )
            logger.debug("OpenTelemetry failed", exc_info=True)
            return None


_quietly = _Quiet()


def _tracer() -> trace.Tracer:
    # Asked each time: the global provider may be set after toolplan is imported.
    return trace.get_tracer(TRACER_NAME)


def _present(attributes: Attributes) -> dict[str, Any]:
    return {key: value for key, value in attributes.items() if value is not None}


class SpanHandle:
    """A started span whose methods never raise (``None``: starting it failed)."""

    def __init__(self, span: trace.Span | None) -> None:
        self.span = span

    @property
    def recording(self) -> bool:
        """Whether the span is recorded (an SDK is installed and sampled it)."""
        span = self.span
        return span is not None and bool(_quietly(span.is_recording))

    def set(self, attributes: Attributes) -> None:
        """Add ``attributes`` (those that are not ``None``)."""
        span = self.span
        if span is not None:
            _quietly(lambda: span.set_attributes(_present(attributes)))

    def fail(self, description: str, error_type: str) -> None:
        """End as an error: status ``ERROR`` with ``description``, and ``error.type``."""
        span = self.span
        if span is not None:
            _quietly(lambda: span.set_attribute("error.type", error_type))
            _quietly(lambda: span.set_status(Status(StatusCode.ERROR, description)))


@contextmanager
def _span(
    name: str, attributes: Attributes, *, kind: SpanKind = SpanKind.INTERNAL
) -> Iterator[SpanHandle]:
    """A span that is current inside the block; an exception leaving the block is recorded on
    it (and propagates, as it would have)."""
    span = _quietly(lambda: _tracer().start_span(name, kind=kind, attributes=_present(attributes)))
    token = None
    if span is not None:
        token = _quietly(lambda: otel_context.attach(trace.set_span_in_context(span)))
    handle = SpanHandle(span)
    try:
        yield handle
    except Exception as error:
        if span is not None:
            _quietly(partial(span.record_exception, error))
        handle.fail(str(error) or type(error).__name__, _qualified(type(error)))
        raise
    finally:
        if token is not None:
            _quietly(lambda: otel_context.detach(token))
        if span is not None:
            _quietly(span.end)


def _qualified(kind: type) -> str:
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _host(endpoint: str | None) -> str | None:
    # The host only: an endpoint URL may carry credentials or a path nobody needs in a trace.
    if not endpoint:
        return None
    try:
        return urlsplit(endpoint).hostname
    except ValueError:
        return None


@contextmanager
def model_call_span(
    spec: str, *, max_tokens: int | None = None, endpoint: str | None = None
) -> Iterator[SpanHandle]:
    """The span of one call to the model named ``spec`` (``provider:model``); set the usage on
    it with :func:`record_usage`."""
    provider, _, model = spec.partition(":")
    if not model:
        provider, model = "", spec
    with _span(
        f"chat {model}",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider or None,
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": max_tokens,
            "server.address": _host(endpoint),
        },
        kind=SpanKind.CLIENT,
    ) as span:
        yield span


def record_usage(
    span: SpanHandle,
    *,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int | None,
    finish_reason: str | None,
) -> None:
    """What a model call cost and why it stopped, as GenAI attributes of its span."""
    span.set(
        {
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "gen_ai.usage.cache_read.input_tokens": cached_input_tokens,
            "gen_ai.response.finish_reasons": [finish_reason] if finish_reason else None,
        }
    )


@contextmanager
def execution_span(plan_id: str, request_id: str, steps: int) -> Iterator[SpanHandle]:
    """The span of one execution of ``plan_id``; the block sets its end with
    :func:`record_execution`."""
    with _span(
        "invoke_workflow toolplan",
        {
            "gen_ai.operation.name": "invoke_workflow",
            "toolplan.plan.id": plan_id,
            "toolplan.request.id": request_id,
            "toolplan.plan.steps": steps,
        },
    ) as span:
        yield span


def record_execution(span: SpanHandle, status: str, failed_steps: Sequence[str]) -> None:
    """The execution's final ``status``; one with failed steps (``failed``, ``partial``) is an
    error naming them."""
    span.set({"toolplan.execution.status": status})
    if failed_steps:
        span.fail(f"steps failed: {', '.join(failed_steps)}", "toolplan.step_failed")


_TERMINAL = frozenset({"succeeded", "failed", "skipped", "cancelled"})


class StepSpans:
    """Makes one ``execute_tool`` span per step from a run's step events (a recorder's
    listener), under ``parent`` (the execution's span; ``None``: the current span, e.g.
    Temporal's activity span).

    A span is made when its step reaches a final state, with the start time that state's
    ``duration_ms`` gives (so a step served from the cache, or skipped, is timed as the others),
    and the step's retries and fallback as span events at the time they happened. Spans of
    steps a tool makes itself (an instrumented HTTP client) are therefore children of the
    execution's span, not of the step's.
    """

    def __init__(self, plan_id: str, *, parent: SpanHandle | None = None) -> None:
        self.plan_id = plan_id
        self.parent = parent
        self._started: dict[str, int] = {}
        self._events: dict[str, list[tuple[str, dict[str, Any], int]]] = {}

    def __call__(self, event: StepEvent) -> None:
        """Take one step event; never raises."""
        if getattr(event, "item", None) is not None:
            return  # one item of a forEach step: the step's own span covers it
        now = time.time_ns()
        step = event.step_id
        if event.kind == "started":
            self._started.setdefault(step, now)
        elif event.kind in ("retrying", "fallback"):
            attributes = _present(
                {
                    "toolplan.step.attempt": event.attempt,
                    "error.message": event.error,
                    "toolplan.step.fallback_tool": event.fallback_tool,
                }
            )
            self._events.setdefault(step, []).append((event.kind, attributes, now))
        elif event.kind in _TERMINAL:
            _quietly(lambda: self._end(event, now))

    def _end(self, event: StepEvent, now: int) -> None:
        step = event.step_id
        first = self._started.pop(step, now)
        start = now - int(event.duration_ms * 1_000_000) if event.duration_ms is not None else first
        parent = self.parent.span if self.parent is not None else None
        span = _tracer().start_span(
            f"execute_tool {event.tool}",
            context=trace.set_span_in_context(parent) if parent is not None else None,
            start_time=min(start, now),
            attributes=_present(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.tool,
                    "gen_ai.tool.call.id": f"{self.plan_id}:{step}",
                    "toolplan.plan.id": self.plan_id,
                    "toolplan.step.id": step,
                    "toolplan.step.attempt": event.attempt,
                    "toolplan.step.status": event.kind,
                    "toolplan.step.cached": getattr(event, "cached", False),
                    "toolplan.step.used_fallback": event.used_fallback,
                    "toolplan.step.reason": event.error if event.kind != "failed" else None,
                }
            ),
        )
        try:
            for name, attributes, at in self._events.pop(step, []):
                span.add_event(name, attributes, timestamp=at)
            if event.kind == "failed":
                span.set_attribute("error.type", "toolplan.step_failed")
                span.set_status(Status(StatusCode.ERROR, event.error or "the step failed"))
        finally:
            span.end(end_time=now)


def with_step_spans(
    listener: EventListener | None, plan_id: str, parent: SpanHandle
) -> EventListener | None:
    """``listener``, also making step spans under ``parent`` when that span is recorded (when
    it is not, no SDK is listening, and ``listener`` is returned as it is)."""
    if not parent.recording:
        return listener
    spans = StepSpans(plan_id, parent=parent)
    if listener is None:
        return spans
    told = listener

    def both(event: StepEvent) -> None:
        spans(event)  # never raises, so the listener is always told
        told(event)

    return both
