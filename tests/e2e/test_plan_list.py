"""``toolplan list`` and GraphQL ``plans``: recent plans newest first, filtered by status and
request, paged by cursor, through the real CLI and a real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import GraphQLClient, ServerFactory, server_factory
from tests.e2e.conftest import Cli
from toolplan import Toolplan

pytestmark = pytest.mark.e2e

ECHO: dict[str, Any] = {"steps": [{"id": "a", "tool": "echo", "parameters": {"value": 1}}]}
FAILING: dict[str, Any] = {
    "steps": [{"id": "boom", "tool": "business_error", "parameters": {"message": "no"}}]
}


def _submit(cli: Cli, plan: dict[str, Any], query: str) -> dict[str, Any]:
    path = cli.tmp / "plan.json"
    path.write_text(json.dumps(plan))
    done = cli("submit", "--file", str(path), "--query", query, "--json")
    assert done.code == 0, done.stderr
    return dict(done.json())


def _new_version(cli: Cli, request_id: str, query: str) -> dict[str, Any]:
    """A new plan version of a request, through the Python client (the CLI has no flag)."""
    with Toolplan(store=cli.env["TOOLPLAN_STORE"], tools=["tests.support.tools"]) as client:
        ref = client.submit(ECHO, query=query, request_id=request_id)
    return ref.to_json()


def test_list_shows_plans_newest_first_filtered_and_paged(cli: Cli) -> None:
    first = _submit(cli, ECHO, "first query")
    version = _new_version(cli, first["requestId"], "second version")
    ran = _submit(cli, ECHO, "runs")
    assert cli("execute", ran["planId"], "--json").code == 0
    failed = _submit(cli, FAILING, "fails")
    assert cli("execute", failed["planId"], "--json").code == 1

    done = cli("list", "--json")
    assert done.code == 0, done.stderr
    listed = done.json()
    ids = [plan["planId"] for plan in listed["plans"]]
    assert ids == [failed["planId"], ran["planId"], version["planId"], first["planId"]]
    assert listed["nextCursor"] is None
    by_id = {plan["planId"]: plan for plan in listed["plans"]}
    assert by_id[ran["planId"]]["status"] == "succeeded"
    assert by_id[ran["planId"]]["durationMs"] is not None
    assert by_id[failed["planId"]]["status"] == "failed"
    assert by_id[first["planId"]]["status"] == "planned"
    assert by_id[first["planId"]]["durationMs"] is None
    assert by_id[version["planId"]]["query"] == "second version"

    only_failed = cli("list", "--status", "failed", "--json").json()
    assert [p["planId"] for p in only_failed["plans"]] == [failed["planId"]]
    mine = cli("list", "--request", first["requestId"], "--json").json()
    assert [p["planId"] for p in mine["plans"]] == [version["planId"], first["planId"]]

    page = cli("list", "--limit", "3", "--json").json()
    assert [p["planId"] for p in page["plans"]] == ids[:3]
    rest = cli("list", "--limit", "3", "--after", page["nextCursor"], "--json").json()
    assert [p["planId"] for p in rest["plans"]] == ids[3:]
    assert rest["nextCursor"] is None

    table = cli("list", "--limit", "3")
    assert table.code == 0, table.stderr
    header = table.stdout.splitlines()[0].split()
    assert header == ["plan", "status", "request", "age", "duration", "query"]
    assert ran["planId"] in table.stdout and "succeeded" in table.stdout
    assert f"toolplan list --after {page['nextCursor']}" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--status", "done"), "not a plan status"),
        (("--request", "nope"), "is not a request ID"),
        (("--limit", "0"), "between 1 and 500"),
        (("--after", "garbage"), "not a plan list cursor"),
    ],
)
def test_list_refuses_bad_input_with_exit_2(cli: Cli, args: tuple[str, ...], message: str) -> None:
    _submit(cli, ECHO, "something")
    done = cli("list", *args)
    assert done.code == 2
    assert message in done.stderr
    as_json = cli("list", *args, "--json")
    assert as_json.code == 2 and message in as_json.json()["error"]


PLANS = """query($status: String, $requestId: String, $first: Int!, $after: String) {
  plans(status: $status, requestId: $requestId, first: $first, after: $after) {
    items { planId status planStatus executionStatus requestId query createdAt durationMs }
    nextCursor
  }
}"""
SUBMIT = """mutation($plan: JSON!, $query: String, $requestId: String) {
  submitPlan(plan: $plan, query: $query, requestId: $requestId) { requestId planId }
}"""


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GraphQLClient]:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    servers: Iterator[ServerFactory] = server_factory(tmp_path)
    start = next(servers)
    client = start().client()
    yield client
    client.close()
    servers.close()


def test_graphql_plans_pages_with_a_cursor_and_filters(client: GraphQLClient) -> None:
    refs = [client.data(SUBMIT, {"plan": ECHO, "query": f"q{i}"})["submitPlan"] for i in range(3)]
    client.data(
        """mutation($id: String!) { executePlan(planId: $id) { status } }""",
        {"id": refs[1]["planId"]},
    )
    newest_first = [ref["planId"] for ref in reversed(refs)]

    page = client.data(PLANS, {"first": 2})["plans"]
    assert [p["planId"] for p in page["items"]] == newest_first[:2]
    assert page["nextCursor"]
    rest = client.data(PLANS, {"first": 2, "after": page["nextCursor"]})["plans"]
    assert [p["planId"] for p in rest["items"]] == newest_first[2:]
    assert rest["nextCursor"] is None

    succeeded = client.data(PLANS, {"first": 10, "status": "succeeded"})["plans"]["items"]
    assert [(p["planId"], p["status"], p["planStatus"]) for p in succeeded] == [
        (refs[1]["planId"], "succeeded", "planned")
    ]
    assert succeeded[0]["durationMs"] is not None
    planned = client.data(PLANS, {"first": 10, "status": "planned"})["plans"]["items"]
    assert {p["planId"] for p in planned} == {refs[0]["planId"], refs[2]["planId"]}
    assert all(p["executionStatus"] is None for p in planned)
    one = client.data(PLANS, {"first": 10, "requestId": refs[2]["requestId"]})["plans"]["items"]
    assert [p["query"] for p in one] == ["q2"]

    bad = client.gql(PLANS, {"first": 2, "after": "garbage"})
    assert bad["data"] is None
    assert "not a plan list cursor" in bad["errors"][0]["message"]
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
