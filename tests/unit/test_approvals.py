"""Approval gates in-process: which steps wait, the waiting state, decisions and continuing."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool

from tests.support import tools as test_tools
from toolplan.client import AsyncToolplan
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.approval import fingerprint, needs_approval
from toolplan.engine.recorder import StepEvent
from toolplan.errors import InvalidInput, NotWaiting
from toolplan.plan_format.plan import Step
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog, load_tool_modules

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=5)

WIRE_ARGS = {"to": "NO12", "amount": 50}

WIRE_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "account", "tool": "echo", "parameters": {"value": {"iban": "NO12"}}},
        {
            "id": "pay",
            "tool": "wire_money",
            "parameters": {"to": "{{account.iban}}", "amount": 50},
        },
        {"id": "receipt", "tool": "echo", "parameters": {"value": "{{pay.sent}}"}},
        {"id": "other", "tool": "sleepy", "parameters": {"label": "independent"}},
    ]
}


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


def calls(log: Path, step: str | None = None) -> list[dict[str, Any]]:
    lines = log.read_text().splitlines() if log.exists() else []
    found = [json.loads(line) for line in lines]
    return [c for c in found if step is None or c["step"] == step]


def catalog() -> ToolCatalog:
    return load_tool_modules(["tests.support.tools"])


@pytest.fixture
def client(tmp_path: Path) -> AsyncToolplan:
    store = SqliteStore(tmp_path / "toolplan.db")
    return AsyncToolplan(store=store, tools=catalog())


async def submit(client: AsyncToolplan, plan: dict[str, Any]) -> str:
    return (await client.submit(plan)).plan_id


def test_which_steps_wait() -> None:
    plain = Step(id="a", tool="echo", parameters={})
    assert not needs_approval(plain, test_tools.echo)
    assert needs_approval(plain.model_copy(update={"approval": True}), test_tools.echo)
    assert needs_approval(Step(id="w", tool="wire_money", parameters={}), test_tools.wire_money)
    # a plan cannot lift a tool's own gate
    no = Step(id="w", tool="wire_money", parameters={}, approval=False)
    assert needs_approval(no, test_tools.wire_money)

    @tool
    def drop_table(name: str) -> str:
        """Drop a table."""
        return name

    drop_table.metadata = {"destructiveHint": True, "mcp_server": "db"}  # as MCP adapters map it
    assert needs_approval(plain, drop_table)
    drop_table.metadata = {"destructiveHint": False}
    assert not needs_approval(plain, drop_table)


def test_the_fingerprint_names_the_tool_and_the_exact_arguments() -> None:
    base = fingerprint("wire_money", {"to": "NO12", "amount": 50})
    assert base == fingerprint("wire_money", {"amount": 50, "to": "NO12"})  # key order
    assert base != fingerprint("wire_money", {"to": "NO12", "amount": 51})
    assert base != fingerprint("other", {"to": "NO12", "amount": 50})


async def test_a_gated_step_waits_with_its_resolved_arguments_while_others_run(
    client: AsyncToolplan, log: Path
) -> None:
    events: list[StepEvent] = []
    plan_id = await submit(client, WIRE_PLAN)
    result = await client.execute(plan_id, on_event=events.append, options=FAST)
    assert result.status == "waiting" and result.exit_code == 4
    statuses = {step.step_id: step.status for step in result.steps}
    assert statuses == {
        "account": "succeeded",
        "pay": "waiting_approval",
        "receipt": "pending",
        "other": "succeeded",
    }
    assert result.step("pay").resolved_parameters == {"to": "NO12", "amount": 50}
    assert [s.step_id for s in result.waiting] == ["pay"]
    assert calls(log, "pay") == []
    [waiting] = [e for e in events if e.kind == "waiting"]
    assert (waiting.step_id, waiting.arguments) == ("pay", {"to": "NO12", "amount": 50})
    assert waiting.to_json()["arguments"] == {"to": "NO12", "amount": 50}
    stored = client.store.get_execution(plan_id)
    assert stored is not None and stored.status == "waiting"
    assert stored.finished_at is None and stored.worker_id is None
    # executing it again asks again: nothing is called, it still waits
    again = await client.execute(plan_id, options=FAST)
    assert again.status == "waiting" and calls(log, "pay") == []


async def test_approve_calls_the_tool_once_with_the_shown_arguments(
    client: AsyncToolplan, log: Path
) -> None:
    plan_id = await submit(client, WIRE_PLAN)
    await client.execute(plan_id, options=FAST)
    result = await client.approve(plan_id, by="ada", options=FAST)
    assert result.status == "succeeded" and result.exit_code == 0
    [call] = calls(log, "pay")
    assert (call["to"], call["amount"]) == ("NO12", 50)
    pay = result.step("pay")
    assert pay.decision is not None
    assert (pay.decision.kind, pay.decision.by) == ("approved", "ada")
    assert pay.decision.fingerprint == fingerprint("wire_money", {"to": "NO12", "amount": 50})
    assert result.step("receipt").output == 50
    assert len([c for c in calls(log, "other") if c["event"] == "start"]) == 1  # not run again
    with pytest.raises(NotWaiting, match="already finished"):
        await client.approve(plan_id)


async def test_an_approval_for_other_arguments_asks_again(client: AsyncToolplan, log: Path) -> None:
    plan_id = await submit(client, WIRE_PLAN)
    await client.execute(plan_id, options=FAST)
    client.store.update_step(plan_id, "pay", {"resolved_parameters": {"to": "XX", "amount": 9}})
    result = await client.approve(plan_id, ["pay"], options=FAST)  # approves {"to": "XX", ...}
    assert result.status == "waiting" and calls(log, "pay") == []
    pay = result.step("pay")
    assert pay.resolved_parameters == {"to": "NO12", "amount": 50} and pay.decision is None


async def test_deny_records_the_reason_and_skips_dependents(
    client: AsyncToolplan, log: Path
) -> None:
    plan_id = await submit(client, WIRE_PLAN)
    await client.execute(plan_id, options=FAST)
    result = await client.deny(plan_id, "pay", "wrong account", by="bob", options=FAST)
    assert result.status == "partial" and result.exit_code == 1
    pay = result.step("pay")
    assert pay.status == "denied" and pay.error == "denied by bob: wrong account"
    assert pay.decision is not None and pay.decision.reason == "wrong account"
    receipt = result.step("receipt")
    assert receipt.status == "skipped"
    assert receipt.error == "skipped because dependency 'pay' was denied"
    assert calls(log, "pay") == []


async def test_deciding_on_nothing_waiting_changes_nothing(client: AsyncToolplan) -> None:
    plan_id = await submit(client, WIRE_PLAN)
    with pytest.raises(NotWaiting, match="never executed"):
        await client.approve(plan_id)
    await client.execute(plan_id, options=FAST)
    with pytest.raises(NotWaiting, match=r"'other' .* not waiting .* succeeded"):
        await client.approve(plan_id, ["other"])
    with pytest.raises(InvalidInput, match="no step 'nope'"):
        await client.approve(plan_id, ["nope"])
    with pytest.raises(InvalidInput, match="needs a reason"):
        await client.deny(plan_id, "pay", "  ")
    stored = client.store.get_execution(plan_id)
    assert stored is not None and stored.step("pay").status == "waiting_approval"


async def test_approval_true_in_the_plan_gates_an_untagged_tool(
    client: AsyncToolplan, log: Path
) -> None:
    plan = {"steps": [{"id": "e", "tool": "echo", "parameters": {"value": 1}, "approval": True}]}
    plan_id = await submit(client, plan)
    result = await client.execute(plan_id, options=FAST)
    assert result.status == "waiting" and calls(log, "e") == []
    assert (await client.approve(plan_id, ["e"], options=FAST)).status == "succeeded"
    assert len(calls(log, "e")) == 1


async def test_approve_all_preapproves_every_step(client: AsyncToolplan, log: Path) -> None:
    plan_id = await submit(client, WIRE_PLAN)
    result = await client.execute(plan_id, options=replace(FAST, approve_all=True))
    assert result.status == "succeeded" and len(calls(log, "pay")) == 1


async def test_a_gated_foreach_waits_once_with_every_items_arguments(
    client: AsyncToolplan, log: Path
) -> None:
    plan = {
        "steps": [
            {
                "id": "pay",
                "tool": "wire_money",
                "forEach": ["A1", "B2"],
                "parameters": {"to": "{{$item}}", "amount": 5},
            }
        ]
    }
    plan_id = await submit(client, plan)
    result = await client.execute(plan_id, options=FAST)
    assert result.status == "waiting"
    assert result.step("pay").resolved_parameters == [
        {"to": "A1", "amount": 5},
        {"to": "B2", "amount": 5},
    ]
    done = await client.approve(plan_id, options=FAST)
    assert done.status == "succeeded"
    assert sorted(c["to"] for c in calls(log, "pay")) == ["A1", "B2"]


async def test_ask_approves_or_denies_each_waiting_step(client: AsyncToolplan, log: Path) -> None:
    plan_id = await submit(client, WIRE_PLAN)
    result = await client.execute(plan_id, options=FAST)
    asked: list[str] = []

    def no(step: Any) -> bool:
        asked.append(step.step_id)
        return False

    denied = await client.ask(result, no, by="carol", options=FAST)
    assert asked == ["pay"] and denied.status == "partial"
    assert denied.step("pay").error == "denied by carol: declined at the prompt"
    assert calls(log, "pay") == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("typed", "answer"), [("y\n", True), ("\n", False), ("", None)])
def test_the_terminal_prompt_shows_the_call_and_defaults_to_no(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    typed: str,
    answer: bool | None,
) -> None:
    from toolplan.cli.session import approval_prompt
    from toolplan.store.protocol import StepRecord

    step = StepRecord("pay", "wire_money", "waiting_approval", resolved_parameters=WIRE_ARGS)
    monkeypatch.setattr(sys, "stdin", _Terminal(typed))
    assert approval_prompt(no_input=True, as_json=False) is None
    assert approval_prompt(no_input=False, as_json=True) is None
    ask = approval_prompt(no_input=False, as_json=False)
    assert ask is not None
    assert ask(step) is answer
    assert 'Call wire_money(to="NO12", amount=50)? [y/N]' in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: never asks
    assert approval_prompt(no_input=False, as_json=False) is None


async def test_the_python_api_approves_and_denies_by_plan_and_step(
    tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolplan

    monkeypatch.setenv("TOOLPLAN_TOOLS", "tests.support.tools")
    store = f"sqlite:///{tmp_path / 'api.db'}"
    waiting = await toolplan.run_plan(WIRE_PLAN, store=store)
    assert waiting.status == "waiting" and waiting.exit_code == 4
    done = await toolplan.approve_steps(waiting.plan_id, store=store, by="ada")
    assert done.status == "succeeded" and len(calls(log, "pay")) == 1
    with pytest.raises(toolplan.NotWaiting):
        await toolplan.deny_step(waiting.plan_id, "pay", "too late", store=store)

    second = await toolplan.run_plan(WIRE_PLAN, store=store)
    denied = await toolplan.deny_step(second.plan_id, "pay", "no", store=store, by="bob")
    assert denied.step("pay").status == "denied" and len(calls(log, "pay")) == 1
    direct = await toolplan.run_plan(WIRE_PLAN, store=store, approve_all=True)
    assert direct.status == "succeeded" and len(calls(log, "pay")) == 2
