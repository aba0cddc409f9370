"""One structured call to the chat model, as every LLM node makes it: ask, translate client
errors, fall back once if the endpoint rejects the schema, count usage, refuse a cut-off answer.

:func:`call_model` is the only place a graph node calls the model; the planner's
``select_tools`` uses it, and so should any later LLM node (an answer or a replanning node).
Reading the answer is the caller's job: the raw message is returned, so an answer the client's
own parser rejects is still seen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from toolplan._spans import model_call_span, record_usage
from toolplan._tokens import count_tokens
from toolplan.config import StructuredMethod
from toolplan.errors import LLMUnavailable, ToolplanError
from toolplan.planning.llm_errors import (
    LLMOutputRepeating,
    llm_errors,
    schema_rejected,
    truncated,
)
from toolplan.planning.streaming import AnswerStream, ask_streamed, ask_text_streamed, streams

__all__ = [
    "ModelAnswer",
    "ModelCall",
    "ModelReply",
    "StructuredRequest",
    "about_call",
    "account",
    "add_usage",
    "answer_of",
    "ask_structured",
    "call_model",
]


@dataclass(frozen=True)
class ModelCall:
    """Who answers and how: the model, its ``provider:model`` name, the structured-output
    method, the endpoint (named in errors) and the model's output-token limit (named when cut
    off)."""

    model: BaseChatModel
    spec: str
    method: StructuredMethod = "function_calling"
    endpoint: str | None = None
    max_tokens: int | None = None


_about: ContextVar[Mapping[str, Any] | None] = ContextVar("toolplan_model_call", default=None)
"""What the model call being made in this context is for (its request's ``about``)."""


def about_call() -> Mapping[str, Any]:
    """What the model call being made now is for (empty outside one): a scripted model reads it
    (:mod:`toolplan.planning.scripted`), streamed or not. A context variable, not LangChain's
    metadata: a model's streaming method is not handed the metadata, and the results it carries
    are not sent to tracing as metadata of every call."""
    return _about.get() or {}


@dataclass(frozen=True)
class StructuredRequest:
    """What to ask: the messages and the JSON schema (with a ``title``) of the answer; no
    schema asks for text (a plan written as Python)."""

    messages: Sequence[BaseMessage]
    schema: dict[str, Any] | None
    strict: bool = False
    about: Mapping[str, Any] | None = None
    """What the call is for (``call``: ``plan`` or ``respond``, the user's ``request``...),
    in the call's context while it is made (:func:`about_call`): a scripted model answers from
    it (:mod:`toolplan.planning.scripted`); a model server never sees it."""


@dataclass(frozen=True)
class ModelAnswer:
    """One structured-output call: the raw message and what it cost."""

    message: BaseMessage | None
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int | None
    """Prompt tokens the server read from its prompt cache, when it says
    (``usage_metadata.input_token_details.cache_read``)."""
    finish_reason: str | None


@dataclass(frozen=True)
class ModelReply:
    """What :func:`call_model` returns: the answer, the usage so far including it, the request it
    answers (the fallback's, when the first was rejected) and the calls so far."""

    answer: ModelAnswer
    usage: dict[str, int]
    request: StructuredRequest
    calls: int = 1
    """The calls made so far, this one included (two when a cut-off answer was asked again)."""


async def ask_structured(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    schema: dict[str, Any],
    *,
    method: str,
    strict: bool,
    config: RunnableConfig | None = None,
) -> ModelAnswer:
    """Call ``model`` once for an answer in ``schema``, by ``method`` (``function_calling`` or
    ``json_schema``), and return the raw message. Client errors propagate untranslated; an
    answer cut off at the output limit is an answer (``finish_reason`` ``length``), with its
    usage, even where the client raises for it."""
    # function calling stays non-strict, as before: strict tools are an OpenAI-only feature
    options: dict[str, Any] = {"strict": strict} if method == "json_schema" else {}
    structured = model.with_structured_output(schema, method=method, include_raw=True, **options)
    try:
        result: Any = await structured.ainvoke(list(messages), config)
    except Exception as error:
        if type(error).__name__ != "LengthFinishReasonError":
            raise
        # openai's parse() helpers (json_schema) raise for a cut-off answer; its tokens were
        # still spent, and the completion says how many
        return _cut_off(error)
    return answer_of(result.get("raw") if isinstance(result, dict) else None)


def answer_of(message: BaseMessage | None) -> ModelAnswer:
    """The answer in ``message``, with its usage and finish reason."""
    usage = getattr(message, "usage_metadata", None) or {}
    details = usage.get("input_token_details") or {}
    metadata = getattr(message, "response_metadata", None) or {}
    cached = details.get("cache_read")
    return ModelAnswer(
        message=message,
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cached_input_tokens=int(cached) if cached is not None else None,
        finish_reason=metadata.get("finish_reason"),
    )


def _cut_off(error: Exception) -> ModelAnswer:
    usage = getattr(getattr(error, "completion", None), "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    return ModelAnswer(
        message=None,
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cached_input_tokens=int(cached) if cached is not None else None,
        finish_reason="length",
    )


def account(error: ToolplanError, calls: int, usage: Mapping[str, int] | None) -> ToolplanError:
    """``error`` carrying what was spent before it, unless it says so already: ``llmCalls``
    (answered calls) and ``usage`` (their tokens) in its ``details``, which ``--json`` output and
    API error extensions show."""
    error.details.setdefault("llmCalls", calls)
    error.details.setdefault("usage", dict(usage or {"inputTokens": 0, "outputTokens": 0}))
    return error


def _prompt_tokens(request: StructuredRequest) -> int:
    """About how many tokens ``request``'s messages are: the count of an answer stopped while it
    streamed, whose server never reports the usage it had counted (the schema is not counted)."""
    return sum(count_tokens(str(message.text)) for message in request.messages)


def add_usage(usage: Mapping[str, int] | None, answer: ModelAnswer) -> dict[str, int]:
    """``usage`` (``inputTokens``, ``outputTokens``, ``cachedInputTokens`` when known) plus
    ``answer``'s."""
    total = dict(usage or {"inputTokens": 0, "outputTokens": 0})
    total["inputTokens"] += answer.input_tokens
    total["outputTokens"] += answer.output_tokens
    if answer.cached_input_tokens is not None:
        total["cachedInputTokens"] = total.get("cachedInputTokens", 0) + answer.cached_input_tokens
    return total


async def call_model(
    call: ModelCall,
    request: StructuredRequest,
    *,
    usage: Mapping[str, int] | None = None,
    calls: int = 0,
    fallback: Callable[[], StructuredRequest] | None = None,
    larger: ModelCall | None = None,
    on_larger: Callable[[ModelCall, int, dict[str, int]], None] | None = None,
    config: RunnableConfig | None = None,
    stream: AnswerStream | None = None,
    after_runaway: Callable[[StructuredRequest, LLMOutputRepeating], StructuredRequest]
    | None = None,
) -> ModelReply:
    """Ask ``call.model`` for ``request``'s structured answer.

    Client errors become :class:`~toolplan.errors.LLMUnavailable` (exit 3). If the endpoint
    rejects the request's schema and ``fallback`` is given, the fallback's request is asked
    instead, once. An answer cut off at the output-token limit is asked for once more by
    ``larger`` (the same model with a larger limit), when given, after telling ``on_larger``
    (with the calls and usage so far); an answer the server ended short of the limit (a full
    context window) is not, since a larger limit would not change it. So is an answer stopped
    as a runaway while it streamed (:class:`~toolplan.planning.llm_errors.LLMOutputRepeating`,
    raised when the retry runs away too: stopped early, a retry costs little), as
    ``after_runaway`` makes it from the request and the error when given (telling the model
    what it did), else as it was.
    ``usage`` and ``calls`` are the totals before this call;
    every error carries them with the calls made here (:func:`account`), and an answer cut off at
    the last limit tried raises :class:`~toolplan.planning.llm_errors.LLMOutputTruncated`.

    With ``stream``, each answer is streamed and its steps are told to ``stream`` as they are
    written (:mod:`toolplan.planning.streaming`); the answer, its usage and everything above are
    the same as without.
    """
    current = call
    stopped: LLMOutputRepeating | None = None
    short: int | None = None
    for attempt in [call] if larger is None else [call, larger]:
        if attempt is larger and on_larger is not None:
            on_larger(attempt, calls, dict(usage or {}))
        current = attempt
        try:
            with llm_errors(current.spec, endpoint=current.endpoint, max_tokens=current.max_tokens):
                try:
                    answer = await _ask(current, request, config, stream)
                except Exception as error:
                    if fallback is None or not schema_rejected(error):
                        raise
                    request = fallback()
                    answer = await _ask(current, request, config, stream)
        except LLMOutputRepeating as error:  # a runaway, stopped early: asked once more
            spent = dict(usage or {"inputTokens": 0, "outputTokens": 0})
            spent["inputTokens"] += _prompt_tokens(request)  # read in full; never reported
            spent["outputTokens"] += error.tokens  # what it wrote, in chunks read
            usage, calls, stopped, fallback = spent, calls + 1, error, None
            if after_runaway is not None:
                request = after_runaway(request, error)
            continue
        except LLMUnavailable as error:
            account(error, calls, usage)
            raise
        fallback = None  # the request was taken: a retry sends it as it is
        usage, calls, stopped = add_usage(usage, answer), calls + 1, None
        if answer.finish_reason != "length":
            return ModelReply(answer, usage, request, calls)
        short = _stopped_short(answer, current)
        if short is not None:  # not the limit: the same prompt would fill the context again
            break
    if stopped is not None:
        raise account(stopped, calls, usage)
    first = call.max_tokens if current is not call else None
    raise truncated(
        current.spec,
        current.max_tokens,
        first_limit=first,
        stopped_after=short,
        usage=usage,
        llmCalls=calls,
    )


def _stopped_short(answer: ModelAnswer, call: ModelCall) -> int | None:
    """The output tokens of an answer cut off (``finish_reason: length``) before ``call``'s
    output limit, else ``None``. The server stopped it, as a full context window does; a larger
    limit would not change that. An answer that reports no output tokens is taken to have
    reached the limit."""
    if call.max_tokens is not None and 0 < answer.output_tokens < call.max_tokens:
        return answer.output_tokens
    return None


async def _ask(
    call: ModelCall,
    request: StructuredRequest,
    config: RunnableConfig | None,
    stream: AnswerStream | None,
) -> ModelAnswer:
    token = _about.set(request.about)
    try:
        return await _asked(call, request, config, stream)
    finally:
        _about.reset(token)


async def _asked(
    call: ModelCall,
    request: StructuredRequest,
    config: RunnableConfig | None,
    stream: AnswerStream | None,
) -> ModelAnswer:
    # One OpenTelemetry span per request sent (a schema fallback or a larger limit is another).
    with model_call_span(call.spec, max_tokens=call.max_tokens, endpoint=call.endpoint) as span:
        answer: ModelAnswer | None
        if request.schema is None:
            answer = await _text(call, request, config, stream)
        else:
            answer = (
                await _streamed(call, request, config, stream)
                if streams(call.model, stream)
                else None
            )
        if answer is None:
            assert request.schema is not None
            answer = await ask_structured(
                call.model,
                request.messages,
                request.schema,
                method=call.method,
                strict=request.strict,
                config=config,
            )
        record_usage(
            span,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            cached_input_tokens=answer.cached_input_tokens,
            finish_reason=answer.finish_reason,
        )
        return answer


async def _text(
    call: ModelCall,
    request: StructuredRequest,
    config: RunnableConfig | None,
    stream: AnswerStream | None,
) -> ModelAnswer:
    """A text answer (no schema), streamed to ``stream`` where the endpoint can."""
    message = None
    if streams(call.model, stream):
        assert stream is not None
        message = await ask_text_streamed(
            call.model, request.messages, stream=stream, config=config
        )
        if message is None:
            stream.enabled = False
    if message is None:
        message = await call.model.ainvoke(list(request.messages), config)
    return answer_of(message)


async def _streamed(
    call: ModelCall,
    request: StructuredRequest,
    config: RunnableConfig | None,
    stream: AnswerStream | None,
) -> ModelAnswer | None:
    """The answer streamed to ``stream``; ``None`` (and no more streaming) when the endpoint
    cannot stream."""
    assert stream is not None and request.schema is not None
    try:
        message = await ask_streamed(
            call.model,
            request.messages,
            request.schema,
            method=call.method,
            strict=request.strict,
            stream=stream,
            config=config,
        )
    except Exception as error:
        if type(error).__name__ != "LengthFinishReasonError":
            raise
        return _cut_off(error)  # as ask_structured reads it
    if message is None:
        stream.enabled = False
        return None
    return answer_of(message)
