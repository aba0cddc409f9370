"""Fake chat models for planner and agent tests (no network)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage

__all__ = ["ToolCallingFake"]


class ToolCallingFake(GenericFakeChatModel):
    """A fake chat model that answers with scripted tool calls (so structured output works)."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # the replies already carry tool calls
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        type(self).seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)
