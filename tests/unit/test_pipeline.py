"""The one plan-then-execute path, the one lookup by ID and the one "needs review" gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from tests.support.fake_models import ToolCallingFake
from tests.support.plans import QUERY, blog_plan
from toolplan.errors import InvalidInput, NotFound, PlanNeedsReview
from toolplan.pipeline.flow import FromDocument, FromQuery, Planned, plan_then_execute
from toolplan.plan_format.ids import new_id
from toolplan.planning.graph import PlannerContext
from toolplan.runs.runner import ExecutionContext
from toolplan.store.lookup import find_plan, find_request, require_approval
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules

DOCUMENT = {
    "steps": [
        {"id": "author", "tool": "createAuthor", "parameters": {"name": "A", "email": "a@x.io"}},
        {
            "id": "blog",
            "tool": "createBlog",
            "parameters": {"authorId": "{{author._id}}", "title": "T", "content": "C"},
        },
    ]
}


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


@pytest.fixture
def ctx(store: SqliteStore) -> ExecutionContext:
    return ExecutionContext(store=store, catalog=load_tool_modules(["blog"]))


def planner(ctx: ExecutionContext, plan: dict[str, Any]) -> PlannerContext:
    message = AIMessage(
        content="",
        tool_calls=[{"name": "LLMPlan", "args": plan, "id": "call_1"}],
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    )
    ToolCallingFake.seen = []
    return PlannerContext(
        store=ctx.store,
        catalog=ctx.catalog,
        model=ToolCallingFake(messages=iter([message])),
        model_name="fake:model",
    )


async def test_a_document_is_stored_then_executed(ctx: ExecutionContext) -> None:
    seen: list[Planned] = []

    def on_planned(planned: Planned) -> None:
        assert ctx.store.get_execution(planned.ref.plan_id) is None  # before anything runs
        seen.append(planned)

    outcome = await plan_then_execute(
        FromDocument(DOCUMENT, query="q", meta={"source": "test"}),
        ctx,
        max_steps=50,
        on_planned=on_planned,
    )
    assert seen == [outcome.planned] and outcome.planned.planning is None
    assert outcome.result is not None and outcome.result.status == "succeeded"
    record = find_plan(ctx.store, outcome.planned.ref.plan_id)
    estimate = record.meta.pop("estimate")
    assert record.meta == {"source": "test"} and record.query == "q"
    assert estimate["basis"] in ("history", "default", "mixed") and estimate["durationMs"] > 0


async def test_a_query_is_planned_then_executed(ctx: ExecutionContext) -> None:
    outcome = await plan_then_execute(
        FromQuery(QUERY), ctx, max_steps=50, planner=planner(ctx, blog_plan())
    )
    assert outcome.planned.planning is not None and outcome.planned.planning.llm_calls == 1
    assert outcome.result is not None and outcome.result.status == "succeeded"


async def test_low_confidence_is_refused_or_skipped_unless_approved(ctx: ExecutionContext) -> None:
    low = blog_plan(confidence=0.2)
    with pytest.raises(PlanNeedsReview) as refused:
        await plan_then_execute(FromQuery(QUERY), ctx, max_steps=50, planner=planner(ctx, low))
    details = refused.value.details
    assert details["status"] == "needs_review" and details["llmCalls"] == 1
    assert "(0.2)" in refused.value.message and "NOT executed" in refused.value.message
    assert ctx.store.get_execution(str(details["planId"])) is None

    skipped = await plan_then_execute(
        FromQuery(QUERY), ctx, max_steps=50, planner=planner(ctx, low), review="skip"
    )
    assert skipped.result is None and skipped.planned.ref.status == "needs_review"

    approved = await plan_then_execute(
        FromQuery(QUERY), ctx, max_steps=50, planner=planner(ctx, low), approve=True
    )
    assert approved.result is not None and approved.result.status == "succeeded"


async def test_a_query_needs_a_planner(ctx: ExecutionContext) -> None:
    with pytest.raises(InvalidInput, match="needs a planner"):
        await plan_then_execute(FromQuery(QUERY), ctx, max_steps=50)


def test_lookups_check_the_id_then_the_store(store: SqliteStore) -> None:
    with pytest.raises(InvalidInput, match=r"'nope' is not a plan ID \(expected plan_"):
        find_plan(store, "nope")
    with pytest.raises(InvalidInput, match=r"is not a request ID \(expected req_") as long:
        find_request(store, "x" * 500)
    assert len(long.value.message) < 200  # a huge ID is cut in the message
    with pytest.raises(NotFound, match="does not exist in sqlite:///"):
        find_plan(store, new_id("plan"))
    with pytest.raises(NotFound, match="request 'req_"):
        find_request(store, new_id("req"))


def test_the_gate_says_how_to_approve() -> None:
    plan = {"steps": [{"id": "a", "confidence": 0.3}, {"id": "b", "confidence": 0.9}]}
    require_approval("plan_1", "planned", plan, approve=False)
    require_approval("plan_1", "needs_review", plan, approve=True)
    with pytest.raises(PlanNeedsReview, match="NOT queued") as queued:
        require_approval("plan_1", "needs_review", plan, approve=False, action="queued")
    assert "(0.3)" in queued.value.message and "--enqueue --yes" in queued.value.message
