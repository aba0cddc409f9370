"""Approval gates end to end through the CLI: a step that needs a person waits (exit 4) while
the rest runs; ``toolplan approve`` from another process calls the tool once, with the arguments
shown; ``toolplan deny`` skips its dependents; ``"approval": true``, ``--approve-all``, and a
decision on nothing waiting (exit 2).

``wire_money`` (tests/support/tools.py) is tagged ``approval`` and logs each call with its
arguments. Every CLI case of the issue's contract runs on SQLite and on MongoDB
(``ON_BOTH_STORES``); the worker and agent cases on SQLite. What each store does with waiting steps and decisions is
the conformance suite's (toolplan_conformance.approvals).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import ON_BOTH_STORES, Cli
from toolplan.engine.approval import current_user, fingerprint

pytestmark = [pytest.mark.e2e]

WIRE_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "account", "tool": "echo", "parameters": {"value": {"iban": "NO12"}}},
        {
            "id": "pay",
            "tool": "wire_money",
            "parameters": {"to": "{{account.iban}}", "amount": 50},
        },
        {"id": "receipt", "tool": "echo", "parameters": {"value": "{{pay.sent}}"}},
        {"id": "report", "tool": "text", "parameters": {"value": "independent"}},
    ]
}
"""``pay`` waits once ``account`` resolved its arguments; ``receipt`` waits with it; ``report``
does not depend on it and finishes."""


def _waiting(cli: Cli, plan: dict[str, Any] = WIRE_PLAN) -> tuple[str, dict[str, Any]]:
    """Run ``plan`` until it waits: its plan ID and ``--json`` result."""
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 4, done.stderr
    result = done.json()
    plan_id: str = result["planId"]
    return plan_id, result


def _statuses(result: dict[str, Any]) -> dict[str, str]:
    return {step["id"]: step["status"] for step in result["steps"]}


def _calls_of(cli: Cli, step: str) -> list[dict[str, Any]]:
    return [call for call in cli.calls() if call["step"] == step]


@ON_BOTH_STORES
def test_a_step_waits_with_its_arguments_while_independent_steps_finish(cli: Cli) -> None:
    plan_id, result = _waiting(cli)
    assert result["status"] == "waiting"
    assert _statuses(result) == {
        "account": "succeeded",
        "pay": "waiting_approval",
        "receipt": "pending",
        "report": "succeeded",
    }
    pay = next(step for step in result["steps"] if step["id"] == "pay")
    assert pay["resolvedParameters"] == {"to": "NO12", "amount": 50}
    assert _calls_of(cli, "pay") == []
    # the human output says what waits and how to decide
    again = cli("execute", plan_id, "--no-input")
    assert again.code == 4, again.stderr
    assert 'waiting for approval: pay → wire_money(to="NO12", amount=50)' in again.stdout
    assert f"toolplan approve {plan_id}" in again.stdout
    assert f"toolplan deny {plan_id} pay --reason TEXT" in again.stdout
    assert "waits for approval to call wire_money" in again.stderr
    assert _calls_of(cli, "pay") == []


@ON_BOTH_STORES
def test_approve_from_another_process_calls_the_tool_once_with_the_shown_arguments(
    cli: Cli,
) -> None:
    plan_id, _ = _waiting(cli)
    done = cli.subprocess("approve", plan_id, "pay", "--by", "ada", "--json")
    assert done.code == 0, done.stderr
    result = done.json()
    assert result["status"] == "succeeded"
    assert all(status == "succeeded" for status in _statuses(result).values())
    [call] = _calls_of(cli, "pay")
    assert (call["to"], call["amount"]) == ("NO12", 50)
    assert len(_calls_of(cli, "report")) == 1  # the independent step is not called again
    pay = next(step for step in result["steps"] if step["id"] == "pay")
    assert pay["decision"]["decision"] == "approved" and pay["decision"]["by"] == "ada"
    shown = cli("show", plan_id)
    assert shown.code == 0, shown.stderr
    assert "approved by ada at" in shown.stdout


@ON_BOTH_STORES
def test_deny_records_the_reason_and_skips_the_dependents(cli: Cli) -> None:
    plan_id, _ = _waiting(cli)
    done = cli("deny", plan_id, "pay", "--reason", "wrong account", "--by", "bob", "--json")
    assert done.code == 1, done.stderr
    result = done.json()
    assert result["status"] == "partial"
    assert _statuses(result) == {
        "account": "succeeded",
        "pay": "denied",
        "receipt": "skipped",
        "report": "succeeded",
    }
    steps = {step["id"]: step for step in result["steps"]}
    assert steps["pay"]["error"] == "denied by bob: wrong account"
    assert steps["pay"]["decision"]["reason"] == "wrong account"
    assert steps["receipt"]["error"] == "skipped because dependency 'pay' was denied"
    assert _calls_of(cli, "pay") == []
    shown = cli("show", plan_id)
    assert "denied by bob at" in shown.stdout and "wrong account" in shown.stdout


@ON_BOTH_STORES
def test_approval_true_in_the_plan_gates_an_untagged_tool(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "note", "tool": "text", "parameters": {"value": "hi"}, "approval": True},
        ]
    }
    plan_id, result = _waiting(cli, plan)
    assert _statuses(result) == {"note": "waiting_approval"}
    assert _calls_of(cli, "note") == []
    done = cli("approve", plan_id)
    assert done.code == 0, done.stderr
    assert len(_calls_of(cli, "note")) == 1


@ON_BOTH_STORES
def test_approve_all_runs_every_step_without_waiting(cli: Cli) -> None:
    done = cli("run", "--file", cli.write_plan(WIRE_PLAN), "--approve-all", "--json")
    assert done.code == 0, done.stderr
    assert done.json()["status"] == "succeeded"
    assert len(_calls_of(cli, "pay")) == 1
    # every call of a gated tool has its decision on record: who, when, how
    pay = next(step for step in done.json()["steps"] if step["id"] == "pay")
    decision = pay["decision"]
    assert (decision["decision"], decision["via"]) == ("approved", "approveAll")
    assert decision["by"] == current_user() and decision["at"]
    assert decision["fingerprint"] == fingerprint("wire_money", {"to": "NO12", "amount": 50})
    ungated = next(step for step in done.json()["steps"] if step["id"] == "report")
    assert ungated.get("decision") is None


@ON_BOTH_STORES
def test_approve_all_on_a_waiting_plan_records_its_decision(cli: Cli) -> None:
    plan_id, _ = _waiting(cli)
    done = cli("execute", plan_id, "--approve-all", "--json")
    assert done.code == 0, done.stderr
    pay = next(step for step in done.json()["steps"] if step["id"] == "pay")
    assert pay["decision"]["via"] == "approveAll" and pay["decision"]["by"] == current_user()
    assert len(_calls_of(cli, "pay")) == 1
    shown = cli("show", plan_id)
    assert "approved by" in shown.stdout


@ON_BOTH_STORES
def test_deciding_on_something_not_waiting_changes_nothing(cli: Cli) -> None:
    plan_id, _ = _waiting(cli)
    not_waiting = cli("approve", plan_id, "report", "--json")
    assert not_waiting.code == 2
    error = not_waiting.json()
    assert "'report'" in error["error"] and "not waiting for approval" in error["error"]
    assert error["status"] == "succeeded" and error["exitCode"] == 2
    unknown = cli("deny", plan_id, "nope", "--reason", "x")
    assert unknown.code == 2 and "no step 'nope'" in unknown.stderr
    assert cli("approve", plan_id).code == 0
    finished = cli("approve", plan_id)
    assert finished.code == 2
    assert "already finished (succeeded)" in finished.stderr
    assert "nothing changed" in finished.stderr
    denied_late = cli("deny", plan_id, "pay", "--reason", "too late")
    assert denied_late.code == 2
    assert len(_calls_of(cli, "pay")) == 1


@ON_BOTH_STORES
def test_workers_run_until_a_step_waits_and_an_approval_requeues_it(cli: Cli) -> None:
    submitted = cli("submit", "--file", cli.write_plan(WIRE_PLAN), "--json")
    plan_id = submitted.json()["planId"]
    assert cli("execute", plan_id, "--enqueue").code == 0
    first = cli("worker", "--once", "--json")
    assert first.code == 0, first.stderr
    shown = cli("show", plan_id, "--json").json()["execution"]
    assert shown["status"] == "waiting"
    assert _statuses(shown)["pay"] == "waiting_approval"
    assert cli("worker", "--once").code == 0  # a waiting execution is not claimed
    assert _calls_of(cli, "pay") == []

    approved = cli("approve", plan_id, "--enqueue", "--by", "ada", "--json")
    assert approved.code == 0, approved.stderr
    assert approved.json()["status"] == "queued"
    assert _statuses(approved.json())["pay"] == "pending"
    second = cli("worker", "--once")
    assert second.code == 0, second.stderr
    final = cli("show", plan_id, "--json").json()["execution"]
    assert final["status"] == "succeeded"
    [call] = _calls_of(cli, "pay")
    assert (call["to"], call["amount"]) == ("NO12", 50)


def test_the_agent_stops_without_an_answer_while_a_step_waits(cli_llm: Cli, llm: Any) -> None:
    from tests.support.fake_openai import Reply
    from tests.support.plans import llm_step

    plan = {
        "reasoning": "one transfer",
        "steps": [llm_step("pay", "wire_money", {"to": "NO12", "amount": 5})],
        "outputSteps": ["pay"],
    }
    llm.script([Reply.structured(plan, usage=(100, 20))])
    done = cli_llm("run", "send 5 to account NO12")
    assert done.code == 4, done.stderr
    assert 'waiting for approval: pay → wire_money(to="NO12", amount=5)' in done.stdout
    assert "answer:" not in done.stdout
    assert len(llm.requests) == 1  # no respond call, no replan
    assert _calls_of(cli_llm, "pay") == []
