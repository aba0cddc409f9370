"""No silence while planning (issue 28): the planning graph tells what it is doing as events, to
the planner context's listener and to LangGraph's custom stream; it never prints, and a listener
that fails never fails planning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from rich.console import Console

from tests.support.fake_models import ToolCallingFake
from tests.support.plans import ATTEMPTS, QUERY, blog_plan, broken_blog_plan
from toolplan.cli.render import PlanningPrinter, planning_line
from toolplan.pipeline.planning import create_plan
from toolplan.planning.context import PlannerContext
from toolplan.planning.graph import PlanningGraphContext, build_planning_graph
from toolplan.planning.progress import PlanningEvent
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules


class Limited(ToolCallingFake):
    max_tokens: int | None = None


def reply(plan: dict[str, Any], tokens: tuple[int, int], *, cut_off: bool = False) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "LLMPlan", "args": plan, "id": "call_1"}],
        usage_metadata={
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
        response_metadata={"finish_reason": "length" if cut_off else "stop"},
    )


def context(tmp_path: Path, *replies: AIMessage, **kwargs: Any) -> PlannerContext:
    ToolCallingFake.seen = []
    return PlannerContext(
        store=SqliteStore(tmp_path / "t.db"),
        catalog=load_tool_modules(["blog"]),
        model=Limited(messages=iter(replies), max_tokens=kwargs.get("max_tokens")),
        model_name="fake:model",
        **kwargs,
    )


async def test_planning_and_a_repair_are_told_as_they_happen(tmp_path: Path) -> None:
    events: list[PlanningEvent] = []
    ctx = context(
        tmp_path,
        reply(broken_blog_plan(), (100, 20)),
        reply(blog_plan(), (120, 25)),
        listener=events.append,
    )
    await create_plan(QUERY, ctx)
    kinds = ["planning", "step", "step", "answered", "repairing", "step", "step", "answered"]
    assert [e.kind for e in events] == [*kinds, "rewritten"]
    planning, first, repairing, second, rewritten = (e for e in events if e.kind != "step")
    assert rewritten.changes == [] and rewritten.llm_calls == 2  # stored as the model wrote it
    assert (planning.model, planning.attempt, planning.attempts) == ("fake:model", 1, ATTEMPTS)
    assert planning.llm_calls == 0 and planning.usage == {"inputTokens": 0, "outputTokens": 0}
    assert first.steps == 2 and first.llm_calls == 1 and first.usage["outputTokens"] == 20
    assert (repairing.attempt, repairing.attempts, repairing.problems) == (2, ATTEMPTS, 2)
    assert repairing.problem is not None and "createAuthr" in repairing.problem
    assert second.llm_calls == 2 and second.usage == {"inputTokens": 220, "outputTokens": 45}
    assert planning.elapsed_ms <= first.elapsed_ms <= second.elapsed_ms


async def test_a_retry_with_a_larger_limit_is_told(tmp_path: Path) -> None:
    events: list[PlanningEvent] = []
    ctx = context(
        tmp_path,
        reply(blog_plan(), (100, 64), cut_off=True),
        reply(blog_plan(), (100, 90)),
        max_tokens=64,
        listener=events.append,
    )
    await create_plan(QUERY, ctx)
    kinds = ["planning", "step", "step", "retrying", "step", "step", "answered", "rewritten"]
    assert [e.kind for e in events] == kinds
    retrying = events[3]
    assert retrying.max_tokens == 128 and retrying.llm_calls == 1
    assert retrying.usage == {"inputTokens": 100, "outputTokens": 64}


async def test_a_failing_listener_never_fails_planning(tmp_path: Path) -> None:
    def broken(event: PlanningEvent) -> None:
        raise BrokenPipeError("stderr is gone")

    ctx = context(tmp_path, reply(blog_plan(), (10, 5)), listener=broken)
    assert (await create_plan(QUERY, ctx)).ref.status == "planned"


async def test_the_graph_streams_the_same_events(tmp_path: Path) -> None:
    ctx = context(tmp_path, reply(broken_blog_plan(), (100, 20)), reply(blog_plan(), (120, 25)))
    graph = build_planning_graph().compile()
    streamed = [
        chunk
        async for chunk in graph.astream(
            {"query": QUERY}, context=PlanningGraphContext(planner=ctx), stream_mode="custom"
        )
    ]
    assert [(c["event"], c["kind"]) for c in streamed] == [
        ("planning", "planning"),
        ("planning", "step"),
        ("planning", "step"),
        ("planning", "answered"),
        ("planning", "repairing"),
        ("planning", "step"),
        ("planning", "step"),
        ("planning", "answered"),
        ("planning", "rewritten"),
    ]
    assert streamed[8]["changes"] == []
    assert streamed[1]["step"] == {
        "id": "author",
        "tool": "createAuthr",
        "parameters": {"name": "Alice", "email": "alice@test.com"},
    }
    assert (streamed[1]["steps"], streamed[2]["steps"]) == (1, 2)
    assert 0 < streamed[1]["tokens"] < streamed[2]["tokens"]
    assert streamed[4]["attempt"] == 2 and "createAuthr" in streamed[4]["problem"]
    assert streamed[7]["llmCalls"] == 2 and streamed[7]["steps"] == 2


def event(kind: Any, **fields: Any) -> PlanningEvent:
    base: dict[str, Any] = {
        "model": "openai:gpt-4o-mini",
        "attempt": 1,
        "attempts": 3,
        "elapsed_ms": 12345.0,
        "llm_calls": 1,
        "usage": {"inputTokens": 967, "outputTokens": 156},
    }
    return PlanningEvent(kind, **{**base, **fields})


def test_the_cli_lines() -> None:
    assert planning_line(event("planning")) == "planning with openai:gpt-4o-mini…"
    assert planning_line(
        event("repairing", attempt=2, problem="step 'blog': unknown\n tool 'x'", problems=3)
    ) == ("repairing (attempt 2 of 3): step 'blog': unknown tool 'x' (+2 more)")
    assert planning_line(
        event("repairing", attempt=3, problem="line 1: 'x' is not a tool", afresh="json")
    ) == ("asking afresh for a JSON plan (attempt 3 of 3) after: line 1: 'x' is not a tool")
    assert planning_line(event("retrying", max_tokens=3072)) == (
        "the answer stopped at the output limit; asking again with 3072 tokens…"
    )
    assert planning_line(event("answered", steps=3)) == (
        "answered after 12.3 s: 3 step(s); 1 LLM call(s), 967 input / 156 output tokens"
    )
    assert "no plan" in planning_line(event("answered", steps=None))


def test_the_printer_writes_plain_lines() -> None:
    console = Console(record=True, width=200, color_system=None)
    PlanningPrinter(console)(event("planning", model="openai:[bold]x"))
    assert console.export_text() == "planning with openai:[bold]x…\n"
