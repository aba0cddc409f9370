"""An answer cut off at the output-token limit is asked for once more with twice the limit before
planning fails (issue 28); both calls are counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from tests.support.fake_models import ToolCallingFake
from tests.support.plans import QUERY, blog_plan
from toolplan.config import PlannerSettings
from toolplan.pipeline.planning import create_plan
from toolplan.planning.context import PlannerContext
from toolplan.planning.llm_errors import LLMOutputTruncated
from toolplan.planning.model import (
    RETRY_MAX_TOKENS,
    create_chat_model,
    retry_max_tokens,
    with_max_tokens,
)
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules


class Limited(ToolCallingFake):
    """Answers in order from ``script``, recording the output-token limit of each call."""

    max_tokens: int | None = None
    script: list[AIMessage] = []
    limits: list[int | None] = []

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.limits.append(self.max_tokens)
        self.messages = iter([self.script.pop(0)])
        return super()._generate(*args, **kwargs)


def answer(*, cut_off: bool, tokens: tuple[int, int]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "LLMPlan", "args": blog_plan(), "id": "call_1"}],
        usage_metadata={
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
        response_metadata={"finish_reason": "length" if cut_off else "stop"},
    )


def context(tmp_path: Path, *script: AIMessage, max_tokens: int | None) -> PlannerContext:
    ToolCallingFake.seen = []
    model = Limited(messages=iter([]), script=list(script), limits=[], max_tokens=max_tokens)
    return PlannerContext(
        store=SqliteStore(tmp_path / "t.db"),
        catalog=load_tool_modules(["blog"]),
        model=model,
        model_name="fake:model",
        max_tokens=max_tokens,
    )


def limits(ctx: PlannerContext) -> list[int | None]:
    return list(ctx.model.limits)  # type: ignore[attr-defined]


async def test_a_cut_off_plan_is_asked_again_with_twice_the_limit(tmp_path: Path) -> None:
    ctx = context(
        tmp_path,
        answer(cut_off=True, tokens=(900, 1536)),
        answer(cut_off=False, tokens=(900, 1700)),
        max_tokens=1536,
    )
    outcome = await create_plan(QUERY, ctx)
    assert outcome.ref.status == "planned" and outcome.llm_calls == 2
    assert outcome.usage == {"inputTokens": 1800, "outputTokens": 3236}
    assert limits(ctx) == [1536, 3072]
    first, second = ToolCallingFake.seen
    assert first == second  # the same request, not a repair round
    assert ctx.max_tokens == 1536 and ctx.model.max_tokens == 1536  # type: ignore[attr-defined]


async def test_cut_off_twice_fails_with_both_calls_counted(tmp_path: Path) -> None:
    ctx = context(
        tmp_path,
        answer(cut_off=True, tokens=(900, 1536)),
        answer(cut_off=True, tokens=(900, 3072)),
        max_tokens=1536,
    )
    with pytest.raises(LLMOutputTruncated) as caught:
        await create_plan(QUERY, ctx)
    assert caught.value.details == {
        "llmCalls": 2,
        "usage": {"inputTokens": 1800, "outputTokens": 4608},
    }
    assert "output limit of 3072 tokens" in caught.value.message
    assert "in a retry after a first answer cut off at 1536 tokens" in caught.value.message


@pytest.mark.parametrize(
    ("limit", "retried"),
    [(RETRY_MAX_TOKENS, None), (RETRY_MAX_TOKENS - 1000, RETRY_MAX_TOKENS), (None, None)],
    ids=["at-the-cap", "up-to-the-cap", "no-known-limit"],
)
async def test_the_retry_stays_under_the_cap(
    tmp_path: Path, limit: int | None, retried: int | None
) -> None:
    ctx = context(
        tmp_path,
        answer(cut_off=True, tokens=(900, limit or 10)),
        answer(cut_off=False, tokens=(900, 100)),
        max_tokens=limit,
    )
    if retried is None:
        with pytest.raises(LLMOutputTruncated) as caught:
            await create_plan(QUERY, ctx)
        assert caught.value.details["llmCalls"] == 1 and limits(ctx) == [limit]
    else:
        assert (await create_plan(QUERY, ctx)).llm_calls == 2
        assert limits(ctx) == [limit, retried]


def test_retry_limits() -> None:
    assert retry_max_tokens(1536) == 3072
    assert retry_max_tokens(RETRY_MAX_TOKENS // 2 + 1) == RETRY_MAX_TOKENS
    assert retry_max_tokens(RETRY_MAX_TOKENS) is None
    assert retry_max_tokens(RETRY_MAX_TOKENS * 2) is None


def test_an_openai_compatible_model_gets_its_limit_changed_everywhere_it_is_sent() -> None:
    settings = PlannerSettings(openai_api_key="sk-test", openai_base_url="http://127.0.0.1:9/v1")
    model: Any = create_chat_model(settings, "openai:gpt-4o-mini", max_tokens=1536)
    larger: Any = with_max_tokens(model, 3072)
    assert larger.max_tokens == 3072 and larger.extra_body == {"max_tokens": 3072}
    assert model.max_tokens == 1536 and model.extra_body == {"max_tokens": 1536}
    assert larger.root_async_client is model.root_async_client  # no new connection pool
    assert with_max_tokens(ToolCallingFake(messages=iter([])), 3072) is None


async def test_an_answer_ended_short_of_the_limit_is_not_asked_again(tmp_path: Path) -> None:
    """finish_reason 'length' after fewer tokens than the limit: the server's context window
    was full, not the limit reached. The same prompt would fill it again, and the message must
    not tell the user to raise a limit that did not stop it."""
    ctx = context(
        tmp_path,
        answer(cut_off=True, tokens=(5000, 3192)),
        answer(cut_off=False, tokens=(5000, 1700)),
        max_tokens=6400,
    )
    with pytest.raises(LLMOutputTruncated) as caught:
        await create_plan(QUERY, ctx)
    assert limits(ctx) == [6400]
    assert caught.value.details == {
        "llmCalls": 1,
        "usage": {"inputTokens": 5000, "outputTokens": 3192},
        "stoppedAfterTokens": 3192,
    }
    message = caught.value.message
    assert "stopped after 3192 output tokens" in message
    assert "short of its output limit of 6400" in message and "context window" in message
    assert "Raise TOOLPLAN_LLM_MAX_TOKENS" not in message


async def test_a_retry_ended_short_of_its_larger_limit_says_so(tmp_path: Path) -> None:
    """The first answer reached the limit; the retry, with twice the room, filled the context
    first (a 1.5B model with an 8k context enumerating list items: 22 minutes)."""
    ctx = context(
        tmp_path,
        answer(cut_off=True, tokens=(3000, 6400)),
        answer(cut_off=True, tokens=(3000, 3108)),
        max_tokens=6400,
    )
    with pytest.raises(LLMOutputTruncated) as caught:
        await create_plan(QUERY, ctx)
    assert limits(ctx) == [6400, 12800]
    assert caught.value.details["llmCalls"] == 2
    assert caught.value.details["stoppedAfterTokens"] == 3108
    message = caught.value.message
    assert "stopped after 3108 output tokens" in message
    assert "short of its output limit of 12800" in message
    assert "in a retry after a first answer cut off at 6400 tokens" in message
