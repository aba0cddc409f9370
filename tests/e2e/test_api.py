"""The GraphQL API end to end: a real uvicorn server on a free port, driven over HTTP by httpx.

Most tests run the server in a thread of this process (so they can hand it a spy or broken store
and read its log); the last ones run ``toolplan serve`` as a subprocess. Every response is checked
for traceback text by the client (``tests/e2e/api_support.py``).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.api_support import (
    PLAN_ID,
    REQUEST_ID,
    TRACE_MARKERS,
    ApiServer,
    GraphQLClient,
    ServerFactory,
    SpyStore,
    server_factory,
    wait_for,
)
from tests.e2e.browser_support import serve
from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.mcp_http import SERVER as MCP_SERVER
from tests.support.plans import ATTEMPTS, QUERY, blog_plan, broken_blog_plan, orphan_blog_plan
from tests.support.ports import first_pick_taken, free_port
from toolplan.api import ApiSettings, check_bind, is_loopback
from toolplan.errors import InvalidInput, StoreUnavailable
from toolplan.store import open_store

pytestmark = pytest.mark.e2e

TOKEN = "test-token-0123456789"

ECHO_PLAN: dict[str, Any] = {
    "reasoning": "b repeats what a returned",
    "steps": [
        {"id": "a", "tool": "echo", "parameters": {"value": {"x": 1, "$gt": "kept as data"}}},
        {"id": "b", "tool": "echo", "parameters": {"value": "{{a.x}}"}},
    ],
    "outputSteps": ["b"],
}
GATED_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "wait", "tool": "gate", "parameters": {"label": "opened"}},
        {"id": "after", "tool": "echo", "parameters": {"value": "{{wait.label}}"}},
    ]
}

SUBMIT = """mutation($plan: JSON!, $query: String, $requestId: String) {
  submitPlan(plan: $plan, query: $query, requestId: $requestId) { requestId planId status }
}"""
PLAN = """query($id: String!) {
  plan(planId: $id) {
    planId requestId query status reasoning outputSteps layers createdAt
    steps { id tool parameters dependsOn confidence }
    execution { status }
  }
}"""
REQUEST = """query($id: String!) {
  request(requestId: $id) {
    requestId query createdAt
    plans { planId status execution { status } }
    executions { planId status steps { id status output } }
  }
}"""
EXECUTION = """query($id: String!) {
  execution(planId: $id) {
    planId requestId status error outputs
    steps { id tool status attempts output error durationMs startedAt finishedAt resolvedParameters }
  }
}"""
EXECUTE = """mutation($id: String!, $wait: Boolean, $approve: Boolean) {
  executePlan(planId: $id, wait: $wait, approve: $approve) {
    planId status outputs steps { id status attempts output error durationMs }
  }
}"""
CREATE = """mutation($query: String!, $requestId: String) {
  createPlanWithRequestId(query: $query, requestId: $requestId) { requestId planId status }
}"""
EVENTS = (
    "subscription($id: String!) { stepEvents(planId: $id) { kind planId stepId tool attempt } }"
)


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerFactory]:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(tmp_path / "gate.open"))
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TOOLPLAN_MODEL",
        "TOOLPLAN_STRUCTURED_METHOD",
    ):
        monkeypatch.delenv(name, raising=False)
    yield from server_factory(tmp_path)


@pytest.fixture
def server(servers: ServerFactory) -> ApiServer:
    return servers()


@pytest.fixture
def client(server: ApiServer) -> Iterator[GraphQLClient]:
    client = server.client()
    yield client
    client.close()


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def submit(client: GraphQLClient, plan: dict[str, Any], **variables: Any) -> dict[str, Any]:
    return client.data(SUBMIT, {"plan": plan, **variables})["submitPlan"]


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def read_events(
    client: GraphQLClient,
    plan_id: str,
    *,
    on_first: Any = None,
    wait_seconds: float | None = None,
    query: str = EVENTS,
) -> list[dict[str, Any]]:
    """Subscribe over SSE (``query``: the subscription, with ``$id``) and collect every
    ``next`` payload until ``complete``."""
    payloads: list[dict[str, Any]] = []
    variables: dict[str, Any] = {"id": plan_id}
    if wait_seconds is not None:
        variables["wait"] = wait_seconds
        query = query.replace("($id: String!)", "($id: String!, $wait: Float)").replace(
            "stepEvents(planId: $id)", "stepEvents(planId: $id, waitSeconds: $wait)"
        )
    request = {"query": query, "variables": variables}
    headers = {"accept": "text/event-stream"}
    with client.http.stream("POST", "/graphql", json=request, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in response.iter_lines():
            assert not any(marker in line for marker in TRACE_MARKERS), line
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
                if event == "complete":
                    break
            elif line.startswith("data: ") and event == "next":
                payloads.append(json.loads(line.removeprefix("data: ")))
                if on_first is not None and len(payloads) == 1:
                    on_first()
    return payloads


# -- plans, requests, executions ----------------------------------------------------------------


def test_submit_then_read_plan_request_and_execution(client: GraphQLClient) -> None:
    ref = submit(client, ECHO_PLAN, query="echo twice")
    assert PLAN_ID.match(ref["planId"]) and REQUEST_ID.match(ref["requestId"])
    assert ref["status"] == "planned"

    plan = client.data(PLAN, {"id": ref["planId"]})["plan"]
    assert plan["planId"] == ref["planId"] and plan["requestId"] == ref["requestId"]
    assert plan["query"] == "echo twice" and plan["reasoning"] == "b repeats what a returned"
    assert plan["layers"] == [["a"], ["b"]] and plan["outputSteps"] == ["b"]
    assert plan["steps"][0]["parameters"] == {"value": {"x": 1, "$gt": "kept as data"}}
    assert [s["dependsOn"] for s in plan["steps"]] == [[], []]
    assert plan["execution"] is None

    never_run = client.gql(EXECUTION, {"id": ref["planId"]})
    assert never_run == {"data": {"execution": None}}  # known plan, no execution: no error

    version = submit(client, ECHO_PLAN, requestId=ref["requestId"])
    assert version["requestId"] == ref["requestId"] and version["planId"] != ref["planId"]
    request = client.data(REQUEST, {"id": ref["requestId"]})["request"]
    assert request["query"] == "echo twice"
    assert [p["planId"] for p in request["plans"]] == [ref["planId"], version["planId"]]
    assert request["executions"] == []


def test_execute_and_wait(client: GraphQLClient, tmp_path: Path) -> None:
    ref = submit(client, ECHO_PLAN)
    done = client.data(EXECUTE, {"id": ref["planId"]})["executePlan"]
    assert done["status"] == "succeeded" and done["outputs"] == {"b": 1}
    assert [(s["id"], s["status"], s["attempts"]) for s in done["steps"]] == [
        ("a", "succeeded", 1),
        ("b", "succeeded", 1),
    ]
    assert all(isinstance(s["durationMs"], float) for s in done["steps"])

    stored = client.data(EXECUTION, {"id": ref["planId"]})["execution"]
    assert stored["status"] == "succeeded" and stored["requestId"] == ref["requestId"]
    assert stored["steps"][1]["resolvedParameters"] == {"value": 1}
    assert stored["steps"][0]["startedAt"] and stored["steps"][0]["finishedAt"]
    request = client.data(REQUEST, {"id": ref["requestId"]})["request"]
    assert [e["planId"] for e in request["executions"]] == [ref["planId"]]
    assert request["plans"][0]["execution"] == {"status": "succeeded"}

    again = client.data(EXECUTE, {"id": ref["planId"], "wait": False})["executePlan"]
    assert again["status"] == "succeeded"  # finished plans are returned as stored
    assert len(calls(tmp_path)) == 2  # and no tool ran again


def test_execute_without_waiting_then_poll(client: GraphQLClient, tmp_path: Path) -> None:
    ref = submit(client, GATED_PLAN)
    started = client.data(EXECUTE, {"id": ref["planId"], "wait": False})["executePlan"]
    assert started["status"] == "running"
    assert [(s["id"], s["status"]) for s in started["steps"]] == [
        ("wait", "running"),
        ("after", "pending"),
    ]
    joined = client.data(EXECUTE, {"id": ref["planId"], "wait": False})["executePlan"]
    assert joined["status"] == "running"
    assert client.data(EXECUTION, {"id": ref["planId"]})["execution"]["status"] == "running"

    (tmp_path / "gate.open").touch()

    def finished() -> Any:
        execution = client.data(EXECUTION, {"id": ref["planId"]})["execution"]
        return execution if execution["status"] != "running" else None

    execution = wait_for(finished, what="the execution to finish")
    assert execution["status"] == "succeeded" and execution["outputs"]["after"] == "opened"
    assert [c["step"] for c in calls(tmp_path) if c["event"] == "start"] == [
        "wait"
    ]  # joined, not run twice


def test_step_events_stream_over_sse(client: GraphQLClient, tmp_path: Path) -> None:
    ref = submit(client, GATED_PLAN)
    assert (
        client.data(EXECUTE, {"id": ref["planId"], "wait": False})["executePlan"]["status"]
        == "running"
    )

    # The first event is replayed (the step started before we subscribed); the gate opens only
    # once it has arrived, so everything after it is live.
    payloads = read_events(client, ref["planId"], on_first=(tmp_path / "gate.open").touch)
    events = [p["data"]["stepEvents"] for p in payloads]
    assert [(e["kind"], e["stepId"]) for e in events] == [
        ("started", "wait"),
        ("succeeded", "wait"),
        ("started", "after"),
        ("succeeded", "after"),
    ]
    assert {e["planId"] for e in events} == {ref["planId"]} and events[0]["tool"] == "gate"
    assert client.data(EXECUTION, {"id": ref["planId"]})["execution"]["status"] == "succeeded"

    replay = read_events(client, ref["planId"])  # a finished run: its events, then complete
    assert [p["data"]["stepEvents"]["kind"] for p in replay] == [e["kind"] for e in events]

    unknown = read_events(client, "plan_1700000000_unknown00")
    assert [codes(p) for p in unknown] == [["NOT_FOUND"]]


def test_step_events_opened_before_execute_plan_wait_for_the_run(
    client: GraphQLClient, tmp_path: Path
) -> None:

    ref = submit(client, GATED_PLAN)
    collected: list[list[dict[str, Any]]] = []
    reader = threading.Thread(
        target=lambda: collected.append(
            read_events(client, ref["planId"], on_first=(tmp_path / "gate.open").touch)
        )
    )
    reader.start()
    time.sleep(0.3)  # let the subscription open first (if it opens later, it replays instead)
    client.data(EXECUTE, {"id": ref["planId"], "wait": False})
    reader.join(timeout=60)
    assert not reader.is_alive()
    kinds = [
        (p["data"]["stepEvents"]["kind"], p["data"]["stepEvents"]["stepId"]) for p in collected[0]
    ]
    assert kinds == [
        ("started", "wait"),
        ("succeeded", "wait"),
        ("started", "after"),
        ("succeeded", "after"),
    ]

    never = submit(client, ECHO_PLAN)
    started = time.monotonic()
    assert read_events(client, never["planId"], wait_seconds=0.2) == []  # the wait is bounded
    assert time.monotonic() - started < 30


def test_step_events_of_a_run_in_a_worker_process(client: GraphQLClient, tmp_path: Path) -> None:
    """A plan queued for workers: the server does not run it, yet stepEvents follows it."""
    ref = submit(client, GATED_PLAN)
    cli = Cli(tmp_path, store_uri=f"sqlite:///{tmp_path / 'api.db'}")
    assert cli("execute", ref["planId"], "--enqueue", "--json").json()["status"] == "queued"
    worker = cli.popen("worker", "--once", "--poll-interval", "0.05", "--json")
    try:
        payloads = read_events(client, ref["planId"], on_first=(tmp_path / "gate.open").touch)
        out, err = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0, err
    assert json.loads(out)["finished"] == {ref["planId"]: "succeeded"}
    events = [p["data"]["stepEvents"] for p in payloads]
    assert [(e["kind"], e["stepId"], e["attempt"]) for e in events] == [
        ("started", "wait", 1),
        ("succeeded", "wait", 1),
        ("started", "after", 1),
        ("succeeded", "after", 1),
    ]
    assert read_events(client, ref["planId"]) == []  # finished elsewhere: completes at once


def test_tools(client: GraphQLClient) -> None:
    tools = client.data(
        "{ tools { name description parameters tags examples source stats { calls } } }"
    )["tools"]
    by_name = {tool["name"]: tool for tool in tools}
    assert {"createAuthor", "createBlog", "echo", "gate"} <= set(by_name)
    assert by_name["createAuthor"]["parameters"]["properties"]["email"]["type"] == "string"
    assert by_name["echo"]["source"] == "tests.support.tools"
    tag = by_name["createAuthor"]["tags"][0]
    tagged = client.data("query($t: String) { tools(tag: $t) { name tags } }", {"t": tag})["tools"]
    assert tagged and all(tag in tool["tags"] for tool in tagged)


# -- errors ----------------------------------------------------------------------------------------


def test_unknown_ids_are_null_with_not_found(client: GraphQLClient) -> None:
    plan_id, request_id = "plan_1700000000_unknown00", "req_1700000000_unknown00"
    for query, variables, field in [
        (PLAN, {"id": plan_id}, "plan"),
        (REQUEST, {"id": request_id}, "request"),
        (EXECUTION, {"id": plan_id}, "execution"),
    ]:
        body = client.gql(query, variables)
        assert body["data"] == {field: None}
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "NOT_FOUND" and error["path"] == [field]
        assert repr(variables["id"]) in error["message"]
    body = client.gql(EXECUTE, {"id": plan_id})
    assert body["data"] is None and codes(body) == ["NOT_FOUND"]
    body = client.gql(SUBMIT, {"plan": ECHO_PLAN, "requestId": request_id})
    assert body["data"] is None and codes(body) == ["NOT_FOUND"]


def test_invalid_plan_lists_every_issue(client: GraphQLClient) -> None:
    plan = {
        "steps": [
            {"id": "a", "tool": "ech", "parameters": {"value": 1}},
            {"id": "b", "tool": "echo", "parameters": {"value": "{{nowhere.x}}"}},
        ]
    }
    body = client.gql(SUBMIT, {"plan": plan})
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "PLAN_INVALID"
    issues = error["extensions"]["issues"]
    assert {issue["step"] for issue in issues} == {"a", "b"}
    assert any("did you mean 'echo'" in issue["message"] for issue in issues)
    assert any("nowhere" in issue["message"] for issue in issues)


def test_hostile_input_never_reaches_the_store(servers: ServerFactory, tmp_path: Path) -> None:
    spy = SpyStore(open_store(f"sqlite:///{tmp_path / 'spy.db'}"))
    client = servers(store=spy).client()

    # Operator-looking strings and wrong kinds of ID are refused by format, before any lookup.
    for query, value in [
        (PLAN, '{"$ne": null}'),
        (PLAN, "plan_1700000000_abcdef' OR '1'='1"),
        (PLAN, "req_1700000000_abcdefgh"),  # a request ID is not a plan ID
        (EXECUTION, '{"$gt": ""}'),
        (REQUEST, "plan_1700000000_abcdefgh"),
        (EXECUTE, "$where: sleep(1000)"),
    ]:
        body = client.gql(query, {"id": value})
        assert codes(body) == ["BAD_USER_INPUT"], (query, value, body)
        assert "is not a" in body["errors"][0]["message"]
    body = client.gql(CREATE, {"query": "x", "requestId": '{"$ne": null}'})
    assert codes(body) == ["BAD_USER_INPUT"]
    body = client.gql(SUBMIT, {"plan": ECHO_PLAN, "requestId": '{"$ne": null}'})
    assert codes(body) == ["BAD_USER_INPUT"]

    # Non-string IDs are rejected by the schema, as literals and as variables.
    body = client.gql("{ plan(planId: 5) { planId } }")
    assert codes(body) == ["GRAPHQL_VALIDATION_FAILED"] and body["data"] is None
    body = client.gql(PLAN, {"id": {"$gt": ""}})
    assert codes(body) == ["GRAPHQL_VALIDATION_FAILED"] and "String" in body["errors"][0]["message"]
    body = client.gql(EXECUTE, {"id": ["plan_1700000000_abcdefgh"]})
    assert codes(body) == ["GRAPHQL_VALIDATION_FAILED"]
    assert spy.calls == []

    # An operator object as the plan is just an invalid plan, and a string is not a file path.
    body = client.gql(SUBMIT, {"plan": {"$gt": ""}})
    assert codes(body) == ["PLAN_INVALID"] and "'$gt'" in body["errors"][0]["message"]
    body = client.gql(SUBMIT, {"plan": "/etc/passwd"})
    assert codes(body) == ["PLAN_INVALID"]
    assert "must be a JSON object" in body["errors"][0]["extensions"]["issues"][0]["message"]
    body = client.gql(SUBMIT, {"plan": [ECHO_PLAN]})
    assert codes(body) == ["PLAN_INVALID"]
    assert "save_plan" not in spy.calls
    client.close()


def test_malformed_requests(client: GraphQLClient) -> None:
    assert codes(client.gql("{ plan(planId: ")) == ["GRAPHQL_PARSE_FAILED"]
    assert codes(client.gql("{ nosuchfield }")) == ["GRAPHQL_VALIDATION_FAILED"]
    assert codes(client.gql("{ plan { planId } }")) == ["GRAPHQL_VALIDATION_FAILED"]  # arg missing
    not_json = client.post(content=b"{not json", headers={"content-type": "application/json"})
    assert not_json.status_code == 400
    nested = (
        b'{"query": "{ tools { name } }", "variables": {"x": '
        + b"[" * 200_000
        + b"]" * 200_000
        + b"}}"
    )
    too_deep = client.post(content=nested, headers={"content-type": "application/json"})
    assert too_deep.status_code == 400
    batch = client.post([{"query": "{ tools { name } }"}] * 2)
    assert batch.status_code == 400  # batching is off
    get_mutation = client.http.get(
        "/graphql", params={"query": 'mutation { executePlan(planId: "x") { status } }'}
    )
    assert get_mutation.status_code == 400  # no side effects through GET


class _BrokenStore(SpyStore):
    def __init__(self, inner: Any, error: Exception) -> None:
        super().__init__(inner)
        self.error = error

    def get_plan(self, plan_id: str) -> Any:
        raise self.error


def test_unexpected_errors_are_masked_and_logged(
    servers: ServerFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="toolplan.api")
    inner = open_store(f"sqlite:///{tmp_path / 'broken.db'}")
    client = servers(
        store=_BrokenStore(inner, RuntimeError("secret: /srv/db password=hunter2"))
    ).client()
    body = client.gql(PLAN, {"id": "plan_1700000000_abcdefgh"})
    assert body["data"] == {"plan": None}
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "INTERNAL_ERROR"
    reference = error["extensions"]["reference"]
    assert reference in error["message"] and "hunter2" not in json.dumps(body)
    logged = [r for r in caplog.records if reference in r.getMessage()]
    assert logged and logged[0].exc_info and "hunter2" in str(logged[0].exc_info[1])

    unavailable = _BrokenStore(inner, StoreUnavailable("cannot reach the store at sqlite:///x"))
    body = servers(store=unavailable).client().gql(PLAN, {"id": "plan_1700000000_abcdefgh"})
    assert codes(body) == ["STORE_UNAVAILABLE"] and "cannot reach" in body["errors"][0]["message"]
    inner.close()


# -- limits and authentication ---------------------------------------------------------------------


def test_request_size_and_shape_limits(servers: ServerFactory) -> None:
    client = servers().client()
    huge = {"query": "{ tools { name } }", "variables": {"pad": "x" * 1_100_000}}
    response = client.post(huge)
    assert response.status_code == 413
    assert codes(response.json()) == ["PAYLOAD_TOO_LARGE"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        yield b'{"query": "{ tools { name } }", "variables": {"pad": "'
        for _ in range(11):
            yield b"x" * 100_000
        yield b'"}}'

    response = client.http.post(
        "/graphql", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413

    long_query = "{ tools { name } }" + " " * 20_001
    body = client.gql(long_query)
    assert (
        codes(body) == ["GRAPHQL_VALIDATION_FAILED"]
        and "characters long" in body["errors"][0]["message"]
    )
    aliases = "{ " + " ".join(f"t{i}: tools {{ name }}" for i in range(21)) + " }"
    assert codes(client.gql(aliases)) == ["GRAPHQL_VALIDATION_FAILED"]
    deepest = (
        '{ request(requestId: "req_1700000000_abcdefgh") { plans { execution { steps { id } } } } }'
    )
    assert codes(client.gql(deepest)) == ["NOT_FOUND"]  # the deepest real query is allowed

    shallow = servers(api=ApiSettings(max_depth=2)).client()
    body = shallow.gql(deepest)
    assert codes(body) == ["GRAPHQL_VALIDATION_FAILED"] and "depth" in body["errors"][0]["message"]
    assert "errors" not in shallow.gql("{ tools { name } }")


def test_bearer_token(servers: ServerFactory) -> None:
    server = servers(api=ApiSettings(token=TOKEN))
    anonymous = server.client()
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        response = anonymous.post({"query": "{ tools { name } }"}, headers=headers)
        assert response.status_code == 401, headers
        assert codes(response.json()) == ["UNAUTHENTICATED"]
        assert response.headers["www-authenticate"] == "Bearer"
    refused = anonymous.http.get("/graphql", params={"query": "{ tools { name } }"})
    assert refused.status_code == 401
    page = anonymous.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()  # static page, no data

    authorized = server.client(token=TOKEN)
    assert authorized.data("{ tools { name } }")["tools"]
    ref = authorized.data(SUBMIT, {"plan": ECHO_PLAN})["submitPlan"]
    assert authorized.data(EXECUTE, {"id": ref["planId"]})["executePlan"]["status"] == "succeeded"


def test_without_token_only_loopback_names_are_served(client: GraphQLClient) -> None:
    response = client.post({"query": "{ tools { name } }"}, headers={"Host": "attacker.example:80"})
    assert response.status_code == 403 and codes(response.json()) == ["FORBIDDEN"]
    assert client.data("{ tools { name } }")["tools"]
    localhost = client.post({"query": "{ tools { name } }"}, headers={"Host": "localhost:8000"})
    assert localhost.status_code == 200


# -- planning through the fake OpenAI server -------------------------------------------------------


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch, servers: ServerFactory) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as fake:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
        yield fake


@pytest.mark.parametrize("rewrites", ["format", "all"])
def test_a_plans_changes_are_on_the_plan_type(
    llm: FakeOpenAIServer,
    servers: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
    rewrites: str,
) -> None:
    """Issue 43: what the rewrite rules changed in the model's answer is on ``Plan.changes``. A
    step written twice stays twice; a ``null`` for ``forEach`` is left out, and said. A server
    with ``TOOLPLAN_PLANNER_REWRITES=all`` does the same: the heuristic rules that merged the
    twins were removed (issue 53), and ``all`` means ``format``."""
    author = {"name": "Alice", "email": "alice@test.com"}
    twice = {
        "reasoning": "as asked",
        "steps": [
            {"id": "a", "tool": "createAuthor", "parameters": author, "confidence": 0.9},
            {
                "id": "b",
                "tool": "createAuthor",
                "parameters": author,
                "forEach": None,
                "confidence": 0.9,
            },
        ],
    }
    changes = "query($id: String!) { plan(planId: $id) { steps { id } changes } }"
    monkeypatch.setenv("TOOLPLAN_PLANNER_REWRITES", rewrites)
    client = servers().client()
    try:
        llm.script([Reply.structured(twice)])
        query = {"query": "create two authors named Alice"}
        ref = client.data(CREATE, query)["createPlanWithRequestId"]
        plan = client.data(changes, {"id": ref["planId"]})["plan"]
    finally:
        client.close()
    assert plan == {
        "steps": [{"id": "a"}, {"id": "b"}],
        "changes": [{"rule": "nulls", "step": "b", "before": "forEach null", "after": "dropped"}],
    }


def test_create_plan_and_add_versions(llm: FakeOpenAIServer, client: GraphQLClient) -> None:
    llm.script([Reply.structured(blog_plan(), usage=(10, 5))])
    first = client.data(CREATE, {"query": QUERY})["createPlanWithRequestId"]
    assert PLAN_ID.match(first["planId"]) and REQUEST_ID.match(first["requestId"])
    assert first["status"] == "planned"

    llm.script([Reply.structured(blog_plan())])
    second = client.data(
        CREATE, {"query": "again, for author Alice", "requestId": first["requestId"]}
    )["createPlanWithRequestId"]
    assert second["requestId"] == first["requestId"] and second["planId"] != first["planId"]
    request = client.data(REQUEST, {"id": first["requestId"]})["request"]
    assert [p["planId"] for p in request["plans"]] == [first["planId"], second["planId"]]
    plan = client.data(PLAN, {"id": first["planId"]})["plan"]
    assert [s["tool"] for s in plan["steps"]] == ["createAuthor", "createBlog"]
    assert plan["steps"][1]["parameters"]["authorId"] == "{{author._id}}"
    assert plan["layers"] == [["author"], ["blog"]]

    done = client.data(EXECUTE, {"id": first["planId"]})["executePlan"]
    assert done["status"] == "succeeded" and done["outputs"]["blog"]["title"] == "Hello"


def test_create_plan_with_the_clients_own_new_request_id(
    llm: FakeOpenAIServer, client: GraphQLClient
) -> None:
    own = "req_1700000000_clientown1"
    llm.script([Reply.structured(blog_plan()), Reply.structured(blog_plan())])
    first = client.data(CREATE, {"query": QUERY, "requestId": own})["createPlanWithRequestId"]
    assert first["requestId"] == own
    second = client.data(CREATE, {"query": "again, for author Alice", "requestId": own})[
        "createPlanWithRequestId"
    ]
    assert second["requestId"] == own and second["planId"] != first["planId"]
    request = client.data(REQUEST, {"id": own})["request"]
    assert request["query"] == QUERY  # the query that created it
    assert [p["planId"] for p in request["plans"]] == [first["planId"], second["planId"]]

    # A malformed ID (or a plan ID) is the client's mistake, found before the model is asked.
    requests_before = len(llm.requests)
    for wrong in ["req_123", "req_1700000000_UPPER", first["planId"], "client-42"]:
        body = client.gql(CREATE, {"query": "x", "requestId": wrong})
        assert codes(body) == ["BAD_USER_INPUT"], (wrong, body)
        assert "is not a" in body["errors"][0]["message"]
    assert len(llm.requests) == requests_before
    # submitPlan still adds versions to existing requests only
    body = client.gql(SUBMIT, {"plan": ECHO_PLAN, "requestId": "req_1700000000_clientown2"})
    assert codes(body) == ["NOT_FOUND"]


def test_a_created_plan_is_reused_by_run_query_once_executed(
    llm: FakeOpenAIServer, client: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``createPlanWithRequestId`` always plans, but indexes what it stores: after a successful
    ``executePlan``, ``runQuery`` reuses it and only the answer costs a call."""
    monkeypatch.delenv("TOOLPLAN_PLAN_REUSE", raising=False)
    llm.script([Reply.structured(blog_plan())] * 2)
    created = client.data(CREATE, {"query": QUERY})["createPlanWithRequestId"]
    again = client.data(CREATE, {"query": QUERY})["createPlanWithRequestId"]
    assert again["planId"] != created["planId"] and len(llm.requests) == 2
    done = client.data(EXECUTE, {"id": created["planId"]})["executePlan"]
    assert done["status"] == "succeeded"

    llm.script([Reply.structured({"action": "answer", "answer": "Alice has a blog."})])
    run = client.data(RUN_QUERY, {"query": QUERY})["runQuery"]
    assert run["answer"] == "Alice has a blog." and run["llmCalls"] == 1
    assert len(llm.requests) == 3
    (version,) = run["plans"]
    assert version["status"] == "succeeded"
    shown = client.data(PLAN, {"id": version["planId"]})["plan"]
    assert [s["tool"] for s in shown["steps"]] == ["createAuthor", "createBlog"]


def test_low_confidence_plan_needs_approval(llm: FakeOpenAIServer, client: GraphQLClient) -> None:
    llm.script([Reply.structured(blog_plan(confidence=0.2))])
    ref = client.data(CREATE, {"query": QUERY})["createPlanWithRequestId"]
    assert ref["status"] == "needs_review"
    for wait in (True, False):
        body = client.gql(EXECUTE, {"id": ref["planId"], "wait": wait})
        assert codes(body) == ["PLAN_NEEDS_REVIEW"]
    assert client.gql(EXECUTION, {"id": ref["planId"]}) == {"data": {"execution": None}}
    done = client.data(EXECUTE, {"id": ref["planId"], "approve": True})["executePlan"]
    assert done["status"] == "succeeded"


def test_unfixable_plan_is_plan_invalid(llm: FakeOpenAIServer, client: GraphQLClient) -> None:
    llm.script([Reply.structured(broken_blog_plan())] * ATTEMPTS)
    body = client.gql(CREATE, {"query": QUERY})
    assert codes(body) == ["PLAN_INVALID"]
    assert f"after {ATTEMPTS} LLM call(s)" in body["errors"][0]["message"]
    assert any("createAuthr" in i["message"] for i in body["errors"][0]["extensions"]["issues"])


def test_a_declined_query_is_plan_invalid_with_the_reason(
    llm: FakeOpenAIServer, client: GraphQLClient
) -> None:
    reason = "no tool plans routes"
    llm.script([Reply.structured({"reasoning": reason, "steps": [], "outputSteps": []})])
    body = client.gql(CREATE, {"query": "Find the fastest route to Boston"})
    assert codes(body) == ["PLAN_INVALID"] and len(llm.requests) == 1
    error = body["errors"][0]
    assert "no tool that does what the request asks" in error["message"]
    assert error["extensions"]["declined"] == reason
    assert [i["code"] for i in error["extensions"]["issues"]] == ["declined"]


def test_llm_unavailable(
    client: GraphQLClient, servers: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = client.gql(CREATE, {"query": QUERY})  # no OPENAI_API_KEY
    assert body["data"] is None and codes(body) == ["LLM_UNAVAILABLE"]
    assert "OPENAI_API_KEY" in body["errors"][0]["message"]
    assert client.data("{ tools { name } }")["tools"]  # everything else still works
    body = client.gql(CREATE, {"query": QUERY})  # tried again, and still says why
    assert codes(body) == ["LLM_UNAVAILABLE"] and "OPENAI_API_KEY" in body["errors"][0]["message"]

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")  # nobody listens
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    unreachable = servers().client()  # a server started with that configuration
    try:
        body = unreachable.gql(CREATE, {"query": QUERY})
    finally:
        unreachable.close()
    assert codes(body) == ["LLM_UNAVAILABLE"] and "cannot reach" in body["errors"][0]["message"]


# -- toolplan serve as a process -------------------------------------------------------------------


def test_serve_process_answers_and_stops_on_sigterm(cli: Cli) -> None:
    served = serve(cli)
    url = f"{served.url}/graphql"
    try:
        body = httpx.post(url, json={"query": "{ tools { name } }"}).json()
        assert "createAuthor" in [tool["name"] for tool in body["data"]["tools"]]
        submitted = httpx.post(url, json={"query": SUBMIT, "variables": {"plan": ECHO_PLAN}}).json()
        plan_id = submitted["data"]["submitPlan"]["planId"]
        done = httpx.post(url, json={"query": EXECUTE, "variables": {"id": plan_id}}).json()
        assert done["data"]["executePlan"]["status"] == "succeeded"
    finally:
        said = served.stop()
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status reports it.
    assert served.process.returncode in (0, -signal.SIGTERM), said
    assert "Application shutdown complete" in said
    assert "no TOOLPLAN_API_TOKEN" in said and "/graphql" in said
    assert "Traceback" not in said
    assert cli("show", plan_id, "--json").json()["execution"]["status"] == "succeeded"


def test_serve_process_with_token(cli: Cli) -> None:
    cli.env["TOOLPLAN_API_TOKEN"] = TOKEN
    served = serve(cli)
    url = f"{served.url}/graphql"
    try:
        assert httpx.post(url, json={"query": "{ tools { name } }"}).status_code == 401
        authorized = {"Authorization": f"Bearer {TOKEN}"}
        assert (
            httpx.post(url, json={"query": "{ tools { name } }"}, headers=authorized).status_code
            == 200
        )
    finally:
        said = served.stop()
    assert served.process.returncode in (0, -signal.SIGTERM) and "Authorization: Bearer" in said


def test_serve_takes_mcp_servers_and_the_model_as_the_other_commands_do(
    cli_llm: Cli, llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    servers = {"shop": {"command": sys.executable, "args": [str(MCP_SERVER), "stdio"]}}
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    llm.script([Reply.structured(blog_plan())])
    served = serve(cli_llm, "--mcp", str(config), "--model", "openai:gpt-serve-test")
    url = f"{served.url}/graphql"
    try:
        body = httpx.post(url, json={"query": "{ tools { name } }"}, timeout=30).json()
        names = [tool["name"] for tool in body["data"]["tools"]]
        assert "lookup_user" in names and "createAuthor" in names
        created = httpx.post(url, json={"query": CREATE, "variables": {"query": QUERY}}, timeout=30)
        assert created.json()["data"]["createPlanWithRequestId"]["status"] == "planned"
    finally:
        said = served.stop()
    assert served.process.returncode in (0, -signal.SIGTERM), said
    assert [request["model"] for request in llm.requests] == ["gpt-serve-test"]
    assert "planning with openai:gpt-serve-test" in said and "Traceback" not in said


def test_serve_process_whose_port_was_taken_starts_on_another(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its port is chosen free before the server binds it: another process can take it between."""
    with first_pick_taken(monkeypatch) as picks:
        served = serve(cli)
        try:
            taken, port = picks
            assert served.url == f"http://127.0.0.1:{port}"
            said = (cli.tmp / f"serve-{taken}.log").read_text()
            assert "address already in use" in said, "the first launch did not meet the taken port"
            assert served.gql("{ __typename }") == {"__typename": "Query"}
        finally:
            served.stop()


def test_serve_refuses_public_host_without_token(cli: Cli) -> None:
    done = cli("serve", "--host", "0.0.0.0", "--port", str(free_port()), timeout=30)
    assert done.code == 2
    assert "without authentication" in done.stderr and "TOOLPLAN_API_TOKEN" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_which_hosts_need_a_token(host: str, allowed: bool) -> None:
    assert is_loopback(host) is allowed
    if allowed:
        check_bind(ApiSettings(host=host))
    else:
        with pytest.raises(InvalidInput, match="TOOLPLAN_API_TOKEN"):
            check_bind(ApiSettings(host=host))
    check_bind(ApiSettings(host=host, token=TOKEN))  # a token allows any address


RUN_QUERY = """mutation($query: String!, $requestId: String, $maxReplans: Int) {
  runQuery(query: $query, requestId: $requestId, maxReplans: $maxReplans) {
    requestId answer plans { planId status replanOf } llmCalls usage
  }
}"""


def test_run_query_answers_and_replans(llm: FakeOpenAIServer, client: GraphQLClient) -> None:
    llm.script(
        [
            Reply.structured(orphan_blog_plan("alice"), usage=(10, 5)),
            Reply.structured({"action": "replan", "reason": "create Alice first"}, usage=(10, 5)),
            Reply.structured(blog_plan(), usage=(10, 5)),
            Reply.structured({"action": "answer", "answer": "Blog Hello created."}, usage=(10, 5)),
        ]
    )
    run = client.data(RUN_QUERY, {"query": QUERY})["runQuery"]
    assert run["answer"] == "Blog Hello created." and run["llmCalls"] == 4
    assert run["usage"] == {"inputTokens": 40, "outputTokens": 20}
    first, second = run["plans"]
    assert first["status"] == "failed" and first["replanOf"] is None
    assert second == {
        "planId": second["planId"],
        "status": "succeeded",
        "replanOf": first["planId"],
    }
    request = client.data(REQUEST, {"id": run["requestId"]})["request"]
    assert [p["planId"] for p in request["plans"]] == [first["planId"], second["planId"]]

    llm.script([])  # the model is down: UPSTREAM error, no traceback
    body = client.gql(RUN_QUERY, {"query": QUERY, "maxReplans": 0})
    assert body["errors"] and body["data"] is None


MAPPED_EXECUTION = """query($id: String!) {
  execution(planId: $id) { status steps { id status reason items } }
}"""


def test_the_execution_query_shows_a_maps_items_and_a_conditions_skip(
    client: GraphQLClient,
) -> None:
    plan = {
        "steps": [
            {"id": "each", "tool": "echo", "forEach": [1, 2], "parameters": {"value": "{{$item}}"}},
            {"id": "never", "tool": "echo", "when": False, "parameters": {"value": 0}},
        ]
    }
    ref = submit(client, plan)
    assert client.data(EXECUTE, {"id": ref["planId"]})["executePlan"]["status"] == "succeeded"
    steps = {
        s["id"]: s
        for s in client.data(MAPPED_EXECUTION, {"id": ref["planId"]})["execution"]["steps"]
    }
    assert [(i["index"], i["status"]) for i in steps["each"]["items"]] == [
        (0, "succeeded"),
        (1, "succeeded"),
    ]
    assert steps["each"]["reason"] is None
    assert (steps["never"]["status"], steps["never"]["reason"], steps["never"]["items"]) == (
        "skipped",
        "condition",
        None,
    )


PLANNING_EVENTS = """subscription($id: String!) {
  planningEvents(requestId: $id) {
    requestId kind model attempt attempts elapsedMs llmCalls usage step steps tokens problem
    changes
  }
}"""


@pytest.mark.usefixtures("json_plans")  # a model scripted to answer JSON
def test_run_query_planning_is_followed_live_by_request_id(
    llm: FakeOpenAIServer, client: GraphQLClient
) -> None:
    """Issue 28, no silence: a client subscribes to ``planningEvents`` with its own request ID,
    then calls ``runQuery`` with it, and sees the planner's progress while the model answers.
    No sleep: the model's answer waits until the subscriber has the first event."""
    own = "req_1700000000_progress1"
    seen_first = threading.Event()

    def once_followed(request: dict[str, Any]) -> Reply:
        assert seen_first.wait(timeout=60), "the subscriber never saw the planning event"
        return Reply.structured(blog_plan(), usage=(30, 12)).with_(pieces=20)

    llm.script([once_followed, Reply.structured({"action": "answer", "answer": "Done."})])
    collected: list[list[dict[str, Any]]] = []
    reader = threading.Thread(
        target=lambda: collected.append(
            read_events(client, own, on_first=seen_first.set, query=PLANNING_EVENTS)
        )
    )
    reader.start()
    run = client.data(RUN_QUERY, {"query": QUERY, "requestId": own})["runQuery"]
    reader.join(timeout=60)
    assert not reader.is_alive()
    assert run["requestId"] == own and run["answer"] == "Done."
    events = [p["data"]["planningEvents"] for p in collected[0]]
    assert [e["kind"] for e in events] == ["planning", "step", "step", "answered", "rewritten"]
    assert {e["requestId"] for e in events} == {own}
    planning, first, second, answered, rewritten = events
    assert rewritten["changes"] == [] and answered["changes"] is None  # stored as written
    assert planning["model"] == "openai:gpt-4o-mini" and planning["llmCalls"] == 0
    assert first["step"] == {
        "id": "author",
        "tool": "createAuthor",
        "parameters": {"name": "Alice", "email": "alice@test.com"},
    }
    assert second["step"]["tool"] == "createBlog" and second["steps"] == 2
    assert 0 < first["tokens"] < second["tokens"] < 20  # told while the answer streamed
    assert answered["steps"] == 2 and answered["usage"] == {"inputTokens": 30, "outputTokens": 12}
    assert all(e["problem"] is None for e in events)
    # a late subscriber gets the events of the planning that ended; a request that never plans
    # completes with none once the wait is over
    again = read_events(client, own, query=PLANNING_EVENTS)
    assert [p["data"]["planningEvents"]["kind"] for p in again] == [e["kind"] for e in events]
    quiet = PLANNING_EVENTS.replace(
        "planningEvents(requestId: $id)", "planningEvents(requestId: $id, waitSeconds: 0)"
    )
    assert read_events(client, "req_1700000000_neverplans", query=quiet) == []


def test_a_plan_written_as_python_through_the_api(
    llm: FakeOpenAIServer, servers: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: a server with ``TOOLPLAN_PLAN_FORMAT=python`` asks for Python calls (no schema)
    and stores the plan they describe; the planning record says which format."""
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "python")
    answer = (
        'author = createAuthor(name="Alice", email="alice@test.com")\n'
        'createBlog(authorId=author["_id"], title="Hello", content="about world")\n'
    )
    llm.script([Reply.content(answer)])
    client = servers().client()
    try:
        ref = client.data(CREATE, {"query": QUERY})["createPlanWithRequestId"]
        plan = client.data(
            "query($id: String!) { plan(planId: $id) { steps { id tool parameters } } }",
            {"id": ref["planId"]},
        )["plan"]
    finally:
        client.close()
    assert ref["status"] == "planned"
    assert plan["steps"] == [
        {
            "id": "author",
            "tool": "createAuthor",
            "parameters": {"name": "Alice", "email": "alice@test.com"},
        },
        {
            "id": "createBlog",
            "tool": "createBlog",
            "parameters": {
                "authorId": "{{author._id}}",
                "title": "Hello",
                "content": "about world",
            },
        },
    ]
    (request,) = llm.requests
    assert "response_format" not in request and "tools" not in request
