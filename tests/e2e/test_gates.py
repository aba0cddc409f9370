"""No way around a gate (issue 42, item 1): a ``fallback`` never calls a tool that waits for
approval. A plan that names one is refused at validation, before any tool runs (CLI exit 2, API
``BAD_USER_INPUT``, the planner's repair loop); a plan stored before that check, or written
straight into the store, is refused by the engine at the moment the fallback would run, for a
plain step and for each item of a ``forEach``.

``wire_money`` (tests/support/tools.py) is tagged ``approval`` and logs every call; ``business_error``
always fails, so the fallback is due at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import GraphQLClient, ServerFactory, server_factory
from tests.e2e.conftest import ON_BOTH_STORES, Cli
from tests.e2e.test_api import codes
from toolplan.errors import PlanInvalid
from toolplan.plan_format.ids import new_id
from toolplan.plan_format.plan import Plan
from toolplan.store import open_store
from toolplan.store.protocol import PlanRecord, RequestRecord, utc_now
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

pytestmark = [pytest.mark.e2e]

WIRE_FALLBACK: dict[str, Any] = {
    "steps": [
        {
            "id": "x",
            "tool": "business_error",
            "parameters": {"message": "primary fails"},
            "fallback": {
                "tool": "wire_money",
                "parameters": {"to": "ATTACKER-IBAN", "amount": 1000000},
            },
        }
    ]
}
"""The issue's plan: the step's own tool fails at once, and its fallback wires money."""

WIRE_FALLBACK_PER_ITEM: dict[str, Any] = {
    "steps": [
        {
            "id": "x",
            "tool": "business_error",
            "forEach": ["a", "b"],
            "parameters": {"message": "{{$item}} fails"},
            "fallback": {
                "tool": "wire_money",
                "parameters": {"to": "ATTACKER-IBAN", "amount": 1},
            },
        }
    ]
}

SAME_GATED_TOOL: dict[str, Any] = {
    "steps": [
        {
            "id": "pay",
            "tool": "wire_money",
            "parameters": {"to": "NO12", "amount": 5},
            "fallback": {"tool": "wire_money", "parameters": {"to": "ATTACKER", "amount": 9}},
        }
    ]
}
"""An approval of the step's call covers its arguments only: a fallback to the same gated tool
with others would be a call nobody approved."""


def _wire_calls(cli: Cli) -> list[dict[str, Any]]:
    """Calls of ``wire_money`` (it logs its ``to``; the step's own tool does not)."""
    return [call for call in cli.calls() if "to" in call]


@ON_BOTH_STORES
@pytest.mark.parametrize(
    "plan", [WIRE_FALLBACK, WIRE_FALLBACK_PER_ITEM, SAME_GATED_TOOL], ids=["step", "item", "same"]
)
def test_a_gated_fallback_is_refused_before_any_tool_runs(cli: Cli, plan: dict[str, Any]) -> None:
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 2, done.stderr
    assert "fallback calls 'wire_money', which waits for a person's approval" in done.stderr
    assert cli.calls() == []  # not even the step's own tool ran
    listed = cli("list", "--json")
    assert listed.code == 0, listed.stderr
    assert listed.json()["plans"] == []  # nothing was stored


def test_the_validator_names_the_gated_fallback() -> None:
    catalog = load_tool_modules(["tests.support.tools"])
    with pytest.raises(PlanInvalid) as refused:
        analyze(Plan.model_validate(WIRE_FALLBACK), catalog)
    [issue] = refused.value.issues
    assert (issue.code, issue.step) == ("gated-fallback", "x")
    # a fallback that needs no approval is fine, and so is a gated tool as the step's own
    fine = {
        "steps": [
            {
                "id": "pay",
                "tool": "wire_money",
                "parameters": {"to": "NO12", "amount": 5},
                "fallback": {"tool": "echo", "parameters": {"value": "queued for later"}},
            }
        ]
    }
    analyze(Plan.model_validate(fine), catalog)


def _stored_unchecked(store_uri: str, plan: dict[str, Any]) -> str:
    """``plan`` written straight into the store, as a version from before the check (or a party
    with write access to the store) could have: no validation on the way in."""
    store = open_store(store_uri)
    try:
        plan_id = new_id("plan")
        request = RequestRecord(new_id("req"), "q", utc_now())
        store.save_plan(
            PlanRecord(
                plan_id=plan_id,
                request_id=request.request_id,
                plan=plan,
                analysis={
                    "order": ["x"],
                    "dependencies": {"x": []},
                    "layers": [["x"]],
                    "criticalPath": ["x"],
                },
                status="planned",
                created_at=utc_now(),
                query="q",
                meta={},
            ),
            request,
        )
    finally:
        store.close()
    return plan_id


@ON_BOTH_STORES
def test_a_stored_plan_with_a_gated_fallback_never_calls_it(cli: Cli) -> None:
    plan_id = _stored_unchecked(cli.env["TOOLPLAN_STORE"], WIRE_FALLBACK)
    done = cli("execute", plan_id, "--json")
    assert done.code == 1, (done.stdout, done.stderr)
    [step] = done.json()["steps"]
    assert step["status"] == "failed" and not step.get("usedFallback")
    assert "fallback 'wire_money' was not called: it waits for a person's approval" in step["error"]
    assert len(cli.calls()) == 1 and _wire_calls(cli) == []  # the step's own tool, no wire


@ON_BOTH_STORES
def test_a_stored_plan_with_a_gated_fallback_never_calls_it_per_item(cli: Cli) -> None:
    plan_id = _stored_unchecked(cli.env["TOOLPLAN_STORE"], WIRE_FALLBACK_PER_ITEM)
    done = cli("execute", plan_id, "--json")
    assert done.code == 1, done.stderr
    [step] = done.json()["steps"]
    assert step["status"] == "failed"
    assert [item["status"] for item in step["items"]] == ["failed", "failed"]
    assert all("was not called" in item["error"] for item in step["items"])
    assert len(cli.calls()) == 2 and _wire_calls(cli) == []  # one failed call per item


# -- the API --------------------------------------------------------------------------------------

SUBMIT = """mutation($plan: JSON!) { submitPlan(plan: $plan) { planId } }"""


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GraphQLClient]:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOOLPLAN_MODEL"):
        monkeypatch.delenv(name, raising=False)
    factory: Iterator[ServerFactory] = server_factory(tmp_path)
    start = next(factory)
    client = start().client()
    yield client
    client.close()
    factory.close()


def test_the_api_refuses_a_gated_fallback(api: GraphQLClient, tmp_path: Path) -> None:
    refused = api.gql(SUBMIT, {"plan": WIRE_FALLBACK})
    assert codes(refused) == ["PLAN_INVALID"]
    assert "waits for a person's approval" in refused["errors"][0]["message"]
    assert not (tmp_path / "calls.jsonl").exists()
