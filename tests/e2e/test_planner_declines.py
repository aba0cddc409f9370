"""A model that plans no step declines the request: no tool does what was asked.

Asked for something none of the tools does ("find the fastest route from New York to Boston"
with a prime-number tool), a small model called the one tool there was, with made-up numbers.
The prompt now tells it to answer ``"steps": []`` with its reason, and the planner turns that
answer into :class:`PlanDeclined` (exit 2, nothing stored) instead of asking for a plan again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli, as_model_endpoint, planner_context
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, broken_blog_plan
from toolplan.errors import InvalidInput
from toolplan.pipeline.batch import load_queries, run_batch
from toolplan.pipeline.planning import create_plan
from toolplan.planning.planner import PlanDeclined, PlanningFailed

# These tests are about the JSON format's declines: the plan format is JSON.
pytestmark = pytest.mark.usefixtures("json_plans")

ROUTE = "Find the fastest route from New York to Boston."
REASON = "None of the tools plans routes; they manage blogs, metrics and weather."


def declined(reason: str = REASON) -> dict[str, Any]:
    return {"reasoning": reason, "steps": [], "outputSteps": []}


@pytest.fixture
def llm(llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    return as_model_endpoint(llm, monkeypatch)


async def test_an_answer_with_no_steps_declines_and_stores_nothing(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm.script([Reply.structured(declined(), usage=(700, 30))])
    ctx = planner_context(tmp_path)
    with pytest.raises(PlanDeclined) as caught:
        await create_plan(ROUTE, ctx)
    error = caught.value
    assert isinstance(error, PlanningFailed) and isinstance(error, InvalidInput)
    assert error.exit_code == 2 and error.reason == REASON
    assert "no tool that does what the request asks" in error.message and REASON in error.message
    assert error.details["declined"] == REASON
    assert (error.llm_calls, error.usage) == (1, {"inputTokens": 700, "outputTokens": 30})
    assert [issue.code for issue in error.issues] == ["declined"]
    assert len(llm.requests) == 1  # not asked again
    assert ctx.store.recent_plans().items == []


async def test_a_repair_answered_with_no_steps_declines(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm.script([Reply.structured(broken_blog_plan()), Reply.structured(declined(""))])
    with pytest.raises(PlanDeclined) as caught:
        await create_plan(QUERY, planner_context(tmp_path))
    assert caught.value.llm_calls == 2 and caught.value.reason == ""
    assert "(no reason given)" in caught.value.message


async def test_the_prompt_says_how_to_decline(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    llm.script([Reply.structured(blog_plan())])
    await create_plan(QUERY, planner_context(tmp_path))
    system = next(m["content"] for m in llm.requests[0]["messages"] if m["role"] == "system")
    assert "If no tool does what the\nrequest asks" in system and '`"steps": []`' in system


def test_cli_plan_and_run_exit_2_with_the_reason(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(declined())])
    done = cli_llm("plan", ROUTE, "--json")
    assert done.code == 2, done.stderr
    data = done.json()
    assert data["declined"] == REASON and data["exitCode"] == 2 and data["llmCalls"] == 1
    assert data["issues"][0]["code"] == "declined"

    llm.script([Reply.structured(declined())])
    run = cli_llm("run", ROUTE)
    assert run.code == 2 and "Traceback" not in run.stderr
    assert "no tool that does what the request asks" in run.stderr and "plans routes" in run.stderr
    assert cli_llm("list", "--json").json()["plans"] == []


async def test_a_batch_line_says_declined(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text(ROUTE + "\n", encoding="utf-8")
    llm.script([Reply.structured(declined())])
    (line,) = await run_batch(
        load_queries(queries), planner_context(tmp_path), out=tmp_path / "out.jsonl"
    )
    assert line["status"] == "declined" and line["declined"] == REASON
    assert line["planId"] is None and line["llmCalls"] == 1
