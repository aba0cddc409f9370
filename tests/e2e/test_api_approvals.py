"""Approval gates over the GraphQL API: an execution ``waiting`` with the step's
``pendingArguments``, the ``waiting`` step event, ``approveStep`` / ``denyStep``, ``approveAll``
and ``NOT_WAITING`` (a real server in a thread, as in test_api.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import ApiServer, GraphQLClient, ServerFactory, server_factory
from tests.e2e.test_api import codes, read_events, submit
from toolplan.engine.approval import fingerprint

pytestmark = pytest.mark.e2e

WIRE_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "account", "tool": "echo", "parameters": {"value": {"iban": "NO12"}}},
        {"id": "pay", "tool": "wire_money", "parameters": {"to": "{{account.iban}}", "amount": 5}},
        {"id": "receipt", "tool": "echo", "parameters": {"value": "{{pay.sent}}"}},
        {"id": "report", "tool": "text", "parameters": {"value": "independent"}},
    ]
}
STEPS = "steps { id status error pendingArguments decision { decision by reason fingerprint via } }"
EXECUTE = f"""mutation($id: String!, $all: Boolean, $by: String) {{
  executePlan(planId: $id, approveAll: $all, by: $by) {{ planId status {STEPS} }}
}}"""
APPROVE = f"""mutation($id: String!, $steps: [String!], $by: String) {{
  approveStep(planId: $id, stepIds: $steps, by: $by) {{ status {STEPS} }}
}}"""
DENY = f"""mutation($id: String!, $step: String!, $reason: String!) {{
  denyStep(planId: $id, stepId: $step, reason: $reason, by: "bob") {{ status {STEPS} }}
}}"""
WAITING_EVENTS = """subscription($id: String!) {
  stepEvents(planId: $id) { kind stepId arguments }
}"""


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GraphQLClient]:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOOLPLAN_MODEL"):
        monkeypatch.delenv(name, raising=False)
    factory: Iterator[ServerFactory] = server_factory(tmp_path)
    start = next(factory)
    client = start().client()
    yield client
    client.close()
    factory.close()


def _pay_calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "calls.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return [call for call in map(json.loads, lines) if call["step"] == "pay"]


def _steps(execution: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in execution["steps"]}


def _waiting(client: GraphQLClient) -> str:
    plan_id: str = submit(client, WIRE_PLAN)["planId"]
    execution = client.data(EXECUTE, {"id": plan_id})["executePlan"]
    assert execution["status"] == "waiting"
    steps = _steps(execution)
    assert steps["pay"]["status"] == "waiting_approval"
    assert steps["pay"]["pendingArguments"] == {"to": "NO12", "amount": 5}
    assert steps["report"]["status"] == "succeeded" and steps["receipt"]["status"] == "pending"
    assert steps["report"]["pendingArguments"] is None
    return plan_id


def test_a_waiting_step_shows_its_arguments_and_its_event(
    client: GraphQLClient, tmp_path: Path
) -> None:
    plan_id = _waiting(client)
    events = [p["data"]["stepEvents"] for p in read_events(client, plan_id, query=WAITING_EVENTS)]
    [waiting] = [event for event in events if event["kind"] == "waiting"]
    assert waiting == {"kind": "waiting", "stepId": "pay", "arguments": {"to": "NO12", "amount": 5}}
    assert _pay_calls(tmp_path) == []


def test_approve_step_calls_the_tool_with_the_shown_arguments(
    client: GraphQLClient, tmp_path: Path
) -> None:
    plan_id = _waiting(client)
    done = client.data(APPROVE, {"id": plan_id, "steps": ["pay"], "by": "ada"})["approveStep"]
    assert done["status"] == "succeeded"
    pay = _steps(done)["pay"]
    assert pay["decision"]["decision"] == "approved" and pay["decision"]["by"] == "ada"
    assert pay["decision"]["fingerprint"].startswith("sha256:")
    [call] = _pay_calls(tmp_path)
    assert (call["to"], call["amount"]) == ("NO12", 5)
    again = client.gql(APPROVE, {"id": plan_id})
    assert codes(again) == ["NOT_WAITING"] and "already finished" in again["errors"][0]["message"]


def test_deny_step_skips_the_dependents(client: GraphQLClient, tmp_path: Path) -> None:
    plan_id = _waiting(client)
    not_waiting = client.gql(DENY, {"id": plan_id, "step": "report", "reason": "no"})
    assert codes(not_waiting) == ["NOT_WAITING"]
    done = client.data(DENY, {"id": plan_id, "step": "pay", "reason": "wrong account"})["denyStep"]
    assert done["status"] == "partial"
    steps = _steps(done)
    assert steps["pay"]["status"] == "denied" and steps["pay"]["error"] == (
        "denied by bob: wrong account"
    )
    assert steps["pay"]["decision"]["reason"] == "wrong account"
    assert steps["receipt"]["status"] == "skipped"
    assert _pay_calls(tmp_path) == []


def test_approve_all_runs_without_waiting(client: GraphQLClient, tmp_path: Path) -> None:
    plan_id = submit(client, WIRE_PLAN)["planId"]
    done = client.data(EXECUTE, {"id": plan_id, "all": True})["executePlan"]
    assert done["status"] == "succeeded" and len(_pay_calls(tmp_path)) == 1
    pay = _steps(done)["pay"]
    assert (pay["decision"]["decision"], pay["decision"]["via"]) == ("approved", "approveAll")
    assert pay["decision"]["by"] == "api"  # who, when nobody says: the API, as approveStep's


def test_approve_all_on_a_waiting_plan_records_a_decision(
    client: GraphQLClient, tmp_path: Path
) -> None:
    plan_id = _waiting(client)
    done = client.data(EXECUTE, {"id": plan_id, "all": True, "by": "ops"})["executePlan"]
    assert done["status"] == "succeeded"
    decision = _steps(done)["pay"]["decision"]
    assert decision is not None, "approveAll let a gated step through with no decision on record"
    assert (decision["decision"], decision["by"], decision["via"]) == (
        "approved",
        "ops",
        "approveAll",
    )
    assert decision["fingerprint"] == fingerprint("wire_money", {"to": "NO12", "amount": 5})
    assert len(_pay_calls(tmp_path)) == 1
    assert _steps(done)["report"]["decision"] is None  # only gated steps get one


def test_approve_step_with_an_empty_list_approves_nothing(
    client: GraphQLClient, tmp_path: Path
) -> None:
    plan_id = _waiting(client)
    refused = client.gql(APPROVE, {"id": plan_id, "steps": []})
    assert codes(refused) == ["BAD_USER_INPUT"]
    assert "empty list" in refused["errors"][0]["message"]
    assert _pay_calls(tmp_path) == []
    still = client.data(APPROVE, {"id": plan_id, "steps": None, "by": "ada"})["approveStep"]
    assert still["status"] == "succeeded"  # null still means every waiting step
    assert _steps(still)["pay"]["decision"]["via"] is None


def test_approve_all_checks_who_approves(client: GraphQLClient, tmp_path: Path) -> None:
    plan_id = submit(client, WIRE_PLAN)["planId"]
    refused = client.gql(EXECUTE, {"id": plan_id, "all": True, "by": "x" * 201})
    assert codes(refused) == ["BAD_USER_INPUT"]
    assert "the by argument is 201 characters long" in refused["errors"][0]["message"]
    assert _pay_calls(tmp_path) == []


def test_a_server_without_the_plans_tools_records_no_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Decided in a server that could not continue the execution (its tools lack the plan's),
    # the decision would strand the plan: it is refused, and the step still waits.
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    factory: Iterator[ServerFactory] = server_factory(tmp_path)
    full = next(factory)()
    plan_id = _waiting(full.client())
    lacking = ApiServer(full.store, settings=replace(full.settings, tool_modules=("blog",)))
    lacking.start()
    try:
        for query, variables in (
            (APPROVE, {"id": plan_id}),
            (DENY, {"id": plan_id, "step": "pay", "reason": "no"}),
        ):
            refused = lacking.client().gql(query, variables)
            assert codes(refused) == ["BAD_USER_INPUT"], refused
            message = refused["errors"][0]["message"]
            assert "unknown tool 'wire_money'" in message and "nothing was decided" in message
        pay = _steps(full.client().data(EXECUTE, {"id": plan_id})["executePlan"])["pay"]
        assert pay["status"] == "waiting_approval" and pay["decision"] is None
        done = full.client().data(APPROVE, {"id": plan_id})["approveStep"]
        assert done["status"] == "succeeded"
        assert len(_pay_calls(tmp_path)) == 1
    finally:
        lacking.stop()
        factory.close()
