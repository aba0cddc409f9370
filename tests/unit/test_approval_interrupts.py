"""Approvals in LangGraph: the agent and execution graphs raise ``interrupt()`` with the steps
waiting for approval and their arguments; ``Command(resume=...)`` records the decisions and
continues. The graphs are compiled with an in-memory checkpointer, as Studio's server does with
its own; the planning and respond model is a scripted fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tests.support.fake_models import ToolCallingFake
from tests.support.plans import llm_step
from toolplan.agent.graph import AgentContext, AgentGraphContext, build_agent_graph
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.approval import fingerprint
from toolplan.planning.context import PlannerContext
from toolplan.runs.context import ExecutionContext
from toolplan.runs.graph import ExecutionGraphContext, build_execution_graph
from toolplan.service.operations import submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog, load_tool_modules

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=5)

QUERY = "Send 50 to NO12 and tell me about it"

LLM_PLAN = {
    "reasoning": "one payment, one independent note",
    "steps": [
        llm_step("pay", "wire_money", {"to": "NO12", "amount": 50}),
        llm_step("note", "text", {"value": "sending 50 to NO12"}),
    ],
    "outputSteps": ["pay"],
}


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


def calls(log: Path, step: str) -> list[dict[str, Any]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [c for c in map(json.loads, lines) if c["step"] == step and c["event"] == "call"]


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "toolplan.db")


@pytest.fixture
def catalog() -> ToolCatalog:
    return load_tool_modules(["tests.support.tools"])


def reply(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{name}"}])


def agent(store: SqliteStore, catalog: ToolCatalog, *replies: AIMessage) -> AgentGraphContext:
    ToolCallingFake.seen = []
    planner = PlannerContext(
        store=store,
        catalog=catalog,
        model=ToolCallingFake(messages=iter(replies)),
        model_name="fake:model",
    )
    execution = ExecutionContext(store=store, catalog=catalog, options=FAST)
    return AgentGraphContext(agent=AgentContext(planner, execution))


def the_interrupt(output: dict[str, Any]) -> dict[str, Any]:
    [pending] = output["__interrupt__"]
    value: dict[str, Any] = pending.value
    return value


async def test_the_agent_graph_interrupts_and_an_approval_calls_the_tool_once(
    store: SqliteStore, catalog: ToolCatalog, log: Path
) -> None:
    context = agent(
        store,
        catalog,
        reply("LLMPlan", LLM_PLAN),
        reply("Respond", {"action": "answer", "answer": "Sent 50 to NO12."}),
    )
    graph = build_agent_graph().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}

    first = await graph.ainvoke({"query": QUERY}, config, context=context)
    asked = the_interrupt(first)
    assert asked["kind"] == "approval" and asked["planId"] == first["plan_id"]
    assert asked["waiting"] == [
        {"stepId": "pay", "tool": "wire_money", "pendingArguments": {"to": "NO12", "amount": 50}}
    ]
    assert calls(log, "pay") == []
    assert store.get_execution(first["plan_id"]).step("note").status == "succeeded"  # type: ignore[union-attr]
    assert (await graph.aget_state(config)).next == ("approval",)

    done = await graph.ainvoke(
        Command(resume={"approve": ["pay"], "by": "ada"}), config, context=context
    )
    assert "__interrupt__" not in done
    assert (done["status"], done["answer"]) == ("succeeded", "Sent 50 to NO12.")
    [call] = calls(log, "pay")
    assert {"to": call["to"], "amount": call["amount"]} == asked["waiting"][0]["pendingArguments"]
    pay = store.get_execution(done["plan_id"]).step("pay")  # type: ignore[union-attr]
    assert pay.decision is not None and (pay.decision.kind, pay.decision.by) == ("approved", "ada")
    assert pay.decision.fingerprint == fingerprint("wire_money", {"to": "NO12", "amount": 50})


async def test_a_denial_through_the_agent_graph_reaches_the_respond_model(
    store: SqliteStore, catalog: ToolCatalog, log: Path
) -> None:
    context = agent(
        store,
        catalog,
        reply("LLMPlan", LLM_PLAN),
        reply("Respond", {"action": "answer", "answer": "Nothing was sent."}),
    )
    graph = build_agent_graph().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t2"}}
    first = await graph.ainvoke({"query": QUERY, "max_replans": 0}, config, context=context)
    assert the_interrupt(first)["waiting"][0]["stepId"] == "pay"

    done = await graph.ainvoke(
        Command(resume={"deny": {"pay": "wrong account"}}), config, context=context
    )
    assert (done["status"], done["answer"]) == ("partial", "Nothing was sent.")
    assert calls(log, "pay") == []
    pay = store.get_execution(done["plan_id"]).step("pay")  # type: ignore[union-attr]
    assert pay.status == "denied" and "wrong account" in (pay.error or "")
    shown = "\n".join(str(m.content) for m in ToolCallingFake.seen[-1])
    assert "wrong account" in shown  # the respond model (and a replan) sees the reason


async def test_the_execution_graph_interrupts_and_continues_after_approval(
    store: SqliteStore, catalog: ToolCatalog, log: Path
) -> None:
    plan = {
        "steps": [
            {"id": "account", "tool": "echo", "parameters": {"value": {"iban": "NO12"}}},
            {
                "id": "pay",
                "tool": "wire_money",
                "parameters": {"to": "{{account.iban}}", "amount": 5},
            },
            {"id": "receipt", "tool": "echo", "parameters": {"value": "{{pay.sent}}"}},
        ]
    }
    ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
    graph = build_execution_graph().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": ref.plan_id}}
    context = ExecutionGraphContext(
        execution=ExecutionContext(store=store, catalog=catalog, options=FAST)
    )

    first = await graph.ainvoke({"plan_id": ref.plan_id}, config, context=context)
    assert the_interrupt(first)["waiting"] == [
        {"stepId": "pay", "tool": "wire_money", "pendingArguments": {"to": "NO12", "amount": 5}}
    ]
    # An answer naming a step the plan lacks records nothing and is asked again, saying why.
    wrong = await graph.ainvoke(Command(resume={"approve": ["nope"]}), config, context=context)
    assert "has no step 'nope'" in the_interrupt(wrong)["error"]
    assert store.get_execution(ref.plan_id).step("pay").status == "waiting_approval"  # type: ignore[union-attr]

    done = await graph.ainvoke(Command(resume={"approve": ["pay"]}), config, context=context)
    assert done["status"] == "succeeded"
    assert done["outputs"]["receipt"] == 5
    [call] = calls(log, "pay")
    assert (call["to"], call["amount"]) == ("NO12", 5)


async def test_without_interrupts_the_execution_graph_ends_waiting(
    store: SqliteStore, catalog: ToolCatalog, log: Path
) -> None:
    plan = {"steps": [{"id": "pay", "tool": "wire_money", "parameters": {"to": "X", "amount": 1}}]}
    ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
    graph = build_execution_graph().compile()
    context = ExecutionGraphContext(
        execution=ExecutionContext(store=store, catalog=catalog, options=FAST), interrupt=False
    )
    out = await graph.ainvoke({"plan_id": ref.plan_id}, context=context)
    assert out["status"] == "waiting" and "__interrupt__" not in out
    assert calls(log, "pay") == []
