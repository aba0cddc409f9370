"""Small API gaps from issue 42, item 7: what a client is told when an ID is malformed or
missing, when a subscription arrives without SSE, and when a decision's ``by`` is refused.

Each message speaks the API (its arguments, its codes) and leaks nothing of the server: not the
store's URI or path, not a traceback in the response or the log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import TRACE_MARKERS, GraphQLClient, ServerFactory, server_factory
from toolplan.store import Store, open_store

pytestmark = pytest.mark.e2e

ON_BOTH_STORES = pytest.mark.parametrize(
    "store_kind", ["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)]
)
MISSING_PLAN = "plan_1700000000_unknown00"
MISSING_REQUEST = "req_1700000000_unknown00"
GATED_PLAN: dict[str, Any] = {
    "steps": [{"id": "wait", "tool": "wire_money", "parameters": {"to": "NO12", "amount": 5}}]
}
SUBMIT = """mutation($plan: JSON!) { submitPlan(plan: $plan) { planId status } }"""
EXECUTE = """mutation($id: String!) {
  executePlan(planId: $id) { status steps { id status } }
}"""
DENY = """mutation($id: String!, $step: String!, $reason: String!, $by: String) {
  denyStep(planId: $id, stepId: $step, reason: $reason, by: $by) { status }
}"""
APPROVE = """mutation($id: String!, $by: String) {
  approveStep(planId: $id, by: $by) { status }
}"""


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerFactory]:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(tmp_path / "gate.open"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOOLPLAN_MODEL"):
        monkeypatch.delenv(name, raising=False)
    yield from server_factory(tmp_path)


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The server's store: SQLite in ``tmp_path``, or a fresh MongoDB database."""
    if request.param == "mongodb":
        uri = request.getfixturevalue("mongodb_uri")
    else:
        uri = f"sqlite:///{tmp_path / 'secret-folder' / 'api.db'}"
        (tmp_path / "secret-folder").mkdir()
    opened = open_store(uri)
    yield opened
    opened.close()


@pytest.fixture
def client(servers: ServerFactory, store: Store) -> Iterator[GraphQLClient]:
    client = servers(store=store).client()
    yield client
    client.close()


def _errors(body: dict[str, Any]) -> list[dict[str, Any]]:
    assert body.get("errors"), body
    return list(body["errors"])


@pytest.mark.parametrize(
    "store", ["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)], indirect=True
)
def test_not_found_names_the_id_but_not_the_store(client: GraphQLClient, store: Store) -> None:
    queries = [
        ("query($id: String!) { plan(planId: $id) { planId } }", MISSING_PLAN),
        ("query($id: String!) { request(requestId: $id) { requestId } }", MISSING_REQUEST),
        ("query($id: String!) { execution(planId: $id) { status } }", MISSING_PLAN),
        (EXECUTE, MISSING_PLAN),
    ]
    for query, missing in queries:
        (error,) = _errors(client.gql(query, {"id": missing}))
        assert error["extensions"]["code"] == "NOT_FOUND"
        assert repr(missing) in error["message"]
        # The store's URI (and with it a path on the server, or a database host) stays inside.
        for secret in (store.uri, "secret-folder", "sqlite", "mongodb", "api.db"):
            assert secret not in error["message"], error["message"]
            assert secret not in str(error["extensions"]), error["extensions"]
    page = client.http.get(f"/ui/data/plans/{MISSING_PLAN}")
    assert page.status_code == 404
    (error,) = page.json()["errors"]
    assert error["extensions"]["code"] == "NOT_FOUND" and store.uri not in error["message"]


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_an_id_with_a_trailing_newline_is_bad_input(client: GraphQLClient) -> None:
    body = client.gql(
        "query($id: String!) { plan(planId: $id) { planId } }", {"id": MISSING_PLAN + "\n"}
    )
    (error,) = _errors(body)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "is not a plan ID" in error["message"]


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
@pytest.mark.parametrize("accept", [None, "application/json", "*/*"])
def test_a_subscription_without_sse_is_a_clear_error_not_a_traceback(
    client: GraphQLClient, accept: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    query = "subscription($id: String!) { stepEvents(planId: $id) { kind } }"
    headers = {} if accept is None else {"accept": accept}
    with caplog.at_level(logging.INFO):
        response = client.post({"query": query, "variables": {"id": MISSING_PLAN}}, headers=headers)
    assert response.headers["content-type"].startswith("application/json"), response.text
    (error,) = _errors(response.json())
    assert error["extensions"]["code"] == "BAD_REQUEST", error
    assert "text/event-stream" in error["message"]
    assert response.status_code == 400
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not any(record.exc_info for record in caplog.records), logged
    assert not any(marker in logged for marker in TRACE_MARKERS), logged


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_decisions_over_the_api_name_api_arguments(client: GraphQLClient, tmp_path: Path) -> None:
    plan_id = client.data(SUBMIT, {"plan": GATED_PLAN})["submitPlan"]["planId"]
    assert client.data(EXECUTE, {"id": plan_id})["executePlan"]["status"] == "waiting"
    long_by = "x" * 201
    for query, variables in [
        (DENY, {"id": plan_id, "step": "wait", "reason": "no", "by": long_by}),
        (APPROVE, {"id": plan_id, "by": long_by}),
        (DENY, {"id": plan_id, "step": "wait", "reason": "  "}),
    ]:
        (error,) = _errors(client.gql(query, variables))
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert "--" not in error["message"], error["message"]
    (error,) = _errors(
        client.gql(DENY, {"id": plan_id, "step": "wait", "reason": "no", "by": long_by})
    )
    assert "by" in error["message"] and "201" in error["message"]


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_a_plan_of_ten_thousand_steps_is_refused_for_the_step_limit_alone(
    client: GraphQLClient,
) -> None:
    step = {"id": "s", "tool": "echo", "parameters": {"value": "x" * 20}}
    body = client.gql(SUBMIT, {"plan": {"steps": [step] * 10_000}})
    (error,) = _errors(body)
    assert error["extensions"]["code"] == "PLAN_INVALID"
    assert [issue["code"] for issue in error["extensions"]["issues"]] == ["limit"]
    assert "10000 steps, more than the limit of 50" in error["message"]
