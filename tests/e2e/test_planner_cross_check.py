"""The cross-check (``TOOLPLAN_CROSS_CHECK``): a second plan over the catalog in reverse order,
asked beside the first; the first plan's steps whose tools the second never calls, and that no
kept step takes from, are dropped, and the planning record says so.

The fake server answers by the order it sees the tools in: the catalog as loaded gets the first
plan, the catalog in reverse the second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import as_model_endpoint, planner_context
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, broken_blog_plan, llm_step
from toolplan.planning import cross_check
from toolplan.planning.planner import create_plan
from toolplan.planning.progress import PlanningEvent


@pytest.fixture
def llm(llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    monkeypatch.setenv("TOOLPLAN_CROSS_CHECK", "1")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    return as_model_endpoint(llm, monkeypatch)


def _system(request: dict[str, Any]) -> str:
    return str(next(m["content"] for m in request["messages"] if m["role"] == "system"))


def reversed_catalog(request: dict[str, Any]) -> bool:
    """Whether ``request`` lists the catalog in reverse (``createBlog`` before ``createAuthor``)."""
    system = _system(request)
    return system.index("## createBlog") < system.index("## createAuthor")


def by_order(first: Reply, second: Reply) -> Callable[[dict[str, Any]], Reply]:
    """A script entry: ``first`` for the catalog as loaded, ``second`` for it in reverse."""
    return lambda request: second if reversed_catalog(request) else first


def with_draft(plan: dict[str, Any], *, uses_draft: bool = False) -> dict[str, Any]:
    """``plan`` plus a look-alike step: a draft of the same blog. With ``uses_draft`` the blog
    step takes the draft's title, so the draft is needed."""
    draft = llm_step("draft", "createDraft", {"title": "Hello", "content": "about world"})
    steps = [*plan["steps"], draft]
    if uses_draft:
        blog = dict(steps[1])
        blog["parameters"] = blog["parameters"].replace('"Hello"', '"{{draft.title}}"')
        steps[1] = blog
    return {**plan, "steps": steps}


async def test_a_step_whose_tool_the_second_plan_never_calls_is_dropped(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    first = Reply.structured(with_draft(blog_plan()), usage=(900, 120))
    llm.script([by_order(first, Reply.structured(blog_plan(), usage=(800, 90)))] * 2)
    ctx = planner_context(tmp_path)
    outcome = await create_plan(QUERY, ctx)

    assert [s["tool"] for s in outcome.plan["steps"]] == ["createAuthor", "createBlog"]
    assert len(llm.requests) == 2
    assert sorted(reversed_catalog(r) for r in llm.requests) == [False, True]
    assert outcome.llm_calls == 2
    assert outcome.usage["inputTokens"] == 1700 and outcome.usage["outputTokens"] == 210
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["crossCheck"] == {
        "tools": ["createAuthor", "createBlog"],
        "dropped": {"draft": "createDraft"},
    }
    assert record.meta["llmCalls"] == 2


async def test_a_disputed_step_a_kept_step_takes_from_is_kept(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    first = Reply.structured(with_draft(blog_plan(), uses_draft=True))
    llm.script([by_order(first, Reply.structured(blog_plan()))] * 2)
    ctx = planner_context(tmp_path)
    outcome = await create_plan(QUERY, ctx)

    assert [s["id"] for s in outcome.plan["steps"]] == ["author", "blog", "draft"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["crossCheck"] == {"tools": ["createAuthor", "createBlog"]}


async def test_plans_that_share_no_tool_leave_the_first_as_it_is(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    other = {
        "reasoning": "a draft only",
        "steps": [llm_step("draft", "createDraft", {"title": "Hello"})],
        "outputSteps": ["draft"],
    }
    llm.script([by_order(Reply.structured(blog_plan()), Reply.structured(other))] * 2)
    ctx = planner_context(tmp_path)
    outcome = await create_plan(QUERY, ctx)

    assert [s["id"] for s in outcome.plan["steps"]] == ["author", "blog"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.meta["crossCheck"] == {"tools": ["createDraft"]}


async def test_a_second_answer_that_fails_leaves_the_first_plan(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    first = Reply.structured(with_draft(blog_plan()), usage=(900, 120))
    llm.script([by_order(first, Reply.error(500, "the second slot broke"))] * 2)
    ctx = planner_context(tmp_path)
    outcome = await create_plan(QUERY, ctx)

    assert [s["id"] for s in outcome.plan["steps"]] == ["author", "blog", "draft"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    check = record.meta["crossCheck"]
    assert check["tools"] is None and "the second slot broke" in check["error"]
    assert outcome.llm_calls == 1 and outcome.usage["inputTokens"] == 900  # no answer, no bill


async def test_a_second_answer_still_going_long_after_the_first_is_stopped(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cross_check, "MIN_PATIENCE_S", 0.05)
    release = threading.Event()  # the second answer never comes before the plan is made

    def answer(request: dict[str, Any]) -> Reply:
        if reversed_catalog(request):
            release.wait(60)
            return Reply.structured(blog_plan())
        return Reply.structured(with_draft(blog_plan()), usage=(900, 120))

    llm.script([answer] * 2)
    ctx = planner_context(tmp_path)
    try:
        outcome = await create_plan(QUERY, ctx)
    finally:
        release.set()

    assert [s["id"] for s in outcome.plan["steps"]] == ["author", "blog", "draft"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    check = record.meta["crossCheck"]
    assert check["tools"] is None and "stopped" in check["error"]
    # the stopped request's prompt was read: counted (estimated), and the call with it
    assert outcome.llm_calls == 2 and outcome.usage["inputTokens"] > 900 + 500


async def test_repairs_are_not_cross_checked(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    broken = Reply.structured(broken_blog_plan())
    second = Reply.structured(blog_plan())
    llm.script([by_order(broken, second)] * 2 + [Reply.structured(with_draft(blog_plan()))])
    ctx = planner_context(tmp_path)
    outcome = await create_plan(QUERY, ctx)

    assert len(llm.requests) == 3 and outcome.llm_calls == 3
    assert [reversed_catalog(r) for r in llm.requests].count(True) == 1
    # the repaired plan is checked against the first answer's second opinion
    assert [s["id"] for s in outcome.plan["steps"]] == ["author", "blog"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["crossCheck"]["dropped"] == {"draft": "createDraft"}


async def test_the_listener_sees_only_the_first_plan(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    other = {**blog_plan(), "steps": [*blog_plan()["steps"], llm_step("x", "listBlogs", {})]}
    llm.script([by_order(Reply.structured(blog_plan()), Reply.structured(other))] * 2)
    events: list[PlanningEvent] = []
    ctx = planner_context(tmp_path)
    ctx.listener = events.append
    await create_plan(QUERY, ctx)

    shown = [e.step["tool"] for e in events if e.kind == "step" and e.step]
    assert shown == ["createAuthor", "createBlog"]  # never the second plan's listBlogs
    answered = [e for e in events if e.kind == "answered"]
    assert [e.llm_calls for e in answered] == [2]


async def test_off_by_default(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLPLAN_CROSS_CHECK")
    llm.script([Reply.structured(with_draft(blog_plan()))])
    ctx = planner_context(tmp_path)
    outcome = await create_plan(QUERY, ctx)

    assert len(llm.requests) == 1
    assert [s["id"] for s in outcome.plan["steps"]] == ["author", "blog", "draft"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None and "crossCheck" not in record.meta
