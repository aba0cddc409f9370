"""The ``execute_plan`` meta-tool inside real LangChain/LangGraph agents, with scripted models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import convert_to_openai_messages
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import create_react_agent

from tests.support.fake_models import ToolCallingFake
from tests.support.fake_openai import FakeOpenAIServer, Reply
from toolplan.adapters.plan_tool import (
    PLAN_ARGUMENT_SCHEMA,
    PLAN_STRING_SCHEMA,
    PlanTool,
    describe_tools,
    plan_tool,
)
from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.errors import InvalidInput
from toolplan.plan_format.plan import Step
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog

SECRET = "INTERMEDIATE-7f3a9c"
"""Only in the output of the intermediate step: it must never reach the model."""

CALLS: list[str] = []


@tool
def lookup_user(user_id: str) -> dict[str, Any]:
    """Look up a user by ID. Returns {"id", "email", "internal"}."""
    CALLS.append("lookup_user")
    return {"id": user_id, "email": f"{user_id}@example.test", "internal": SECRET}


@tool
def list_orders(email: str) -> list[dict[str, Any]]:
    """List the orders of the customer with this email."""
    CALLS.append("list_orders")
    return [{"order": "o-1", "total": 10}, {"order": "o-2", "total": 25}]


@tool
def broken(reason: str) -> str:
    """Always fails."""
    CALLS.append("broken")
    raise ConnectionError(reason)


@tool
def big(size: int) -> str:
    """Return `size` characters."""
    CALLS.append("big")
    return "x" * size


TOOLS = [lookup_user, list_orders, broken, big]

PLAN: dict[str, Any] = {
    "reasoning": "Find the user, then list their orders.",
    "steps": [
        {"id": "user", "tool": "lookup_user", "parameters": {"user_id": "ann"}},
        {"id": "orders", "tool": "list_orders", "parameters": {"email": "{{user.email}}"}},
    ],
    "outputSteps": ["orders"],
}


class Scripted(ToolCallingFake):
    """Answers from a script and records every list of messages it was called with."""

    seen: list[list[BaseMessage]] = []


def plan_call(plan: Any, call_id: str = "call_1") -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "execute_plan", "args": {"plan": plan}, "id": call_id}]
    )


def scripted(*replies: AIMessage) -> Scripted:
    Scripted.seen = []
    return Scripted(messages=iter(replies))


@pytest.fixture(autouse=True)
def _reset_calls() -> Iterator[None]:
    CALLS.clear()
    yield


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "toolplan.db")
    yield store
    store.close()


@pytest.fixture
def meta(store: SqliteStore) -> PlanTool:
    return plan_tool(TOOLS, store=store, settings=Settings(store_uri=store.uri))


def react_agent(model: Any, tools: list[Any]) -> Any:
    with pytest.warns(DeprecationWarning):  # moved to langchain.agents, still supported
        return create_react_agent(model, tools)


def langchain_agent(model: Any, tools: list[Any]) -> Any:
    return create_agent(model, tools)


AGENTS: dict[str, Callable[[Any, list[Any]], Any]] = {
    "create_react_agent": react_agent,
    "create_agent": langchain_agent,
}


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def plans_stored(store: SqliteStore) -> int:
    return int(store._query("SELECT COUNT(*) AS n FROM tp_plans")[0]["n"])


# -- in agents -----------------------------------------------------------------------------------


@pytest.mark.parametrize("builder", AGENTS.values(), ids=list(AGENTS))
async def test_one_plan_call_then_an_answer(
    builder: Any, meta: PlanTool, store: SqliteStore
) -> None:
    model = scripted(plan_call(PLAN), AIMessage(content="Ann has two orders."))
    agent = builder(model, [*TOOLS, meta])
    state = await agent.ainvoke({"messages": [HumanMessage("What did ann order?")]})

    assert len(Scripted.seen) == 2  # the plan, then the answer: no round-trip per tool
    assert CALLS == ["lookup_user", "list_orders"]
    assert state["messages"][-1].content == "Ann has two orders."
    (message,) = tool_messages(state)
    assert message.name == "execute_plan" and message.status == "success"

    artifact = message.artifact
    assert artifact["status"] == "succeeded"
    assert store.get_plan(artifact["planId"]) is not None
    assert store.get_request(artifact["requestId"]) is not None
    user, orders = artifact["steps"]
    assert user["output"]["internal"] == SECRET  # raw outputs are kept in the artifact
    assert orders["resolvedParameters"] == {"email": "ann@example.test"}
    for step in artifact["steps"]:
        assert step["status"] == "succeeded" and step["durationMs"] is not None
        assert step["startedAt"] and step["finishedAt"]
    assert artifact["outputs"] == {"orders": orders["output"]}
    assert artifact["plan"]["outputSteps"] == ["orders"]

    assert message.content == (
        f"Plan {artifact['planId']} succeeded: 2 of 2 steps succeeded.\n"
        "Outputs:\n"
        "- orders (list_orders): succeeded\n"
        '  [{"order": "o-1", "total": 10}, {"order": "o-2", "total": 25}]'
    )
    # What the model received on its second call, in the provider's wire format.
    second = json.dumps(convert_to_openai_messages(Scripted.seen[1]))
    assert message.content.replace("\n", "\\n").replace('"', '\\"') in second
    assert SECRET not in second and "ann@example.test" not in second


async def test_over_the_wire_the_model_never_sees_intermediate_outputs(
    meta: PlanTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_openai import ChatOpenAI

    with FakeOpenAIServer(api_key="sk-test") as server:
        server.script(
            [Reply.tool_call("execute_plan", {"plan": PLAN}), Reply.content("Two orders.")]
        )
        model = ChatOpenAI(base_url=server.base_url, api_key="sk-test", model="gpt-4o-mini")  # type: ignore[arg-type]
        state = await create_agent(model, [*TOOLS, meta]).ainvoke(
            {"messages": [HumanMessage("orders?")]}
        )
        first, second = server.requests
    assert state["messages"][-1].content == "Two orders."
    sent_tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert sent_tools["execute_plan"]["parameters"] == PLAN_ARGUMENT_SCHEMA
    assert set(sent_tools) == {"lookup_user", "list_orders", "broken", "big", "execute_plan"}
    tool_turn = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_turn["content"].startswith("Plan plan_") and "o-2" in tool_turn["content"]
    assert SECRET not in json.dumps(second)


async def test_an_invalid_plan_is_an_error_the_agent_can_fix(
    meta: PlanTool, store: SqliteStore
) -> None:
    bad = {"steps": [{"id": "user", "tool": "lookup_usr", "parameters": {}}]}
    model = scripted(
        plan_call(bad, "call_1"), plan_call(PLAN, "call_2"), AIMessage(content="Done.")
    )
    state = await create_agent(model, [*TOOLS, meta]).ainvoke(
        {"messages": [HumanMessage("orders?")]}
    )

    assert len(Scripted.seen) == 3
    rejected, accepted = tool_messages(state)
    assert rejected.status == "error" and rejected.artifact is None
    assert rejected.content == (
        "The plan was rejected and nothing ran (1 problem(s)):\n"
        "- step 'user': unknown tool 'lookup_usr'; did you mean 'lookup_user'?\n"
        "Fix the plan and call execute_plan again."
    )
    assert accepted.status == "success"
    assert plans_stored(store) == 1 and CALLS == ["lookup_user", "list_orders"]


async def test_validation_reports_every_problem_and_runs_nothing(
    meta: PlanTool, store: SqliteStore
) -> None:
    bad = {
        "steps": [
            {"id": "user", "tool": "lookup_user", "parameters": {"userid": "ann"}},
            {"id": "orders", "tool": "list_orders", "parameters": {"email": "{{usr.email}}"}},
        ]
    }
    message = await meta.ainvoke(plan_call(bad).tool_calls[0])
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert "(3 problem(s))" in message.content
    assert "missing required argument 'user_id' for tool 'lookup_user'" in message.content
    assert "unknown argument 'userid'" in message.content
    assert "references unknown step 'usr'" in message.content
    assert CALLS == [] and plans_stored(store) == 0


async def test_a_plan_calling_execute_plan_is_rejected(meta: PlanTool, store: SqliteStore) -> None:
    recursive = {"steps": [{"id": "inner", "tool": "execute_plan", "parameters": {"plan": PLAN}}]}
    message = await meta.ainvoke(plan_call(recursive).tool_calls[0])
    assert message.status == "error"
    assert (
        "step 'inner' calls 'execute_plan': a plan cannot call the plan executor itself"
        in message.content
    )
    assert "it cannot be a step of one" in message.content
    assert CALLS == [] and plans_stored(store) == 0


async def test_a_json_string_plan_is_accepted(meta: PlanTool) -> None:
    message = await meta.ainvoke(plan_call(json.dumps(PLAN)).tool_calls[0])
    assert message.status == "success" and message.artifact["status"] == "succeeded"
    assert CALLS == ["lookup_user", "list_orders"]


async def test_json_string_parameters_and_a_missing_wrapper_are_accepted(meta: PlanTool) -> None:
    steps = [{"id": "user", "tool": "lookup_user", "parameters": '{"user_id": "bo"}'}]
    call = {"name": "execute_plan", "args": {"steps": steps}, "id": "c", "type": "tool_call"}
    message = await meta.ainvoke(call)
    assert message.status == "success"
    assert message.artifact["steps"][0]["resolvedParameters"] == {"user_id": "bo"}


async def test_a_plan_string_that_is_not_json_is_reported(meta: PlanTool) -> None:
    message = await meta.ainvoke(plan_call('{"steps": [').tool_calls[0])
    assert message.status == "error" and "the plan string is not valid JSON" in message.content


async def test_long_outputs_are_truncated_for_the_model_only(store: SqliteStore) -> None:
    meta = plan_tool(TOOLS, store=store, output_limit=50)
    plan = {"steps": [{"id": "blob", "tool": "big", "parameters": {"size": 5000}}]}
    message = await meta.ainvoke(plan_call(plan).tool_calls[0])
    line = message.content.splitlines()[-1]
    assert line == "  " + "x" * 50 + "… [truncated: 5000 characters in total]"
    assert len(message.content) < 300
    assert message.artifact["steps"][0]["output"] == "x" * 5000


async def test_failures_and_skips_are_reported_and_independent_steps_still_run(
    store: SqliteStore,
) -> None:
    fast = Settings(
        store_uri=store.uri, execution=ExecutionOptions(retry=RetryPolicy(max_attempts=1))
    )
    meta = plan_tool(TOOLS, store=store, settings=fast)
    plan = {
        "steps": [
            {"id": "down", "tool": "broken", "parameters": {"reason": "db offline"}},
            {"id": "after", "tool": "list_orders", "parameters": {"email": "{{down.email}}"}},
            {"id": "user", "tool": "lookup_user", "parameters": {"user_id": "cy"}},
        ],
        "outputSteps": ["after", "user"],
    }
    message = await meta.ainvoke(plan_call(plan).tool_calls[0])
    assert message.status == "success"  # the tool ran; the plan itself partly failed
    lines = message.content.splitlines()
    assert lines[0].endswith("partial: 1 of 3 steps succeeded.")
    assert "- after (list_orders): skipped: skipped because dependency 'down' failed" in lines
    assert "- user (lookup_user): succeeded" in lines
    assert "Other steps that did not succeed:" in lines
    assert "- down (broken): failed: tool 'broken' raised ConnectionError: db offline" in lines
    assert message.artifact["status"] == "partial"


def test_sync_invocation_without_a_running_loop(meta: PlanTool) -> None:
    message = meta.invoke(plan_call(PLAN).tool_calls[0])
    assert message.status == "success" and CALLS == ["lookup_user", "list_orders"]


async def test_sync_invocation_inside_a_running_loop(meta: PlanTool) -> None:
    message = meta.invoke(plan_call(PLAN).tool_calls[0])
    assert message.status == "success"


def test_the_store_comes_from_settings_and_opens_lazily(tmp_path: Path) -> None:
    path = tmp_path / "lazy.db"  # in a folder that exists: one that does not is refused
    meta = plan_tool(TOOLS, settings=Settings(store_uri=f"sqlite:///{path}"))
    assert not path.exists()
    message = meta.invoke(plan_call(PLAN).tool_calls[0])
    assert message.status == "success" and path.exists()
    store = SqliteStore(path)
    assert store.get_plan(message.artifact["planId"]) is not None
    store.close()
    meta.close()


def test_schema_the_model_sees(meta: PlanTool, store: SqliteStore) -> None:
    function = convert_to_openai_tool(meta)["function"]
    assert function["name"] == "execute_plan"
    assert function["parameters"] == PLAN_ARGUMENT_SCHEMA
    assert "$ref" not in json.dumps(function) and "null" not in json.dumps(function["parameters"])
    step_fields = set(
        PLAN_ARGUMENT_SCHEMA["properties"]["plan"]["anyOf"][0]["properties"]["steps"]["items"][
            "properties"
        ]
    )
    aliases = {f.alias or name for name, f in Step.model_fields.items()}
    assert step_fields <= aliases
    strict = plan_tool(TOOLS, store=store, plan_format="string")
    assert convert_to_openai_tool(strict)["function"]["parameters"] == PLAN_STRING_SCHEMA
    assert strict.invoke(plan_call(json.dumps(PLAN)).tool_calls[0]).status == "success"


def test_description_prompt_lists_the_tools() -> None:
    text = describe_tools(ToolCatalog(TOOLS))
    assert "- lookup_user(user_id): Look up a user by ID." in text
    assert "- big(size): Return `size` characters." in text
    assert "$tools" not in text and "{{user.email}}" in text


def test_the_tool_list_may_include_the_meta_tool_itself(meta: PlanTool, store: SqliteStore) -> None:
    again = plan_tool([*TOOLS, meta], store=store)
    assert "execute_plan" not in again.catalog and "lookup_user" in again.catalog
    with pytest.raises(InvalidInput):
        plan_tool(TOOLS, store=store, output_limit=0)


def test_the_example_script_runs_offline(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "agent_with_plan_tool.py"
    env = {**os.environ, "TOOLPLAN_STORE": f"sqlite:///{tmp_path / 'tp.db'}"}
    env.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "LLM calls: 2" in done.stdout
    assert '- comparison (compare_data): succeeded\n  {"warmer": "Tokyo"' in done.stdout
