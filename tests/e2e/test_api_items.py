"""A map's items through the API (issue 42): the operator's ceiling on items, which a plan's
``maxItems`` cannot lift, and items read a page at a time, over GraphQL and the plan page's JSON,
so that neither loads a map of any size whole."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.api_support import TOOL_MODULES, ApiServer, GraphQLClient
from toolplan.api import ApiSettings
from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.store import open_store

pytestmark = pytest.mark.e2e

SUBMIT = "mutation($plan: JSON!) { submitPlan(plan: $plan) { planId } }"
EXECUTE = "mutation($id: String!) { executePlan(planId: $id) { status steps { id status error } } }"


@pytest.fixture
def ceiling() -> int:
    """The server's TOOLPLAN_MAX_ITEMS (a test parametrizes it to change it)."""
    return 300


@pytest.fixture
def server(ceiling: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    """A server whose operator set TOOLPLAN_MAX_ITEMS to ``ceiling``."""
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    settings = replace(
        Settings.from_env(),
        store_uri=f"sqlite:///{tmp_path / 'api.db'}",
        tool_modules=TOOL_MODULES,
        execution=ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001), max_items=ceiling),
    )
    store = open_store(settings.store_uri)
    started = ApiServer(store, ApiSettings(), settings).start()
    try:
        yield started
    finally:
        started.stop()
        store.close()


@pytest.fixture
def client(server: ApiServer) -> Iterator[GraphQLClient]:
    client = server.client()
    yield client
    client.close()


def _map(items: list[Any], **step: Any) -> dict[str, Any]:
    return {
        "steps": [
            {
                "id": "each",
                "tool": "echo",
                "forEach": items,
                "parameters": {"value": "{{$item}}"},
                **step,
            },
            {"id": "plain", "tool": "echo", "parameters": {"value": 1}},
        ]
    }


@pytest.mark.parametrize("ceiling", [5])
def test_submit_plan_refuses_a_list_over_the_operators_ceiling(client: GraphQLClient) -> None:
    """Under a ceiling of 5, a plan's own maxItems of 1000 lets no list of 6 through: the
    literal one is refused when submitted (PLAN_INVALID, naming the limit), the one known at
    run time fails its step before any call."""
    body = client.gql(SUBMIT, {"plan": _map(list(range(6)), maxItems=1000)})
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "PLAN_INVALID"
    assert "more than the limit of 5 (TOOLPLAN_MAX_ITEMS)" in error["message"]
    assert "its maxItems of 1000 cannot raise the operator's limit" in error["message"]

    templated = {
        "steps": [
            {"id": "list", "tool": "echo", "parameters": {"value": list(range(6))}},
            {
                "id": "each",
                "tool": "echo",
                "forEach": "{{list}}",
                "maxItems": 1000,
                "parameters": {"value": "{{$item}}"},
            },
        ]
    }
    plan_id = client.data(SUBMIT, {"plan": templated})["submitPlan"]["planId"]
    steps = {s["id"]: s for s in client.data(EXECUTE, {"id": plan_id})["executePlan"]["steps"]}
    assert steps["each"]["status"] == "failed"
    assert "has 6 items, more than the limit of 5 (TOOLPLAN_MAX_ITEMS)" in steps["each"]["error"]


PAGED = """query($id: String!, $offset: Int, $limit: Int, $status: String) {
  execution(planId: $id) {
    steps { id itemCount itemCounts items(offset: $offset, limit: $limit, status: $status) }
  }
}"""
DEFAULT_PAGE = "query($id: String!) { execution(planId: $id) { steps { id items } } }"
PLAN_ITEMS = """query($id: String!) {
  plan(planId: $id) { execution { steps { id itemCount items(offset: 248, limit: 10) } } }
}"""


def _run_map(client: GraphQLClient, count: int) -> str:
    plan_id: str = client.data(SUBMIT, {"plan": _map(list(range(count)))})["submitPlan"]["planId"]
    assert client.data(EXECUTE, {"id": plan_id})["executePlan"]["status"] == "succeeded"
    return plan_id


def test_graphql_pages_through_a_maps_items(client: GraphQLClient) -> None:
    plan_id = _run_map(client, 250)
    variables = {"id": plan_id, "offset": 100, "limit": 50}
    steps = {s["id"]: s for s in client.data(PAGED, variables)["execution"]["steps"]}
    each = steps["each"]
    assert each["itemCount"] == 250 and each["itemCounts"] == {"succeeded": 250}
    assert [item["index"] for item in each["items"]] == list(range(100, 150))
    assert each["items"][0]["output"] == 100 and each["items"][0]["status"] == "succeeded"
    assert (steps["plain"]["items"], steps["plain"]["itemCount"]) == (None, None)
    assert steps["plain"]["itemCounts"] is None

    # No arguments: the first page, of the default size (the field as clients used it).
    steps = {s["id"]: s for s in client.data(DEFAULT_PAGE, {"id": plan_id})["execution"]["steps"]}
    assert [item["index"] for item in steps["each"]["items"]] == list(range(100))

    failed = client.data(PAGED, {"id": plan_id, "status": "failed", "limit": 10})
    assert next(s for s in failed["execution"]["steps"] if s["id"] == "each")["items"] == []

    plan = client.data(PLAN_ITEMS, {"id": plan_id})["plan"]["execution"]["steps"]
    assert [i["index"] for i in plan[0]["items"]] == [248, 249] and plan[0]["itemCount"] == 250

    for bad in ({"limit": 5000}, {"offset": -1}, {"status": "done"}):
        body = client.gql(PAGED, {"id": plan_id, **bad})
        assert body["errors"], bad  # one per step asked for its items
        for error in body["errors"]:
            assert error["extensions"]["code"] == "BAD_USER_INPUT", error


def test_the_plan_pages_json_holds_a_page_of_items_and_fetches_more(server: ApiServer) -> None:
    client = server.client()
    plan_id = _run_map(client, 250)
    client.close()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        view = http.get(f"/ui/data/plans/{plan_id}").json()
        each = next(step for step in view["steps"] if step["id"] == "each")
        assert each["items"] == {"done": 250, "total": 250, "failed": 0}
        assert each["itemCounts"] == {"succeeded": 250}
        assert [item["index"] for item in each["itemDetails"]] == list(range(50))
        assert each["itemsNext"] == 50

        base = f"/ui/data/plans/{plan_id}/steps/each/items"
        page = http.get(base, params={"offset": 50, "limit": 100}).json()
        assert [item["index"] for item in page["items"]] == list(range(50, 150))
        assert (page["total"], page["nextOffset"]) == (250, 150)
        last = http.get(base, params={"offset": 200, "limit": 100}).json()
        assert len(last["items"]) == 50 and last["nextOffset"] is None

        too_many = http.get(base, params={"limit": 100_000})
        assert too_many.status_code == 400
        assert too_many.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        # Past what a store's integers hold: bad input, not an internal error (issue 52).
        for offset in ("99999999999999999999", str(2**63), str(2**31)):
            huge = http.get(base, params={"offset": offset})
            assert huge.status_code == 400, (offset, huge.text)
            assert "offset" in huge.json()["errors"][0]["message"]
        assert http.get(base, params={"offset": 2**31 - 1}).json()["items"] == []
        first = http.get("/ui/data/plans", params={"first": "99999999999999999999"})
        assert first.status_code == 400, first.text
        plain = http.get(f"/ui/data/plans/{plan_id}/steps/plain/items")
        assert plain.status_code == 400 and "has no items" in plain.json()["errors"][0]["message"]
        unknown = http.get("/ui/data/plans/plan_1795663948_2sa5mphmup/steps/each/items")
        assert unknown.status_code == 404
