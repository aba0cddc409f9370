"""A scripted chat model: the same "ideal" decisions for every agent, a fixed latency per call,
and token usage counted with tiktoken from what each call actually receives and emits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from bench.tokens import count_input_tokens, count_output_tokens

__all__ = ["LLMCall", "Policy", "ScriptedChatModel"]

Policy = Callable[[Sequence[BaseMessage], Sequence[dict[str, Any]]], AIMessage]
"""Given the request's messages and tool schemas, the reply an ideal model would give."""


@dataclass(frozen=True)
class LLMCall:
    """One model call as the provider would bill it."""

    input_tokens: int
    output_tokens: int
    messages: int
    tools: int
    tool_calls: int
    seconds: float


class ScriptedChatModel(BaseChatModel):
    """Answers with ``policy``'s message after ``latency`` seconds; records every call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    policy: Any
    latency: float = 0.8
    calls: list[LLMCall] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind OpenAI-format schemas, as ``ChatOpenAI.bind_tools`` does (they are counted)."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        extra = {"tool_choice": tool_choice} if tool_choice is not None else {}
        return self.bind(tools=formatted, **extra, **kwargs)

    def _reply(
        self, messages: list[BaseMessage], kwargs: dict[str, Any], seconds: float
    ) -> ChatResult:
        tools: list[dict[str, Any]] = list(kwargs.get("tools") or [])
        reply = self.policy(messages, tools)
        input_tokens = count_input_tokens(messages, tools)
        output_tokens = count_output_tokens(reply)
        reply.usage_metadata = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        self.calls.append(
            LLMCall(
                input_tokens,
                output_tokens,
                len(messages),
                len(tools),
                len(reply.tool_calls),
                seconds,
            )
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        started = time.perf_counter()
        time.sleep(self.latency)
        return self._reply(messages, kwargs, time.perf_counter() - started)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        started = time.perf_counter()
        await asyncio.sleep(self.latency)
        return self._reply(messages, kwargs, time.perf_counter() - started)
