"""What planning cost, on every failure (issue 28): an error raised after the model answered once
carries ``llmCalls`` and ``usage`` (tokens summed over the calls) in its ``details``, so a caller
can account for tokens it spent on a plan it did not get."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage

import toolplan.pipeline.planning
from tests.support.fake_models import ToolCallingFake
from tests.support.plans import QUERY, blog_plan, broken_blog_plan
from toolplan.errors import LLMUnavailable, StoreUnavailable, ToolplanError
from toolplan.pipeline.planning import create_plan
from toolplan.planning.context import PlannerContext
from toolplan.planning.llm_errors import LLMOutputTruncated
from toolplan.planning.planner import PlanningFailed
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules


class LengthFinishReasonError(Exception):
    """Shaped like openai's: its json_schema parse() helpers raise it for a cut-off answer."""

    def __init__(self, prompt: int, completion: int) -> None:
        super().__init__("Could not parse response content as the length limit was reached")
        usage = SimpleNamespace(
            prompt_tokens=prompt, completion_tokens=completion, prompt_tokens_details=None
        )
        self.completion = SimpleNamespace(usage=usage)


class Scripted(ToolCallingFake):
    """Answers with the scripted messages, or raises the scripted errors, in order."""

    script: list[Any] = []

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        entry = self.script.pop(0)
        if isinstance(entry, Exception):
            raise entry
        self.messages = iter([entry])
        return super()._generate(*args, **kwargs)


def reply(plan: dict[str, Any], tokens: tuple[int, int]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "LLMPlan", "args": plan, "id": "call_1"}],
        usage_metadata={
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    )


def context(tmp_path: Path, *script: Any, **kwargs: Any) -> PlannerContext:
    ToolCallingFake.seen = []
    return PlannerContext(
        store=SqliteStore(tmp_path / "t.db"),
        catalog=load_tool_modules(["blog"]),
        model=Scripted(messages=iter([]), script=list(script)),
        model_name="fake:model",
        **{"plan_format": "json", **kwargs},  # the model answers JSON plans
    )


async def failure(ctx: PlannerContext) -> ToolplanError:
    with pytest.raises(ToolplanError) as caught:
        await create_plan(QUERY, ctx)
    return caught.value


async def test_an_answer_the_client_refuses_as_cut_off_still_counts(tmp_path: Path) -> None:
    ctx = context(
        tmp_path,
        reply(broken_blog_plan(), (100, 20)),
        LengthFinishReasonError(900, 1536),
        max_tokens=1536,
    )
    error = await failure(ctx)
    assert isinstance(error, LLMOutputTruncated) and error.exit_code == 3
    assert error.details == {
        "llmCalls": 2,
        "usage": {"inputTokens": 1000, "outputTokens": 1556},
    }


async def test_a_model_failure_on_a_repair_carries_what_the_first_call_cost(
    tmp_path: Path,
) -> None:
    outage = ConnectionError("refused")
    error = await failure(context(tmp_path, reply(broken_blog_plan(), (100, 20)), outage))
    assert isinstance(error, LLMUnavailable) and "cannot reach" in error.message
    assert error.details == {"llmCalls": 1, "usage": {"inputTokens": 100, "outputTokens": 20}}


async def test_a_plan_still_invalid_after_the_repairs_carries_its_cost(tmp_path: Path) -> None:
    broken = [reply(broken_blog_plan(), (100, 20)) for _ in range(2)]
    error = await failure(context(tmp_path, *broken, max_repairs=1))
    assert isinstance(error, PlanningFailed) and error.exit_code == 2
    assert error.details == {"llmCalls": 2, "usage": {"inputTokens": 200, "outputTokens": 40}}


async def test_a_store_failure_after_planning_carries_its_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("the store went away")

    monkeypatch.setattr(toolplan.pipeline.planning, "store_plan", down)
    error = await failure(context(tmp_path, reply(blog_plan(), (70, 30))))
    assert isinstance(error, StoreUnavailable)
    assert error.details == {"llmCalls": 1, "usage": {"inputTokens": 70, "outputTokens": 30}}


async def test_a_failure_before_any_call_claims_no_cost(tmp_path: Path) -> None:
    error = await failure(context(tmp_path, ConnectionError("refused")))
    assert isinstance(error, LLMUnavailable)
    assert error.details == {"llmCalls": 0, "usage": {"inputTokens": 0, "outputTokens": 0}}
