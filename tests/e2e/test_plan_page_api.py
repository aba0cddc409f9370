"""The plan page's routes over HTTP (the browser tests are in test_plan_page.py): its static
files, its JSON (the service's plan_view and listing), and the API's auth and Host rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.api_support import TOOL_MODULES, ApiServer, ServerFactory, server_factory
from toolplan.api import ApiSettings
from toolplan.api.ui import ASSETS
from toolplan.service.operations import submit_plan
from toolplan.tools import load_tool_modules

pytestmark = pytest.mark.e2e

TOKEN = "ui-token-0123456789"
PLAN: dict[str, Any] = {
    "steps": [
        {"id": "a", "tool": "echo", "parameters": {"value": {"x": 1}}},
        {"id": "b", "tool": "echo", "parameters": {"value": "{{a.x}}"}},
        {"id": "boom", "tool": "business_error", "parameters": {"message": "it broke"}},
        {"id": "after", "tool": "echo", "parameters": {"value": "{{boom}}"}},
        {"id": "each", "tool": "echo", "forEach": [1, 2, 3], "parameters": {"value": "{{$item}}"}},
    ]
}
SUBMIT = "mutation($plan: JSON!) { submitPlan(plan: $plan) { planId requestId } }"
EXECUTE = "mutation($id: String!) { executePlan(planId: $id) { status } }"


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerFactory]:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    yield from server_factory(tmp_path)


def gql(http: httpx.Client, query: str, **variables: Any) -> dict[str, Any]:
    body = http.post("/graphql", json={"query": query, "variables": variables}).json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def run_plan(server: ApiServer) -> str:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        plan_id: str = gql(http, SUBMIT, plan=PLAN)["submitPlan"]["planId"]
        assert gql(http, EXECUTE, id=plan_id)["executePlan"]["status"] == "partial"
    return plan_id


def test_the_pages_and_assets_are_the_shipped_files_under_a_strict_policy(
    servers: ServerFactory,
) -> None:
    server = servers()
    with httpx.Client(base_url=server.url) as http:
        page = http.get("/ui/plans")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        # nothing from elsewhere: no CDN, no inline script
        assert "http" not in page.text.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "<script>" not in page.text
        assert http.get("/ui/plans/plan_1795663948_2sa5mphmup").status_code == 200
        assert http.get("/ui/plans/not-a-plan").status_code == 404
        assert http.get("/ui", follow_redirects=False).headers["location"] == "/ui/plans"
        for name, kind in ASSETS.items():
            asset = http.get(f"/ui/assets/{name}")
            assert asset.status_code == 200 and asset.headers["content-type"] == kind
            assert asset.content
        assert http.get("/ui/assets/secret.py").status_code == 404


def test_plan_data_has_states_marks_items_layout_timeline_and_versions(
    servers: ServerFactory,
) -> None:
    server = servers()
    plan_id = run_plan(server)
    with httpx.Client(base_url=server.url) as http:
        view = http.get(f"/ui/data/plans/{plan_id}").json()
    assert view["planId"] == plan_id and view["status"] == "partial" and view["finished"]
    steps = {step["id"]: step for step in view["steps"]}
    assert {s: steps[s]["state"] for s in steps} == {
        "a": "succeeded",
        "b": "succeeded",
        "boom": "failed",
        "after": "skipped",
        "each": "succeeded",
    }
    assert steps["b"]["resolvedParameters"] == {"value": 1} and steps["b"]["output"] == 1
    assert "it broke" in steps["boom"]["error"]
    assert steps["each"]["items"] == {"done": 3, "total": 3, "failed": 0}
    assert steps["a"]["items"] is None and steps["a"]["critical"]
    assert set(view["graph"]["nodes"]) == set(steps)
    assert {(e["from"], e["to"]) for e in view["graph"]["edges"]} == {("a", "b"), ("boom", "after")}
    rows = {row["id"]: row for row in view["timeline"]["rows"]}
    assert set(rows) == {"a", "b", "boom", "each"}  # after never started
    assert rows["b"]["startMs"] >= rows["a"]["endMs"] - 1 and rows["a"]["critical"]
    assert view["timeline"]["estimateMs"] == view["estimate"]["durationMs"]
    # 5 steps never seen are estimated at a second each; the run took milliseconds, so the axis
    # covers the run and the estimate is named as off the scale.
    assert view["timeline"]["estimateOffScale"] is True
    assert view["timeline"]["spanMs"] == max(row["endMs"] for row in rows.values())
    assert [v["planId"] for v in view["versions"]] == [plan_id]
    assert view["colours"]["failed"] == ["#fee2e2", "#dc2626"]


def test_versions_link_each_replan_with_its_reason(servers: ServerFactory) -> None:
    server = servers()
    catalog = load_tool_modules(TOOL_MODULES)
    first = submit_plan(PLAN, store=server.store, catalog=catalog, max_steps=50, query="q")
    second = submit_plan(
        PLAN,
        store=server.store,
        catalog=catalog,
        max_steps=50,
        request_id=first.request_id,
        meta={"replanOf": first.plan_id, "replanReason": "boom failed"},
    )
    with httpx.Client(base_url=server.url) as http:
        view = http.get(f"/ui/data/plans/{second.plan_id}").json()
    assert view["versions"] == [
        {
            "planId": first.plan_id,
            "version": 1,
            "status": "planned",
            "createdAt": view["versions"][0]["createdAt"],
            "replanOf": None,
            "replanReason": None,
            "current": False,
        },
        {
            "planId": second.plan_id,
            "version": 2,
            "status": "planned",
            "createdAt": view["versions"][1]["createdAt"],
            "replanOf": first.plan_id,
            "replanReason": "boom failed",
            "current": True,
        },
    ]
    assert all(step["state"] == "not run" for step in view["steps"])
    assert view["timeline"]["rows"] == [] and not view["finished"]


def test_the_list_filters_and_pages_as_graphql_plans_does(servers: ServerFactory) -> None:
    server = servers()
    failed = run_plan(server)
    with httpx.Client(base_url=server.url) as http:
        planned = [gql(http, SUBMIT, plan=PLAN)["submitPlan"]["planId"] for _ in range(2)]
        page = http.get("/ui/data/plans", params={"first": 2}).json()
        assert [p["planId"] for p in page["plans"]] == planned[::-1]
        rest = http.get("/ui/data/plans", params={"first": 2, "after": page["nextCursor"]}).json()
        assert [p["planId"] for p in rest["plans"]] == [failed] and rest["nextCursor"] is None
        partial = http.get("/ui/data/plans", params={"status": "partial"}).json()
        assert [p["planId"] for p in partial["plans"]] == [failed]
        assert partial["plans"][0]["durationMs"] is not None
        assert "partial" in partial["statuses"]
        bad = http.get("/ui/data/plans", params={"status": "sideways"})
        assert bad.status_code == 400
        assert bad.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        assert "not a plan status" in bad.json()["errors"][0]["message"]
        assert http.get("/ui/data/plans", params={"first": "many"}).status_code == 400
        missing = http.get("/ui/data/plans/plan_1795663948_2sa5mphmup")
        assert missing.status_code == 404
        assert missing.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        assert http.get("/ui/data/plans/nonsense").status_code == 400


def test_with_a_token_the_pages_open_but_their_data_needs_it(servers: ServerFactory) -> None:
    server = servers(api=ApiSettings(token=TOKEN))
    with httpx.Client(base_url=server.url) as http:
        assert http.get("/ui/plans").status_code == 200  # holds no data, like GraphiQL
        assert http.get("/ui/assets/plan.js").status_code == 200
        refused = http.get("/ui/data/plans")
        assert refused.status_code == 401
        assert refused.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        assert (
            http.get("/ui/data/plans", headers={"Authorization": "Bearer nope"}).status_code == 401
        )
        # an encoded path is still the data's path
        assert http.get("/ui/%64ata/plans").status_code == 401
        allowed = http.get("/ui/data/plans", headers={"Authorization": f"Bearer {TOKEN}"})
        assert allowed.status_code == 200 and allowed.json()["plans"] == []


def test_without_a_token_only_localhost_names_are_answered(servers: ServerFactory) -> None:
    server = servers()
    with httpx.Client(base_url=server.url) as http:
        for path in ("/ui/plans", "/ui/assets/ui.js", "/ui/data/plans"):
            rebound = http.get(path, headers={"Host": "attacker.example"})
            assert rebound.status_code == 403, path
            assert http.get(path, headers={"Host": "localhost"}).status_code == 200, path
