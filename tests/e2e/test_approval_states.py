"""Decisions are all or nothing, and ``toolplan show`` always names a command that works, through
the real CLI on SQLite and on MongoDB (issue 52).

- ``toolplan approve`` or ``deny`` in a process that cannot continue the execution (the plan's
  recorded tool module is not importable there, or the tools named lack one the plan calls)
  records nothing: it exits as before (3, or 2), says that nothing was decided and how to fix
  it, and the step still waits; approved where the tools are, the plan runs.
- Every state ``show`` prints (plan never run, needs review, queued, interrupted, cancelled,
  waiting, decided but not continued, finished) names the command that moves it on, and that
  command works; a finished plan names none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import ON_BOTH_STORES, REPO, Cli
from toolplan.plan_format.plan import parse_plan
from toolplan.runs.approvals import approve_steps
from toolplan.service.operations import store_plan
from toolplan.store import Store, open_store
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

pytestmark = [pytest.mark.e2e]

GATED_TOOLS = '''
"""A user's tools: ``pay`` waits for a person's approval; importable only where this folder is
on PYTHONPATH."""
import json, os

from toolplan import tagged


def pay(to: str, amount: float) -> dict:
    """Send amount to the account to (a side effect a person approves)."""
    with open(os.environ["TOOLPLAN_TEST_LOG"], "a") as log:
        log.write(json.dumps({"step": "pay", "to": to, "amount": amount}) + "\\n")
    return {"sent": amount, "to": to}


def note(text: str) -> str:
    """Return the text."""
    return text


pay = tagged(pay, "approval")
TOOLS = [pay, note]
'''

USER_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "account", "tool": "note", "parameters": {"text": "NO12"}},
        {"id": "pay", "tool": "pay", "parameters": {"to": "{{account}}", "amount": 50}},
        {"id": "receipt", "tool": "note", "parameters": {"text": "{{pay.to}}"}},
    ]
}

WIRE_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "account", "tool": "echo", "parameters": {"value": {"iban": "NO12"}}},
        {"id": "pay", "tool": "wire_money", "parameters": {"to": "{{account.iban}}", "amount": 5}},
        {"id": "receipt", "tool": "echo", "parameters": {"value": "{{pay.sent}}"}},
    ]
}
"""With the suite's tools (tests/support/tools.py): ``pay`` waits for approval."""


@pytest.fixture
def store(cli: Cli) -> Iterator[Store]:
    opened = open_store(cli.env["TOOLPLAN_STORE"])
    yield opened
    opened.close()


def _user(cli: Cli) -> Cli:
    """``cli`` with no tools chosen, whose PYTHONPATH has the user's module ``tp_gated_tools``."""
    modules = cli.tmp / "user_modules"
    modules.mkdir()
    (modules / "tp_gated_tools.py").write_text(GATED_TOOLS)
    del cli.env["TOOLPLAN_TOOLS"]
    cli.env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(modules)])
    return cli


def _lacking(cli: Cli) -> Cli:
    """The same store and folder, in a shell where the user's module cannot be imported."""
    other = Cli(cli.tmp, store_uri=cli.env["TOOLPLAN_STORE"])
    other.env = {**cli.env, "PYTHONPATH": str(REPO)}
    return other


def _waiting_user_plan(cli: Cli) -> str:
    ran = cli("run", "--file", cli.write_plan(USER_PLAN), "--tools", "tp_gated_tools", "--json")
    assert ran.code == 4, ran.stderr
    plan_id: str = ran.json()["planId"]
    return plan_id


def _step(cli: Cli, plan_id: str, step_id: str) -> dict[str, Any]:
    shown = cli("show", plan_id, "--json")
    assert shown.code == 0, shown.stderr
    steps = {step["id"]: step for step in shown.json()["execution"]["steps"]}
    return steps[step_id]


def _payments(cli: Cli) -> list[dict[str, Any]]:
    return [call for call in cli.calls() if call["step"] == "pay"]


# -- a decision the command cannot act on is not recorded ---------------------------------------


@ON_BOTH_STORES
def test_approve_where_the_tools_cannot_load_records_nothing(cli: Cli) -> None:
    user = _user(cli)
    plan_id = _waiting_user_plan(user)

    refused = _lacking(user)("approve", plan_id, "--by", "ada")
    assert refused.code == 3, refused.stderr
    assert "cannot load the tools recorded with plan" in refused.stderr
    assert "nothing was decided" in refused.stderr and "the steps still wait" in refused.stderr
    assert "Traceback" not in refused.stderr
    pay = _step(user, plan_id, "pay")
    assert pay["status"] == "waiting_approval" and pay.get("decision") is None
    shown = user("show", plan_id)
    assert f"toolplan approve {plan_id}" in shown.stdout
    assert "approved by" not in shown.stdout
    assert _payments(user) == []

    approved = user("approve", plan_id, "--by", "ada", "--json")  # where the module imports
    assert approved.code == 0, approved.stderr
    assert approved.json()["status"] == "succeeded"
    assert [(call["to"], call["amount"]) for call in _payments(user)] == [("NO12", 50)]


@ON_BOTH_STORES
def test_deny_where_the_tools_cannot_load_records_nothing(cli: Cli) -> None:
    user = _user(cli)
    plan_id = _waiting_user_plan(user)
    refused = _lacking(user)("deny", plan_id, "pay", "--reason", "wrong account", "--json")
    assert refused.code == 3, refused.stderr
    assert "nothing was decided" in refused.json()["error"]
    pay = _step(user, plan_id, "pay")
    assert pay["status"] == "waiting_approval" and pay.get("decision") is None
    denied = user("deny", plan_id, "pay", "--reason", "wrong account")
    assert denied.code == 1, denied.stderr
    assert _step(user, plan_id, "pay")["status"] == "denied"


@ON_BOTH_STORES
def test_approve_with_tools_that_lack_the_plans_records_nothing(cli: Cli) -> None:
    user = _user(cli)
    plan_id = _waiting_user_plan(user)
    refused = user("approve", plan_id, "--tools", "blog")
    assert refused.code == 2, refused.stderr
    assert "unknown tool 'pay'" in refused.stderr and "nothing was decided" in refused.stderr
    assert _step(user, plan_id, "pay")["status"] == "waiting_approval"
    assert user("approve", plan_id).code == 0


# -- every state show prints names a command that works from it ----------------------------------


def _show(cli: Cli, plan_id: str) -> str:
    shown = cli("show", plan_id)
    assert shown.code == 0, shown.stderr
    return shown.stdout


def _commands_named(text: str) -> set[str]:
    """The ``toolplan`` subcommands a text names."""
    return set(re.findall(r"\btoolplan ([a-z]+)\b", text))


def _works(cli: Cli, plan_id: str, command: str, *, shown: str) -> dict[str, Any]:
    """Run ``command`` exactly as ``show`` printed it (the plan ID in it; a placeholder reason
    filled in); it must act (exit 0, 1 or 4), and the plan's execution is returned after it."""
    assert command in shown, f"show does not name {command!r}:\n{shown}"
    words = command.replace("TEXT", "later").split()
    assert words[0] == "toolplan"
    done = cli(*words[1:])
    assert done.code in (0, 1, 4), f"{command!r} exited {done.code}: {done.stderr}"
    after = cli("show", plan_id, "--json").json()["execution"]
    assert after is not None
    return after  # type: ignore[no-any-return]


def _submitted(cli: Cli, plan: dict[str, Any] = WIRE_PLAN) -> str:
    done = cli("submit", "--file", cli.write_plan(plan), "--json")
    assert done.code == 0, done.stderr
    plan_id: str = done.json()["planId"]
    return plan_id


@ON_BOTH_STORES
def test_a_plan_never_run_names_execute(cli: Cli) -> None:
    plan_id = _submitted(
        cli, {"steps": [{"id": "a", "tool": "text", "parameters": {"value": "x"}}]}
    )
    shown = _show(cli, plan_id)
    assert _commands_named(shown) == {"execute"}
    after = _works(cli, plan_id, f"toolplan execute {plan_id}", shown=shown)
    assert after["status"] == "succeeded"


@ON_BOTH_STORES
def test_a_plan_that_needs_review_names_execute_with_yes(cli: Cli, store: Store) -> None:
    # As the planner stores a plan it is unsure of.
    catalog = load_tool_modules(["tests.support.tools"])
    plan = parse_plan({"steps": [{"id": "a", "tool": "text", "parameters": {"value": "x"}}]})
    ref = store_plan(
        plan, analyze(plan, catalog), store=store, catalog=catalog, status="needs_review"
    )
    shown = _show(cli, ref.plan_id)
    assert _commands_named(shown) == {"execute"}
    assert f"toolplan execute {ref.plan_id} --yes" in shown
    assert re.search(rf"toolplan execute {ref.plan_id}(?! --yes)", shown) is None, shown
    after = _works(cli, ref.plan_id, f"toolplan execute {ref.plan_id} --yes", shown=shown)
    assert after["status"] == "succeeded"


@ON_BOTH_STORES
def test_a_queued_plan_names_the_worker(cli: Cli) -> None:
    plan_id = _submitted(cli)
    assert cli("execute", plan_id, "--enqueue").code == 0
    shown = _show(cli, plan_id)
    assert _commands_named(shown) == {"worker"}
    assert "toolplan worker" in shown
    done = cli("worker", "--once")
    assert done.code == 0, done.stderr
    assert cli("show", plan_id, "--json").json()["execution"]["status"] == "waiting"


@ON_BOTH_STORES
def test_an_interrupted_run_names_execute(cli: Cli, store: Store) -> None:
    # What a run killed after it started leaves: its execution running, no live lease.
    plan_id = _submitted(cli)
    store.create_execution(
        plan_id,
        [(step["id"], step["tool"]) for step in WIRE_PLAN["steps"]],
        status="running",
    )
    shown = _show(cli, plan_id)
    assert _commands_named(shown) == {"execute"}
    after = _works(cli, plan_id, f"toolplan execute {plan_id}", shown=shown)
    assert after["status"] == "waiting"


@ON_BOTH_STORES
def test_a_cancelled_plan_names_execute_resume(cli: Cli) -> None:
    plan_id = _submitted(cli)
    assert cli("cancel", plan_id).code in (0, 1)
    shown = _show(cli, plan_id)
    assert _commands_named(shown) == {"execute"}
    after = _works(cli, plan_id, f"toolplan execute {plan_id} --resume", shown=shown)
    assert after["status"] == "waiting"


@ON_BOTH_STORES
def test_a_waiting_plan_names_approve_and_deny_and_both_work(cli: Cli) -> None:
    plan_id = _submitted(cli)
    assert cli("execute", plan_id).code == 4
    shown = _show(cli, plan_id)
    assert _commands_named(shown) == {"approve", "deny"}
    deny = f"toolplan deny {plan_id} pay --reason TEXT"
    assert deny in shown
    after = _works(cli, plan_id, f"toolplan approve {plan_id}", shown=shown)
    assert after["status"] == "succeeded"

    other = _submitted(cli)
    assert cli("execute", other).code == 4
    shown = _show(cli, other)
    after = _works(cli, other, f"toolplan deny {other} pay --reason TEXT", shown=shown)
    assert after["status"] == "partial"


@ON_BOTH_STORES
def test_a_decision_not_continued_names_execute(cli: Cli, store: Store) -> None:
    # What a process that recorded an approval and died before continuing leaves behind.
    plan_id = _submitted(cli)
    assert cli("execute", plan_id).code == 4
    approve_steps(store, plan_id, by="ada")
    shown = _show(cli, plan_id)
    assert _commands_named(shown) == {"execute"}, shown
    again = cli("approve", plan_id)
    assert again.code == 2
    assert f"toolplan execute {plan_id}" in again.stderr  # the refusal says what works
    after = _works(cli, plan_id, f"toolplan execute {plan_id}", shown=shown)
    assert after["status"] == "succeeded"


@ON_BOTH_STORES
def test_a_finished_plan_names_no_command(cli: Cli) -> None:
    plan_id = _submitted(
        cli, {"steps": [{"id": "a", "tool": "text", "parameters": {"value": "x"}}]}
    )
    assert cli("execute", plan_id).code == 0
    failed = _submitted(
        cli, {"steps": [{"id": "b", "tool": "business_error", "parameters": {"message": "no"}}]}
    )
    assert cli("execute", failed).code == 1
    for finished in (plan_id, failed):
        shown = _show(cli, finished)
        assert _commands_named(shown) == set(), shown
        # The plan's own status no longer reads as if it had not run (issue 52, labels).
        assert "plan status: planned (validated and stored; how its latest run went" in shown
