"""One structured model call for any LLM node: call the model, count the usage, translate the
errors.

The planner's ``select_tools`` node uses it, and so will every other node that asks the model
(the agent loop's respond node): one place knows that client errors become
:class:`~toolplan.errors.LLMUnavailable` (exit 3), that an answer cut off at the output limit is
:class:`~toolplan.planning.model.LLMOutputTruncated`, and how usage adds up over a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from toolplan.config import StructuredMethod
from toolplan.planning.model import ModelAnswer, ask_structured, llm_errors, truncated

__all__ = ["LLMCall", "ModelEndpoint", "Retry", "add_usage", "call_structured"]


class ModelEndpoint(Protocol):
    """What a node needs to call its model (the planner's context has all of it)."""

    model: BaseChatModel
    model_name: str
    method: StructuredMethod
    endpoint: str | None
    max_tokens: int | None


Retry = Callable[[Exception], tuple[Sequence[BaseMessage], dict[str, Any], bool] | None]
"""Given the call's error: the messages, schema and strictness to try once more, or ``None``
to let the error through (the planner falls back to its generic schema this way)."""


@dataclass(frozen=True)
class LLMCall:
    """One call's answer, with the run's running totals including this call."""

    answer: ModelAnswer
    usage: dict[str, int]
    llm_calls: int


def add_usage(usage: dict[str, int] | None, answer: ModelAnswer) -> dict[str, int]:
    """``usage`` plus ``answer``'s tokens (a new dict)."""
    total = dict(usage or {"inputTokens": 0, "outputTokens": 0})
    total["inputTokens"] += answer.input_tokens
    total["outputTokens"] += answer.output_tokens
    if answer.cached_input_tokens is not None:
        total["cachedInputTokens"] = total.get("cachedInputTokens", 0) + answer.cached_input_tokens
    return total


async def call_structured(
    node: ModelEndpoint,
    messages: Sequence[BaseMessage],
    schema: dict[str, Any],
    *,
    strict: bool,
    usage: dict[str, int] | None = None,
    llm_calls: int = 0,
    config: RunnableConfig | None = None,
    retry: Retry | None = None,
) -> LLMCall:
    """Ask ``node``'s model for a structured answer in ``schema``.

    Client errors become :class:`~toolplan.errors.LLMUnavailable`; an answer stopped at the
    output-token limit raises :class:`~toolplan.planning.model.LLMOutputTruncated` carrying the
    usage and call count so far. ``retry`` may turn one error into a second attempt.
    """
    with llm_errors(node.model_name, endpoint=node.endpoint, max_tokens=node.max_tokens):
        try:
            answer = await ask_structured(
                node.model, messages, schema, method=node.method, strict=strict, config=config
            )
        except Exception as error:
            again = retry(error) if retry is not None else None
            if again is None:
                raise
            messages, schema, strict = again
            answer = await ask_structured(
                node.model, messages, schema, method=node.method, strict=strict, config=config
            )
    total = add_usage(usage, answer)
    if answer.finish_reason == "length":
        raise truncated(node.model_name, node.max_tokens, usage=total, llmCalls=llm_calls + 1)
    return LLMCall(answer, total, llm_calls + 1)
