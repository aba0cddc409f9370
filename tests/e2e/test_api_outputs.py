"""Outputs through the API and the plan page's data route, on SQLite and MongoDB (issue 42,
items 5 and 6, and ``when`` failing closed).

A tool's NaN reaches GraphQL and ``/ui/data/plans/<id>`` as ``null`` (strict JSON, which
``JSON.parse`` reads), so is one an older version stored; an output the store cannot hold fails
its step once; a text condition is skipped with its reason; and an unexpected server error is a
JSON error body with a reference, never a plain-text 500 or a traceback, logged once.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient

from tests.e2e.api_support import TOOL_MODULES, TRACE_MARKERS, ApiServer, GraphQLClient
from toolplan.api import ApiSettings, create_app
from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.store import Store, open_store
from toolplan.tools import load_tool_modules

pytestmark = pytest.mark.e2e

MODULES = (*TOOL_MODULES, "tests.support.odd_outputs")
SUBMIT = "mutation($plan: JSON!) { submitPlan(plan: $plan) { planId } }"
EXECUTE = """mutation($id: String!) {
  executePlan(planId: $id) { status outputs steps { id status attempts output error reason } }
}"""
EXECUTION = """query($id: String!) {
  execution(planId: $id) { status outputs steps { id status output reason error } }
}"""


def strict(text: str) -> Any:
    """``text`` as strict JSON: a NaN or Infinity in it fails the test."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in a response: {text[:300]}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(params=["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)])
def store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'api.db'}"
    uri: str = request.getfixturevalue("mongodb_uri")
    return uri


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


def settings_for(store_uri: str) -> Settings:
    return replace(
        Settings.from_env(),
        store_uri=store_uri,
        tool_modules=MODULES,
        execution=ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001)),
    )


@pytest.fixture
def store(store_uri: str) -> Iterator[Store]:
    opened = open_store(store_uri)
    yield opened
    opened.close()


@pytest.fixture
def server(store: Store, store_uri: str, log: Path) -> Iterator[ApiServer]:
    started = ApiServer(store, ApiSettings(), settings_for(store_uri)).start()
    yield started
    started.stop()


@pytest.fixture
def client(server: ApiServer) -> Iterator[GraphQLClient]:
    opened = server.client()
    yield opened
    opened.close()


def run(client: GraphQLClient, plan: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    plan_id: str = client.data(SUBMIT, {"plan": plan})["submitPlan"]["planId"]
    response = client.post({"query": EXECUTE, "variables": {"id": plan_id}})
    assert response.status_code == 200, response.text
    body = strict(response.text)
    assert "errors" not in body, body
    return plan_id, body["data"]["executePlan"]


def page_data(server: ApiServer, plan_id: str) -> Any:
    response = httpx.get(f"{server.url}/ui/data/plans/{plan_id}", timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return strict(response.text)


NAN_PLAN = {"steps": [{"id": "n", "tool": "not_a_number", "parameters": {}}]}
READING = {"ratio": None, "high": None, "low": None, "ok": 1.5}


def test_nan_reaches_graphql_and_the_page_as_null(server: ApiServer, client: GraphQLClient) -> None:
    plan_id, done = run(client, NAN_PLAN)
    assert done["status"] == "succeeded" and done["outputs"] == {"n": READING}
    stored = strict(client.post({"query": EXECUTION, "variables": {"id": plan_id}}).text)
    assert stored["data"]["execution"]["steps"][0]["output"] == READING
    view = page_data(server, plan_id)
    assert READING in [step.get("output") for step in view["steps"]]


def _store_a_nan_the_old_way(store_uri: str, plan_id: str) -> None:
    """What an older version wrote for a NaN output: Python's json.dumps, NaN and all."""
    text = '{"ratio": NaN, "high": Infinity, "low": -Infinity, "ok": 1.5}'
    if store_uri.startswith("sqlite"):
        with sqlite3.connect(store_uri.removeprefix("sqlite:///")) as db:
            changed = db.execute(
                "UPDATE tp_steps SET output = ? WHERE plan_id = ?", (text, plan_id)
            ).rowcount
        assert changed == 1
        return
    from pymongo import MongoClient

    with MongoClient(store_uri) as mongo:
        steps = mongo.get_default_database()["steps"]
        changed = steps.update_many({"planId": plan_id}, {"$set": {"output": text}})
    assert changed.modified_count == 1


def test_a_nan_an_older_version_stored_is_served_as_null(
    server: ApiServer, client: GraphQLClient, store_uri: str
) -> None:
    plan_id, _ = run(client, {"steps": [{"id": "n", "tool": "echo", "parameters": {"value": 1}}]})
    _store_a_nan_the_old_way(store_uri, plan_id)
    stored = strict(client.post({"query": EXECUTION, "variables": {"id": plan_id}}).text)
    assert stored["data"]["execution"]["steps"][0]["output"] == READING
    assert READING in [step.get("output") for step in page_data(server, plan_id)["steps"]]


def test_an_output_the_store_cannot_hold_fails_once(client: GraphQLClient, log: Path) -> None:
    plan = {
        "steps": [
            {"id": "png", "tool": "raw_bytes", "parameters": {}, "maxAttempts": 3},
            {"id": "big", "tool": "huge_integer", "parameters": {}, "maxAttempts": 3},
        ]
    }
    _, done = run(client, plan)
    steps = {s["id"]: s for s in done["steps"]}
    assert done["status"] == "failed"
    assert [(steps[s]["status"], steps[s]["attempts"]) for s in ("png", "big")] == [
        ("failed", 1),
        ("failed", 1),
    ]
    assert "returned an output the record cannot hold: bytes" in steps["png"]["error"]
    assert "an integer of 5001 digits" in steps["big"]["error"]
    called = sorted(json.loads(line)["step"] for line in log.read_text().splitlines())
    assert called == ["big", "png"]


def test_a_text_condition_is_skipped_with_its_reason(client: GraphQLClient, log: Path) -> None:
    plan = {
        "steps": [
            {"id": "ask", "tool": "says", "parameters": {"answer": "no"}},
            {"id": "act", "tool": "echo", "when": "{{ask}}", "parameters": {"value": 1}},
            {"id": "after", "tool": "echo", "parameters": {"value": "{{act}}"}},
        ]
    }
    _, done = run(client, plan)
    steps = {s["id"]: s for s in done["steps"]}
    assert done["status"] == "partial"
    assert [(steps[s]["status"], steps[s]["reason"]) for s in ("act", "after")] == [
        ("skipped", "condition-not-boolean")
    ] * 2
    assert '{{ask}} is the text "no"' in steps["act"]["error"]
    called = [json.loads(line)["step"] for line in log.read_text().splitlines()]
    assert called == ["ask"]


# -- the boundary: whatever a store hands back, and whatever goes wrong ------------------------


class _NanStore:
    """A store (a third-party backend, say) that hands back NaN in a step's output."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_execution(self, plan_id: str, *, items: bool = True) -> Any:
        record = self._inner.get_execution(plan_id, items=items)
        if record is None:
            return None
        steps = [replace(step, output={"ratio": math.nan}) for step in record.steps]
        return replace(record, steps=steps)


def test_the_api_answers_strict_json_whatever_the_store_hands_back(
    tmp_path: Path, log: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'nan.db'}"
    inner = open_store(uri)
    plain = ApiServer(inner, ApiSettings(), settings_for(uri)).start()
    client = plain.client()
    try:
        plan_id, _ = run(
            client, {"steps": [{"id": "a", "tool": "echo", "parameters": {"value": 1}}]}
        )
    finally:
        client.close()
        plain.stop()
    nan_server = ApiServer(_NanStore(inner), ApiSettings(), settings_for(uri)).start()  # type: ignore[arg-type]
    try:
        client = nan_server.client()
        body = strict(client.post({"query": EXECUTION, "variables": {"id": plan_id}}).text)
        assert body["data"]["execution"]["steps"][0]["output"] == {"ratio": None}
        assert {"ratio": None} in [s.get("output") for s in page_data(nan_server, plan_id)["steps"]]
        client.close()
    finally:
        nan_server.stop()
        inner.close()


def test_an_unexpected_error_anywhere_is_a_json_500_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    uri = f"sqlite:///{tmp_path / 'boom.db'}"
    app = create_app(settings_for(uri), api=ApiSettings(), catalog=load_tool_modules(list(MODULES)))

    async def boom(request: Request) -> Any:
        raise RuntimeError("secret: /srv/db password=hunter2")

    app.router.routes.append(Route("/ui/data/boom", boom, methods=["GET"]))
    with TestClient(app, raise_server_exceptions=False) as http:
        response = http.get("/ui/data/boom", headers={"host": "127.0.0.1"})
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("application/json")
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "INTERNAL_ERROR"
    reference = error["extensions"]["reference"]
    assert reference in error["message"] and "hunter2" not in response.text
    assert not any(marker in response.text for marker in TRACE_MARKERS)
    logged = [r for r in caplog.records if "hunter2" in str(r.exc_info and r.exc_info[1])]
    assert len(logged) == 1 and reference in logged[0].getMessage()
