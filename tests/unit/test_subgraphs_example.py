"""The execution graph's custom stream (one event per step transition, read from a real compiled
graph), and ``examples/subgraphs.py``: the planner and executor graphs as subgraphs of a user's
graph, run end to end with a fake model."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.fake_models import ToolCallingFake
from tests.support.plans import QUERY, blog_plan
from tests.unit.test_planning import reply
from toolplan.planning.context import PlannerContext
from toolplan.runs.context import ExecutionContext
from toolplan.runs.graph import ExecutionGraphContext, build_execution_graph
from toolplan.service.operations import submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules

EXAMPLE = Path(__file__).parents[2] / "examples" / "subgraphs.py"

PLAN: dict[str, Any] = {
    "steps": [
        {"id": "a", "tool": "echo", "parameters": {"value": 1}},
        {"id": "bad", "tool": "business_error", "parameters": {"message": "no"}},
        {"id": "b", "tool": "echo", "parameters": {"value": "{{a}}"}},
        {"id": "c", "tool": "echo", "parameters": {"value": "{{bad}}"}},
    ]
}


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("subgraphs_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


async def test_the_execution_graph_streams_one_custom_event_per_step_transition(
    store: SqliteStore,
) -> None:
    catalog = load_tool_modules(["tests.support.tools"])
    ref = submit_plan(PLAN, store=store, catalog=catalog, max_steps=20)
    heard: list[str] = []
    ctx = ExecutionContext(
        store=store, catalog=catalog, listener=lambda e: heard.append(f"{e.step_id}:{e.kind}")
    )
    graph = build_execution_graph().compile()

    events = [
        event
        async for event in graph.astream(
            {"plan_id": ref.plan_id},
            context=ExecutionGraphContext(execution=ctx),
            stream_mode="custom",
        )
    ]

    assert all(e["event"] == "step" and e["planId"] == ref.plan_id for e in events)
    by_step: dict[str, list[str]] = {}
    for event in events:
        by_step.setdefault(event["stepId"], []).append(event["kind"])
    assert by_step == {
        "a": ["started", "succeeded"],
        "b": ["started", "succeeded"],
        "bad": ["started", "failed"],
        "c": ["skipped"],
    }
    # The client's own listener still hears every transition, in the same order.
    assert heard == [f"{e['stepId']}:{e['kind']}" for e in events]
    execution = store.get_execution(ref.plan_id)
    assert execution is not None and execution.status == "partial"


async def test_a_broken_stream_consumer_never_fails_a_step(store: SqliteStore) -> None:
    catalog = load_tool_modules(["tests.support.tools"])
    ref = submit_plan(PLAN, store=store, catalog=catalog, max_steps=20)

    def broken(event: Any) -> None:
        raise RuntimeError("listener down")

    ctx = ExecutionContext(store=store, catalog=catalog, listener=broken)
    output = (
        await build_execution_graph()
        .compile()
        .ainvoke({"plan_id": ref.plan_id}, context=ExecutionGraphContext(execution=ctx))
    )
    assert output["status"] == "partial"
    assert {s["id"]: s["status"] for s in output["steps"]}["a"] == "succeeded"


async def test_the_subgraphs_example_plans_executes_and_streams_both(store: SqliteStore) -> None:
    example = _example()
    catalog = load_tool_modules(["blog", "metrics", "weather"])
    ToolCallingFake.seen = []
    planner = PlannerContext(
        store=store,
        catalog=catalog,
        model=ToolCallingFake(messages=iter([reply(blog_plan())])),
        model_name="fake:model",
    )
    context = example.AppContext(
        planner=planner, execution=ExecutionContext(store=store, catalog=catalog)
    )
    app = example.build_app()

    streamed: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    final: dict[str, Any] = {}
    async for namespace, mode, chunk in app.astream(
        {"query": QUERY}, context=context, stream_mode=["custom", "values"], subgraphs=True
    ):
        if mode == "custom":
            streamed.append((namespace, chunk))
        elif namespace == ():
            final = chunk

    assert final["status"] == "succeeded"
    assert final["summary"].startswith(f"{final['plan_id']}: succeeded")
    kinds = [(ns[0].split(":")[0], e["event"], e["kind"]) for ns, e in streamed]
    assert kinds[0] == ("plan", "planning", "planning")
    steps = [(e["stepId"], e["kind"]) for ns, e in streamed if e["event"] == "step"]
    assert {ns[0].split(":")[0] for ns, e in streamed if e["event"] == "step"} == {"execute"}
    assert sorted(steps) == sorted(
        (step["id"], kind) for step in blog_plan()["steps"] for kind in ("started", "succeeded")
    )
    execution = store.get_execution(final["plan_id"])
    assert execution is not None and execution.status == "succeeded"
