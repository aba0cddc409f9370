"""The model's answer streamed, so each step of the plan is seen as soon as it is written.

:func:`ask_streamed` sends the very request :func:`toolplan.planning.call.ask_structured` sends
(the model as ``with_structured_output`` binds it, for any provider), with ``stream`` on, and
tells :class:`AnswerStream` of every step of the plan whose JSON object is complete
(:mod:`toolplan.planning.partial`). It returns the whole answer as one message, read as the
non-streamed call's is: the tool call's arguments parsed strictly once they are complete (a
partial parse would accept a cut-off answer), the usage of the stream's last chunk (OpenAI
servers send it when asked by ``stream_options.include_usage``, which toolplan's OpenAI models
set: ``stream_usage``), the finish reason. Planning reads it as it reads any answer.

An answer that runs away is stopped as soon as that is certain, not at the output limit: text
that ends repeating one stretch over and over with no statement ending in it (a model that loops
inside a string or an expression: :mod:`toolplan.planning.repetition`), or more steps than the
plan's step limit. Never on a count of identical calls: "roll the die three times" is three
identical calls the user asked for, and a model looping over whole statements reaches the step
limit.
:class:`~toolplan.planning.llm_errors.LLMOutputRepeating` is raised then, with the tokens
written, and the planner asks once more (a runaway at temperature 0 does not always run away
again: asked once more, a small model we measured planned right).

A server that cannot stream (it refuses the request, or sends no chunk) is asked plainly
instead, and :attr:`AnswerStream.enabled` turns off so the next calls do not try again. A model
that does not stream (``disable_streaming``, or no streaming implementation) answers at once, in
one piece, as without a stream.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig

from toolplan.planning.json_reader import JsonPlanReader
from toolplan.planning.llm_errors import (
    LLMOutputRepeating,
    error_text,
    schema_rejected,
    status_code,
    unreachable,
)
from toolplan.planning.repetition import repeating_tail

__all__ = [
    "AnswerStream",
    "StatementReader",
    "StepSeen",
    "ask_streamed",
    "ask_text_streamed",
    "streams",
]

_log = logging.getLogger(__name__)

StepSeen = Callable[[dict[str, Any], int, int], None]
"""Told of a step of the answer as soon as its object is complete: the step as written, how
many steps the answer has so far, and how many chunks (about a token each) it has so far."""

_CHECK_EVERY = 64
"""How many characters an answer's text grows by between two looks for a loop at its end."""

_REFUSED = frozenset({400, 404, 405, 406, 415, 422, 501})
"""Statuses a server answers a streamed request it cannot serve with (saying ``stream``)."""


@dataclass
class AnswerStream:
    """Follows the answers of a planner's calls while the model writes them."""

    on_step: StepSeen
    enabled: bool = True
    """Whether to stream: turned off when the endpoint could not."""
    max_steps: int | None = None
    """The plan's step limit: an answer writing more steps than this is stopped."""
    statements: Callable[[], StatementReader] | None = None
    """For an answer in Python (:mod:`toolplan.planning.python_format`): makes the reader of
    its statements, one per answer; ``None``: the answer is a JSON plan."""
    on_restart: Callable[[], None] | None = None
    """Told when what was read of a Python answer turned out to be prose before its first
    fenced block: the steps told so far are void."""


class StatementReader(Protocol):
    """Reads a streamed Python answer: the steps each chunk completes (all that are left with
    ``final``)."""

    @property
    def restarts(self) -> int:
        """How many times what was read turned out to be prose (its steps void)."""
        ...

    def feed(self, chunk: str, *, final: bool = False) -> list[dict[str, Any]]:
        """The steps of the statements ``chunk`` completes."""
        ...


def streams(model: BaseChatModel, stream: AnswerStream | None) -> bool:
    """Whether ``model``'s answer is streamed to ``stream``."""
    return stream is not None and stream.enabled and not getattr(model, "disable_streaming", False)


async def ask_streamed(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    schema: dict[str, Any],
    *,
    method: str,
    strict: bool,
    stream: AnswerStream,
    config: RunnableConfig | None = None,
) -> BaseMessage | None:
    """The answer to the structured request, streamed: each complete step told to ``stream``.
    ``None`` when the server could not stream (ask it plainly then); client errors propagate
    untranslated, as the plain call's do."""
    options: dict[str, Any] = {"strict": strict} if method == "json_schema" else {}
    structured = model.with_structured_output(schema, method=method, include_raw=True, **options)
    raw = _raw_model(structured)
    if raw is None:
        return None
    return await _followed(raw, messages, stream, config)


async def ask_text_streamed(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    stream: AnswerStream,
    config: RunnableConfig | None = None,
) -> BaseMessage | None:
    """A plain (text) answer, streamed: each complete statement of a Python plan told to
    ``stream`` as its steps. ``None`` when the server could not stream."""
    return await _followed(model, messages, stream, config)


async def _followed(
    runnable: Runnable[Any, Any],
    messages: Sequence[BaseMessage],
    stream: AnswerStream,
    config: RunnableConfig | None,
) -> BaseMessage | None:
    """``runnable``'s answer streamed, each chunk followed for steps; ``None`` when the server
    could not stream (it failed before its first chunk in a way a plain call would not)."""
    follow = _Follow(stream)
    message: Any = None
    try:
        async for chunk in runnable.astream(list(messages), config):
            follow(chunk)
            message = chunk if message is None else message + chunk
    except Exception as error:
        if follow.chunks or not _cannot_stream(error):
            raise
        _log.info("the model's endpoint cannot stream (%s); asking without a stream", error)
        return None
    follow.finish()
    return None if message is None else _whole(message)


def _raw_model(structured: Runnable[Any, Any]) -> Runnable[Any, Any] | None:
    """The model as ``with_structured_output(..., include_raw=True)`` bound it (the ``raw`` of
    ``RunnableMap(raw=llm) | parser``), ready to stream; ``None`` when it is not that shape."""
    steps = getattr(getattr(structured, "first", None), "steps__", None)
    raw = steps.get("raw") if isinstance(steps, dict) else None
    if not isinstance(raw, Runnable):
        return None
    if isinstance(raw, RunnableBinding) and "response_format" in raw.kwargs:
        return _plain_response_format(raw)
    return raw


def _plain_response_format(raw: RunnableBinding[Any, Any]) -> Runnable[Any, Any]:
    """An OpenAI model bound to a ``response_format``: the same request body, sent as a plain
    stream. ``ChatOpenAI`` streams a ``response_format`` through openai's parse helpers, which
    stop at a cut-off answer before its usage arrives (the tokens would be lost, where the
    plain call reports them); a ``response_format`` in ``extra_body`` reaches the server as it
    is, and the answer is read here as any other."""
    bound = raw.bound
    if "extra_body" not in getattr(type(bound), "model_fields", {}):
        return raw
    kwargs = dict(raw.kwargs)
    response_format = kwargs.pop("response_format")
    extra = {
        **(getattr(bound, "extra_body", None) or {}),
        **(kwargs.pop("extra_body", None) or {}),
        "response_format": response_format,
    }
    return bound.bind(**kwargs, extra_body=extra)


def _cannot_stream(error: Exception) -> bool:
    """Whether a stream that failed before its first chunk may be asked for plainly: an error
    status that names the stream (or 501), a stream that could not be read (no chunk, not
    server-sent events: a ``ValueError``) or is not implemented. Not when the endpoint is
    unreachable, refuses the schema (the schema fallback's case) or the credentials: a plain
    request would fail the same way."""
    if schema_rejected(error) or unreachable(error):
        return False
    code = status_code(error)
    if code is not None:  # another 400 (a context too long...) is the plain request's too
        return code == 501 or (code in _REFUSED and "stream" in error_text(error).lower())
    return isinstance(error, ValueError | NotImplementedError)


@dataclass
class _Follow:
    """Reads each chunk's text (the tool call's arguments, or the content) for steps."""

    stream: AnswerStream
    chunks: int = 0
    steps: int = 0

    def __post_init__(self) -> None:
        self._content, self._arguments = JsonPlanReader(), JsonPlanReader()
        self._statements = self.stream.statements() if self.stream.statements else None
        self._restarts = 0
        self._checked = [0, 0]  # how long each text was when last looked at for a loop

    def finish(self) -> None:
        """The answer ended: its last statement is complete too."""
        if self._statements is not None:
            self._told(self._statements.feed("", final=True))

    def _told(self, steps: list[dict[str, Any]]) -> None:
        assert self._statements is not None
        if self._statements.restarts != self._restarts:
            self._restarts = self._statements.restarts
            self.steps = 0
            if self.stream.on_restart is not None:
                self.stream.on_restart()
        for step in steps:
            self.steps += 1
            self.stream.on_step(step, self.steps, self.chunks)
            self._check(step)

    def __call__(self, chunk: Any) -> None:
        text = chunk.content if isinstance(chunk.content, str) else ""
        arguments = "".join(
            part.get("args") or "" for part in getattr(chunk, "tool_call_chunks", None) or []
        )
        if text or arguments:
            self.chunks += 1
        if not isinstance(chunk, AIMessageChunk):  # the whole answer at once: nothing to follow
            return
        from_content = self._content.feed(text)
        found = self._arguments.feed(arguments)  # a tool call's arguments: a JSON plan
        if self._statements is not None:  # Python: statements, not JSON objects
            self._told(self._statements.feed(text))
        else:
            found = from_content + found
        for step in found:
            self.steps += 1
            self.stream.on_step(step, self.steps, self.chunks)
            self._check(step)
        self._check_text()

    def _check_text(self) -> None:
        """Stop an answer whose text ends in a loop (:mod:`toolplan.planning.repetition`),
        looked for each time it has grown by :data:`_CHECK_EVERY` characters."""
        for at, scanner in enumerate((self._content, self._arguments)):
            if len(scanner.text) - self._checked[at] < _CHECK_EVERY:
                continue
            self._checked[at] = len(scanner.text)
            loop = repeating_tail(scanner.text)
            if loop is not None and self._statements is not None and "\n" in loop.unit:
                continue  # whole statements again: asked repeats, or the step limit stops them
            if loop is not None:
                raise LLMOutputRepeating(
                    f"the model wrote {_stretch(loop.unit)} "
                    f"{loop.repeats} times in a row and was stopped after about {self.chunks} "
                    "tokens: it was repeating itself, and would have stopped only at the output "
                    "limit; nothing was stored",
                    tokens=self.chunks,
                    steps=self.steps,
                    what=f"it wrote {_stretch(loop.unit)} {loop.repeats} times in a row{_ENDLESS}",
                )

    def _check(self, step: dict[str, Any]) -> None:
        """Stop an answer that runs away (:class:`LLMOutputRepeating`)."""
        limit = self.stream.max_steps
        if limit is not None and self.steps > limit:
            raise LLMOutputRepeating(
                f"the model wrote more than {limit} steps (the plan's step limit) and was "
                f"stopped after about {self.chunks} tokens; nothing was stored. Raise --max-steps "
                "if the plan is that long",
                tokens=self.chunks,
                steps=self.steps,
                what=f"it wrote more than {limit} steps, the most a plan may have",
            )


_ENDLESS = ", and would have gone on until the output limit"
"""What a repeating answer would have done, told to the model when it is asked again."""


def _stretch(unit: str, limit: int = 80) -> str:
    """A stretch of text that repeats, for an error message: begun after a space where it has
    one (any turn of a loop is the loop), quoted, cut to ``limit`` characters."""
    space = unit.find(" ")
    if 0 <= space < len(unit) - 1:
        unit = unit[space + 1 :] + unit[: space + 1]
    shown = unit if len(unit) <= limit else unit[: limit - 3] + "..."
    return f"'{shown}'" if shown.isprintable() else json.dumps(shown, ensure_ascii=False)


def _whole(message: Any) -> BaseMessage:
    """The streamed answer as the plain call returns it: tool calls parsed strictly from their
    complete arguments (a call whose arguments are not JSON is an invalid tool call, with its
    text, as langchain-openai reads a plain answer)."""
    if not isinstance(message, AIMessageChunk):
        return message
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for part in message.tool_call_chunks:
        raw = {
            "id": part.get("id"),
            "function": {"name": part.get("name") or "", "arguments": part.get("args") or ""},
        }
        try:
            parsed = parse_tool_call(raw, return_id=True)
        except Exception as error:  # as langchain-openai reads a plain answer's tool calls
            invalid.append(make_invalid_tool_call(raw, str(error)))
            continue
        if parsed is not None:
            calls.append(parsed)  # type: ignore[arg-type]
    return AIMessage(
        content=message.content,
        additional_kwargs=message.additional_kwargs,
        response_metadata=message.response_metadata,
        usage_metadata=message.usage_metadata,
        id=message.id,
        tool_calls=calls,
        invalid_tool_calls=invalid,
    )
