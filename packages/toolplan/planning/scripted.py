"""Chat models that answer without a model server: the planner, the agent's answers and every
entry point run offline, through the same graphs as with a real model.

In the manner of pydantic-ai's ``TestModel`` and ``FunctionModel``:

- :class:`FunctionModel` answers each call with a function of yours, ``fn(messages, request)``;
- :class:`~toolplan.planning.offline.TestModel` (``TOOLPLAN_MODEL=test``) writes a plan from the
  tool catalog and the request by fixed rules, and answers from the results.

Both are LangChain chat models (:class:`ScriptedModel`): the planner asks them as it asks any
model, with structured output (function calling, ``json_schema``) or for text (a plan written as
Python), streamed or not, and reads, validates, repairs and stores what they answer as it does a
real model's. A streamed answer arrives in pieces (a line of Python, a few characters of JSON), so
the planner tells each step as it is written and ``--stream`` starts read-only steps early.

What a call is for comes with it (:func:`toolplan.planning.call.call_model` sets the request's
``about`` in the call's context: :func:`~toolplan.planning.call.about_call`): the planner's call,
the agent's respond call, the user's request, the execution's results. A scripted model reads it
into a :class:`ModelRequest`; the messages are the same as a real model gets.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from toolplan._blocking import run_blocking
from toolplan._tokens import count_tokens
from toolplan.config import PlanFormat
from toolplan.planning.call import about_call
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "Answer",
    "CallKind",
    "FunctionModel",
    "ModelFunction",
    "ModelRequest",
    "ScriptedModel",
]

CallKind = Literal["plan", "respond", "other"]
"""What a call asks for: a plan (the planner, a repair or a replan included), the agent's
decision on the results (answer or replan), or something else (a call from outside toolplan)."""

Answer = str | Mapping[str, Any] | AIMessage
"""What a scripted model answers with. For a structured call (a JSON plan, the respond
decision): a mapping (the answer's fields), or its JSON text; for the respond call, plain text is
the answer (``{"action": "answer", "answer": text}``). For a text call (a plan in Python): the
text, or a JSON plan as a mapping. An ``AIMessage`` is returned as it is."""


@dataclass(frozen=True)
class ModelRequest:
    """What a scripted model is asked, as :class:`FunctionModel`'s function gets it."""

    kind: CallKind
    messages: list[BaseMessage]
    """The messages, as a real model gets them (the planner's prompt, the catalog in it)."""
    schema: dict[str, Any] | None
    """The JSON schema a structured answer must fit; ``None``: the answer is text (a plan in
    Python)."""
    request: str | None = None
    """The user's request (the query) the call serves."""
    plan_format: PlanFormat | None = None
    """For a plan: ``python`` (Python statements, as text) or ``json`` (in ``schema``; also the
    attempts of a Python planning after its Python repair: the first asked afresh, with no
    ``problems``, the later ones repairs)."""
    catalog: ToolCatalog | None = None
    """The tools a plan may call (given when the planner is set up with this model)."""
    context: str | None = None
    """For a replan: the previous plan, its results and why a new one is needed."""
    problems: tuple[str, ...] = ()
    """For a repair: what was wrong with the previous answer."""
    status: str | None = None
    """For the respond call: the execution's status (``succeeded``, ``partial``, ...)."""
    outputs: Mapping[str, Any] = field(default_factory=dict)
    """For the respond call: the output of each ``outputSteps`` step."""
    failures: tuple[str, ...] = ()
    """For the respond call: the failed or skipped steps, one line each."""
    replan_allowed: bool = False
    """For the respond call: whether a new plan may be asked for."""


ModelFunction = Callable[[list[BaseMessage], ModelRequest], Answer | Awaitable[Answer]]
"""A :class:`FunctionModel`'s function: sync or async."""


class ScriptedModel(BaseChatModel):
    """A chat model whose answers are computed here (:meth:`answer`), not by a model server.

    Structured output by any method is answered as a tool call to the schema's function, as
    function calling would be; a text call with text. A streamed answer is sent in pieces: text
    line by line, a tool call's arguments :attr:`piece` characters at a time, then the usage
    (counted offline) and the finish reason.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    catalog: ToolCatalog | None = Field(default=None, exclude=True)
    """The tools plans may call; set by the planner's setup when not given
    (:meth:`with_catalog`)."""
    piece: int = 24
    """Characters of a tool call's arguments per streamed chunk."""

    @property
    def _llm_type(self) -> str:
        return "toolplan-scripted"

    def with_catalog(self, catalog: ToolCatalog) -> Self:
        """This model, planning over ``catalog`` (the planner's setup calls it)."""
        return self.model_copy(update={"catalog": catalog})

    def answer(self, request: ModelRequest) -> Answer | Awaitable[Answer]:
        """The answer to ``request``: overridden by each scripted model."""
        raise NotImplementedError

    # -- LangChain's chat model interface --------------------------------------------------

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Bind ``tools`` as a model server would get them (OpenAI's tool format)."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        """Answers in ``schema`` as a tool call, whatever the method asked for
        (``function_calling``, ``json_schema``, ``json_mode``); ``strict`` is a server's
        check, which the planner makes itself."""
        kwargs.pop("method", None)
        kwargs.pop("strict", None)
        return super().with_structured_output(schema, include_raw=include_raw, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = self._request(messages, kwargs.get("tools"))
        answer = self.answer(request)
        if inspect.isawaitable(answer):
            answer = run_blocking(_awaited(answer))
        return _result(self._message(answer, request, kwargs.get("tools")))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = self._request(messages, kwargs.get("tools"))
        answer = self.answer(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return _result(self._message(answer, request, kwargs.get("tools")))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        assert isinstance(message, AIMessage)
        yield from self._chunks(message)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        result = await self._agenerate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        assert isinstance(message, AIMessage)
        for chunk in self._chunks(message):
            yield chunk

    # -- what was asked, and the answer as a message ---------------------------------------

    def _request(
        self, messages: list[BaseMessage], tools: Sequence[Mapping[str, Any]] | None
    ) -> ModelRequest:
        about = about_call()
        function = tools[0].get("function", {}) if tools else {}
        schema = None
        if function:
            schema = {"title": function.get("name"), **(function.get("parameters") or {})}
        kind = about.get("call")
        plan_format = about.get("format")
        return ModelRequest(
            kind=kind if kind in ("plan", "respond") else "other",
            messages=list(messages),
            schema=schema,
            request=about.get("request"),
            plan_format=plan_format if plan_format in ("python", "json") else None,
            catalog=self.catalog,
            context=about.get("context"),
            problems=tuple(about.get("problems") or ()),
            status=about.get("status"),
            outputs=dict(about.get("outputs") or {}),
            failures=tuple(about.get("failures") or ()),
            replan_allowed=bool(about.get("replan_allowed")),
        )

    def _message(
        self, answer: Answer, request: ModelRequest, tools: Sequence[Mapping[str, Any]] | None
    ) -> AIMessage:
        if isinstance(answer, AIMessage):
            return answer
        prompt = sum(count_tokens(str(message.text)) for message in request.messages)
        name = tools[0].get("function", {}).get("name") if tools else None
        if name is None:  # a text answer
            text = answer if isinstance(answer, str) else json.dumps(dict(answer))
            return AIMessage(
                content=text,
                usage_metadata=_usage(prompt, count_tokens(text)),
                response_metadata={"finish_reason": "stop", "model_name": self._llm_type},
            )
        args = _arguments(answer, request)
        if args is None:  # text where a structured answer was asked: the reader says so
            text = str(answer)
            return AIMessage(
                content=text,
                usage_metadata=_usage(prompt, count_tokens(text)),
                response_metadata={"finish_reason": "stop", "model_name": self._llm_type},
            )
        written = json.dumps(args, ensure_ascii=False)
        return AIMessage(
            content="",
            tool_calls=[{"name": name, "args": args, "id": "call_scripted", "type": "tool_call"}],
            usage_metadata=_usage(prompt, count_tokens(written)),
            response_metadata={"finish_reason": "tool_calls", "model_name": self._llm_type},
        )

    def _chunks(self, message: AIMessage) -> Iterator[ChatGenerationChunk]:
        for index, call in enumerate(message.tool_calls):
            text = json.dumps(call["args"], ensure_ascii=False)
            for start in range(0, max(len(text), 1), self.piece):
                first = start == 0
                part = tool_call_chunk(
                    name=call["name"] if first else None,
                    args=text[start : start + self.piece],
                    id=call["id"] if first else None,
                    index=index,
                )
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=[part])
                )
        content = message.content if isinstance(message.content, str) else ""
        for line in content.splitlines(keepends=True):
            yield ChatGenerationChunk(message=AIMessageChunk(content=line))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
            )
        )


class FunctionModel(ScriptedModel):
    """A model whose every answer is ``function(messages, request)`` (sync or async): the
    messages a real model would get, and a :class:`ModelRequest` saying what is asked::

        def answer(messages, request):
            if request.kind == "plan":
                return 'w = get_weather(location="Paris")'  # Python, the default plan format
            return f"It is {request.outputs['w']['temp']} °C in Paris."

        Toolplan(model=FunctionModel(answer), tools=["weather"]).answer("Weather in Paris?")
    """

    function: ModelFunction = Field(exclude=True)

    def __init__(self, function: ModelFunction, **kwargs: Any) -> None:
        super().__init__(function=function, **kwargs)  # type: ignore[call-arg]  # a pydantic field

    @property
    def _llm_type(self) -> str:
        return "toolplan-function"

    def answer(self, request: ModelRequest) -> Answer | Awaitable[Answer]:
        """The function's answer."""
        return self.function(list(request.messages), request)


def _arguments(answer: Answer, request: ModelRequest) -> dict[str, Any] | None:
    """A structured answer's fields: the mapping, or the JSON object in the text; for the
    respond call, text that is not JSON is the answer."""
    if isinstance(answer, Mapping):
        return dict(answer)
    text = str(answer)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    if request.kind == "respond":
        return {"action": "answer", "answer": text}
    return None


def _usage(input_tokens: int, output_tokens: int) -> Any:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _result(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


async def _awaited(answer: Awaitable[Answer]) -> Answer:
    return await answer
