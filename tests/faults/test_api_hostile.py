"""Hostile GraphQL requests against a real uvicorn server: a 400 or a GraphQL error with a code,
never a 500, never ``INTERNAL_ERROR``, and no traceback in the server log; CPU-heavy
validation runs off the event loop."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import ServerFactory, server_factory, wait_for
from tests.support.faults import GATED_PLAN
from toolplan.service import operations

pytestmark = pytest.mark.e2e

SUBMIT = "mutation($plan: JSON!) { submitPlan(plan: $plan) { planId } }"
PLAN_QUERY = "mutation($q: String!) { createPlanWithRequestId(query: $q) { planId } }"


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[ServerFactory]:
    yield from server_factory(tmp_path)


@pytest.fixture
def errors_logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    caplog.set_level(logging.ERROR)
    return caplog.records


def _raw(client: Any, body: bytes) -> Any:
    return client.http.post("/graphql", content=body, headers={"content-type": "application/json"})


def _codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors") or []]


def test_bodies_that_are_not_a_json_object_get_400_with_a_graphql_error(
    start_server: ServerFactory, errors_logged: list[logging.LogRecord]
) -> None:
    client = start_server().client()
    query = json.dumps({"query": "{ tools { name } }"})
    for body in (
        b"null",
        b"123",
        b"true",
        b'"query"',
        query.encode("utf-16"),  # UTF-16 with a byte-order mark
        query.encode("utf-16-le"),
        b'{"query": "{ tools { name } }", "variables": {"x": ' + b"9" * 5000 + b"}}",
    ):
        response = _raw(client, body)
        assert response.status_code == 400, (body[:20], response.text)
        assert _codes(response.json()) == ["BAD_REQUEST"], response.text
    utf8_bom = _raw(client, b"\xef\xbb\xbf" + query.encode())
    assert utf8_bom.status_code == 200 and "errors" not in utf8_bom.json()
    assert errors_logged == []
    client.close()


def test_lone_surrogates_and_undefined_fragments_are_user_errors(
    start_server: ServerFactory, errors_logged: list[logging.LogRecord]
) -> None:
    client = start_server().client()
    plan = {"steps": [{"id": "a", "tool": "echo", "parameters": {"value": "x\ud800"}}]}
    keyed = {"steps": [{"id": "a", "tool": "echo", "parameters": {"v\udc00": 1}}]}
    for variables, code in (
        ({"plan": plan}, "PLAN_INVALID"),
        ({"plan": keyed}, "PLAN_INVALID"),
        ({"plan": {**plan["steps"][0], "reasoning": "\udfff"}}, "PLAN_INVALID"),
    ):
        body = json.dumps({"query": SUBMIT, "variables": variables}).encode()  # \ud800 escapes
        answer = _raw(client, body).json()
        assert _codes(answer) == [code], answer
    # The query text as a variable: refused before any model is set up (this server has none,
    # which would be LLM_UNAVAILABLE); raw inside the GraphQL document: a parse error.
    as_variable = json.dumps({"query": PLAN_QUERY, "variables": {"q": "make\ud800"}}).encode()
    answer = _raw(client, as_variable).json()
    assert (
        _codes(answer) == ["BAD_USER_INPUT"] and "lone surrogate" in answer["errors"][0]["message"]
    )
    document = 'mutation { createPlanWithRequestId(query: "make\ud800 it") { planId } }'
    answer = _raw(client, json.dumps({"query": document}).encode()).json()
    assert _codes(answer) == ["GRAPHQL_PARSE_FAILED"], answer  # the lexer refuses it
    for fragment in ("{ ...Missing }", "query { ...A } fragment A on Query { ...B }"):
        answer = _raw(client, json.dumps({"query": fragment}).encode()).json()
        assert _codes(answer) == ["GRAPHQL_VALIDATION_FAILED"], answer
        assert "Unknown fragment" in answer["errors"][0]["message"]
    assert errors_logged == []  # no INTERNAL_ERROR, no traceback in the server log
    client.close()


def test_unclosed_braces_are_answered_and_validation_runs_off_the_event_loop(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 40 KB string of unclosed ``{{`` used to stall the whole server. Now it is parsed in
    linear time, and limits and validation run in a worker thread, never on the server's event
    loop thread (the one uvicorn runs on), so other requests are served meanwhile."""
    seen: list[str] = []
    load = operations.load_plan

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return load(*args, **kwargs)

    monkeypatch.setattr(operations, "load_plan", spy)
    client = start_server().client()
    plan = {
        "steps": [{"id": "w", "tool": "get_weather", "parameters": {"location": "{{" * 20_000}}]
    }
    answer = client.gql(SUBMIT, {"plan": plan})
    assert "errors" not in answer, answer
    assert seen and all(name != "api-server" for name in seen), seen
    broken = {"steps": [{"id": "w", "tool": "echo", "parameters": {"value": "{{" * 20_000 + "}}"}}]}
    assert _codes(client.gql(SUBMIT, {"plan": broken})) == ["PLAN_INVALID"]
    assert client.data("{ tools { name } }")["tools"]
    client.close()


EXECUTE = (
    "mutation($id: String!, $wait: Boolean) { executePlan(planId: $id, wait: $wait) { status } }"
)


def test_store_locked_mid_run_in_the_server_then_execute_plan_resumes(
    start_server: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run inside the API server meets a locked store: STORE_UNAVAILABLE, the execution stays
    unfinished, and once the lock is gone ``executePlan`` in the same server resumes it at once
    (the server takes back its own lease) without calling finished steps again."""
    from tests.support.faults import LockHolder

    log, gate = tmp_path / "calls.jsonl", tmp_path / "gate"
    monkeypatch.setenv("TOOLPLAN_STORE_BUSY_TIMEOUT", "0.5")
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(log))
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(gate))
    client = start_server().client()
    plan_id = client.data(SUBMIT, {"plan": GATED_PLAN})["submitPlan"]["planId"]

    def calls() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    assert (
        client.data(EXECUTE, {"id": plan_id, "wait": False})["executePlan"]["status"] == "running"
    )
    wait_for(lambda: any(c["step"] == "blocked" for c in calls()), what="the gate step")
    with LockHolder(tmp_path / "api.db"):
        gate.touch()
        answer = client.gql(EXECUTE, {"id": plan_id, "wait": True})
        assert _codes(answer) == ["STORE_UNAVAILABLE"], answer
        assert "is locked by another process" in answer["errors"][0]["message"]
        read = client.data(
            "query($id: String!) { execution(planId: $id) { status } }", {"id": plan_id}
        )
        assert read["execution"]["status"] == "running"  # not partial: nothing recorded failed
    done = client.data(EXECUTE, {"id": plan_id, "wait": True})["executePlan"]
    assert done["status"] == "succeeded"
    starts = [c["step"] for c in calls() if c["event"] in ("start", "call")]
    assert starts.count("first") == 1 and starts.count("blocked") == 2
    assert {c["key"] for c in calls() if c["step"] == "blocked"} == {f"{plan_id}:blocked"}
    client.close()
