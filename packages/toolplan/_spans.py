"""OpenTelemetry spans that never fail a run (a failure in the SDK, a processor or an exporter
is logged once and ignored), and the span of one model call: ``chat {model}``, kind ``CLIENT``,
with the GenAI semantic conventions' ``gen_ai.*`` attributes. Below the planner and the engine
(:mod:`toolplan.engine.tracing`: executions and steps), so that the planner does not import the
engine."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

__all__ = ["TRACER_NAME", "SpanHandle", "model_call_span", "record_usage", "span_of"]

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


quietly = _Quiet()


def tracer() -> trace.Tracer:
    """The tracer of :data:`TRACER_NAME` from the global provider."""
    # Asked each time: the global provider may be set after toolplan is imported.
    return trace.get_tracer(TRACER_NAME)


def present(attributes: Attributes) -> dict[str, Any]:
    """``attributes`` without the ``None`` values."""
    return {key: value for key, value in attributes.items() if value is not None}


class SpanHandle:
    """A started span whose methods never raise (``None``: starting it failed)."""

    def __init__(self, span: trace.Span | None) -> None:
        self.span = span

    @property
    def recording(self) -> bool:
        """Whether the span is recorded (an SDK is installed and sampled it)."""
        span = self.span
        return span is not None and bool(quietly(span.is_recording))

    def set(self, attributes: Attributes) -> None:
        """Add ``attributes`` (those that are not ``None``)."""
        span = self.span
        if span is not None:
            quietly(lambda: span.set_attributes(present(attributes)))

    def fail(self, description: str, error_type: str) -> None:
        """End as an error: status ``ERROR`` with ``description``, and ``error.type``."""
        span = self.span
        if span is not None:
            quietly(lambda: span.set_attribute("error.type", error_type))
            quietly(lambda: span.set_status(Status(StatusCode.ERROR, description)))


_NO_SPAN = SpanHandle(None)
"""The handle of a span that was not made: no OpenTelemetry SDK is installed."""


@contextmanager
def span_of(
    name: str, attributes: Attributes, *, kind: SpanKind = SpanKind.INTERNAL
) -> Iterator[SpanHandle]:
    """A span that is current inside the block; an exception leaving the block is recorded on
    it (and propagates, as it would have). With no SDK installed, nothing: no span is made,
    so none is attached (every span would be a no-op, at a cost on each execution)."""
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        yield _NO_SPAN
        return
    span = quietly(lambda: tracer().start_span(name, kind=kind, attributes=present(attributes)))
    token = None
    if span is not None:
        token = quietly(lambda: otel_context.attach(trace.set_span_in_context(span)))
    handle = SpanHandle(span)
    try:
        yield handle
    except Exception as error:
        if span is not None:
            quietly(partial(span.record_exception, error))
        handle.fail(str(error) or type(error).__name__, _qualified(type(error)))
        raise
    finally:
        if token is not None:
            quietly(lambda: otel_context.detach(token))
        if span is not None:
            quietly(span.end)


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
    with span_of(
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
