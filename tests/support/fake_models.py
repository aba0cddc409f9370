"""Fake chat models for planner and agent tests (no network)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk

__all__ = ["ToolCallingFake"]


class ToolCallingFake(GenericFakeChatModel):
    """A fake chat model that answers with scripted tool calls (so structured output works).

    Streamed, an answer arrives as a provider streams it: the tool call's arguments (or the
    content) in pieces of ``piece`` characters, then one chunk with the usage and finish reason.
    """

    seen: list[list[BaseMessage]] = []
    piece: int = 16

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # the replies already carry tool calls
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        type(self).seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        message = self._generate(messages, *args, **kwargs).generations[0].message
        assert isinstance(message, AIMessage)
        for index, call in enumerate(message.tool_calls):
            text = json.dumps(call["args"])
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
        for start in range(0, len(content), self.piece):
            piece = content[start : start + self.piece]
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
            )
        )
