"""Planner nodes and graph with langchain-core's fake chat models (no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from tests.support.fake_models import ToolCallingFake
from tests.support.plans import QUERY, blog_plan, broken_blog_plan
from toolplan.errors import InvalidInput, NotFound
from toolplan.pipeline.planning import build_planner_graph, create_plan
from toolplan.planning.graph import (
    PlannerContext,
    analyze_dependencies,
    build_planning_graph,
)
from toolplan.planning.parsing import to_plan_data
from toolplan.planning.planner import PlanningFailed
from toolplan.planning.prompts import load_prompt, render_system_prompt
from toolplan.planning.schema import generic_plan_schema
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules

SNAPSHOT = Path(__file__).parents[1] / "snapshots" / "planner_prompt.md"


def reply(plan: dict[str, Any], *, tokens: tuple[int, int] = (100, 20)) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "LLMPlan", "args": plan, "id": "call_1"}],
        usage_metadata={
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    )


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


def context(store: SqliteStore, *replies: AIMessage, **kwargs: Any) -> PlannerContext:
    ToolCallingFake.seen = []
    model = ToolCallingFake(messages=iter(replies))
    return PlannerContext(
        store=store,
        catalog=load_tool_modules(["blog", "metrics", "weather"]),
        model=model,
        model_name="fake:model",
        **{"plan_format": "json", **kwargs},  # these tests are of the JSON format
    )


async def test_one_llm_call_plans_validates_and_stores(store: SqliteStore) -> None:
    ctx = context(store, reply(blog_plan(), tokens=(321, 45)))
    outcome = await create_plan(QUERY, ctx)
    assert outcome.llm_calls == 1 and outcome.usage == {"inputTokens": 321, "outputTokens": 45}
    assert outcome.ref.status == "planned"
    assert outcome.plan["steps"][1]["parameters"]["authorId"] == "{{author._id}}"
    assert outcome.analysis["dependencies"]["blog"] == ["author"]
    record = store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.query == QUERY
    assert record.meta["model"] == "fake:model" and record.meta["llmCalls"] == 1
    assert record.meta["usage"] == {"inputTokens": 321, "outputTokens": 45}
    assert record.meta["promptVersion"] == load_prompt("planner").version
    assert record.meta["confidence"] == 0.9 and record.meta["planningMs"] >= 0
    assert record.meta["reasoning"] == "The blog needs the author's _id."
    assert store.get_request(outcome.ref.request_id) is not None


async def test_repair_loop_sends_errors_back_and_stores_the_fixed_plan(store: SqliteStore) -> None:
    ctx = context(store, reply(broken_blog_plan()), reply(blog_plan()))
    outcome = await create_plan(QUERY, ctx)
    assert outcome.llm_calls == 2 and outcome.usage == {"inputTokens": 200, "outputTokens": 40}
    repair_request = ToolCallingFake.seen[1]
    feedback = repair_request[-1].content
    assert "unknown tool 'createAuthr'" in feedback and "did you mean 'createAuthor'" in feedback
    assert "references unknown step 'writer'" in feedback
    assert '"createAuthr"' in feedback  # the previous plan is shown to the model
    record = store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.meta["repairs"] == 1


async def test_unfixable_plan_stops_after_max_repairs_and_stores_nothing(
    store: SqliteStore,
) -> None:
    ctx = context(
        store,
        reply(broken_blog_plan()),
        reply(broken_blog_plan()),
        reply(broken_blog_plan()),
        max_repairs=2,
    )
    with pytest.raises(PlanningFailed) as caught:
        await create_plan(QUERY, ctx)
    assert caught.value.exit_code == 2 and caught.value.llm_calls == 3
    assert "createAuthr" in caught.value.message
    assert store._query("SELECT COUNT(*) AS n FROM tp_plans")[0]["n"] == 0


async def test_max_repairs_zero_means_a_single_call(store: SqliteStore) -> None:
    ctx = context(store, reply(broken_blog_plan()), max_repairs=0)
    with pytest.raises(PlanningFailed) as caught:
        await create_plan(QUERY, ctx)
    assert caught.value.llm_calls == 1


async def test_low_confidence_is_stored_as_needs_review(store: SqliteStore) -> None:
    ctx = context(store, reply(blog_plan(confidence=0.2)))
    outcome = await create_plan(QUERY, ctx)
    assert outcome.ref.status == "needs_review"
    record = store.get_plan(outcome.ref.plan_id)
    assert (
        record is not None and record.status == "needs_review" and record.meta["confidence"] == 0.2
    )
    ctx = context(store, reply(blog_plan(confidence=0.2)), confidence_threshold=0.1)
    assert (await create_plan(QUERY, ctx)).ref.status == "planned"


async def test_new_version_under_an_existing_request(store: SqliteStore) -> None:
    first = await create_plan(QUERY, context(store, reply(blog_plan())))
    second = await create_plan(
        "now Alice's blog with a different title",
        context(store, reply(blog_plan())),
        request_id=first.ref.request_id,
    )
    assert second.ref.request_id == first.ref.request_id and second.ref.plan_id != first.ref.plan_id
    assert [p.plan_id for p in store.list_plans(first.ref.request_id)] == [
        first.ref.plan_id,
        second.ref.plan_id,
    ]
    with pytest.raises(NotFound):
        await create_plan(QUERY, context(store), request_id="req_1700000000_zzzzzz")
    with pytest.raises(InvalidInput):
        await create_plan("   ", context(store))


async def test_prompt_carries_catalog_query_and_format(store: SqliteStore) -> None:
    await create_plan(QUERY, context(store, reply(blog_plan())))
    system, human = ToolCallingFake.seen[0][:2]
    assert human.content == QUERY
    for name in ("createAuthor", "createBlog", "get_weather", "check_threshold"):
        assert f"## {name}" in system.content
    assert '"required": ["authorId", "title", "content"]' in system.content
    assert "{{stepId.items[0].name}}" in system.content


def test_planner_graph_nodes_are_visible() -> None:
    graph = build_planning_graph().compile()
    assert {"select_tools", "analyze_dependencies", "give_up"} <= set(graph.get_graph().nodes)
    stored = build_planner_graph().compile()  # Studio's: the plan stored at the end
    assert {"check", "select_tools", "analyze_dependencies", "persist"} <= set(
        stored.get_graph().nodes
    )


async def test_analysis_node_reports_validation_errors(store: SqliteStore) -> None:
    ctx = context(store)
    data, issues = to_plan_data(broken_blog_plan())
    assert issues == [] and data is not None
    state = await analyze_dependencies({"candidate": data}, ctx)
    assert state["result"] is None and any("createAuthr" in e for e in state["errors"])


def test_llm_schema_conversion_is_lenient_but_reports_bad_json() -> None:
    good, issues = to_plan_data(
        {
            "steps": [
                {"id": "a", "tool": "t", "parameters": {"x": 1}, "dependsOn": [], "confidence": 3}
            ]
        }
    )
    assert issues == [] and good is not None
    assert good["steps"][0]["parameters"] == {"x": 1} and good["steps"][0]["confidence"] == 1.0
    bad, issues = to_plan_data({"steps": [{"id": "a", "tool": "t", "parameters": "{not json"}]})
    assert bad is None and "parameters is not valid JSON" in issues[0].message
    assert to_plan_data("nonsense")[1][0].code == "json"
    assert generic_plan_schema().schema["required"] == ["reasoning", "steps", "outputSteps"]


def test_prompt_snapshot() -> None:
    """The rendered planner prompt for the built-in catalog. Regenerate with UPDATE_SNAPSHOTS=1."""
    import os

    rendered = render_system_prompt(
        load_prompt("planner"), load_tool_modules(["blog", "metrics", "weather"]).infos(), "typed"
    )
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(rendered)
    assert rendered == SNAPSHOT.read_text()
    assert load_prompt("planner").version == "planner-v9"
    _ = json


async def test_a_plan_is_analysed_once_and_stored_as_analysed(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolplan.planning.graph
    import toolplan.service.operations
    from toolplan.validation import analyze

    calls: list[str] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append("analyze")
        return analyze(*args, **kwargs)

    monkeypatch.setattr(toolplan.planning.graph, "analyze", counting)
    monkeypatch.setattr(toolplan.service.operations, "analyze", counting)
    outcome = await create_plan(QUERY, context(store, reply(blog_plan())))
    assert calls == ["analyze"]  # persist stores the analysis node's result, not a second one
    record = store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.analysis == outcome.analysis


def test_the_template_pattern_compiles_in_every_grammar_engine() -> None:
    # llama-cpp-python's GBNF parser rejects "\." in a literal (unknown escape), and its server
    # then dies on the request: only \{ \} \[ \] may be escaped in the typed schema's pattern
    import re

    from toolplan.planning.schema import TEMPLATE_PATTERN

    assert set(re.findall(r"\\(.)", TEMPLATE_PATTERN)) <= set("{}[]")
    accepted = ["{{a}}", "{{a.b}}", "{{a-1.b_c[0].d}}", "{{a[12]}}"]
    rejected = ["{{a.}}", "{{1a}}", "{{ a }}", "x{{a}}", "{{a.b c}}", "{{a..b}}"]
    assert all(re.fullmatch(TEMPLATE_PATTERN, t) for t in accepted)
    assert not any(re.fullmatch(TEMPLATE_PATTERN, t) for t in rejected)
