"""OpenTelemetry spans of executions and steps; observers, never a run's business.

Until the application installs an OpenTelemetry SDK, every span is a no-op and an execution does
not even watch its steps for spans.
Names follow the GenAI semantic conventions (development status) where they apply (a model
call's span, and the machinery every span here uses, are in :mod:`toolplan._spans`):

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

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from toolplan._spans import SpanHandle, present, quietly, span_of, tracer

if TYPE_CHECKING:
    from toolplan.engine.recorder import EventListener, StepEvent

__all__ = [
    "SpanHandle",
    "StepSpans",
    "execution_span",
    "record_execution",
    "with_step_spans",
]


@contextmanager
def execution_span(plan_id: str, request_id: str, steps: int) -> Iterator[SpanHandle]:
    """The span of one execution of ``plan_id``; the block sets its end with
    :func:`record_execution`."""
    with span_of(
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
            attributes = present(
                {
                    "toolplan.step.attempt": event.attempt,
                    "error.message": event.error,
                    "toolplan.step.fallback_tool": event.fallback_tool,
                }
            )
            self._events.setdefault(step, []).append((event.kind, attributes, now))
        elif event.kind in _TERMINAL:
            quietly(lambda: self._end(event, now))

    def _end(self, event: StepEvent, now: int) -> None:
        step = event.step_id
        first = self._started.pop(step, now)
        start = now - int(event.duration_ms * 1_000_000) if event.duration_ms is not None else first
        parent = self.parent.span if self.parent is not None else None
        span = tracer().start_span(
            f"execute_tool {event.tool}",
            context=trace.set_span_in_context(parent) if parent is not None else None,
            start_time=min(start, now),
            attributes=present(
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
