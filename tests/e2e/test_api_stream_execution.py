"""Streamed plan execution through the GraphQL API (``runQuery``: the agent graph), on SQLite and
MongoDB: a read-only step starts while the scripted model writes the plan, the side effect only
once the plan is stored; ``planningEvents`` carry ``early``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import ServerFactory, server_factory
from tests.e2e.test_stream_execution import ANSWER, PLAN, QUERY, event_of, streamed
from tests.support.fake_openai import FakeOpenAIServer, Reply
from toolplan.store import open_store

pytestmark = [pytest.mark.e2e]

RUN_QUERY = """mutation($query: String!, $requestId: String) {
  runQuery(query: $query, requestId: $requestId) { requestId answer plans { planId status } }
}"""


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerFactory]:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "python")
    monkeypatch.setenv("TOOLPLAN_STREAM_EXECUTION", "1")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    yield from server_factory(tmp_path)


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "calls.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().split("\n")[:-1]]


@pytest.mark.parametrize(
    "store_kind", ["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)]
)
def test_run_query_starts_read_only_steps_early_and_side_effects_after_the_plan(
    servers: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    store_kind: str,
) -> None:
    plan = PLAN.replace('w = wire_money(to="acct", amount=5)\n', "")
    seen: dict[str, Any] = {}

    def hold(index: int) -> None:
        if index == event_of(plan, "e = ") + 1:
            deadline = time.monotonic() + 30
            while len([c for c in calls(tmp_path) if "key_arg" in c]) < 2:
                assert time.monotonic() < deadline, "the lookups did not start early"
                threading.Event().wait(0.01)
            seen["held"] = True
        seen["before_end"] = calls(tmp_path)

    with FakeOpenAIServer(api_key="sk-test") as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        store = None
        if store_kind == "mongodb":
            store = open_store(request.getfixturevalue("mongodb_uri"))
        server = servers(store=store)
        client = server.client()
        try:
            llm.script([streamed(plan, hold), Reply.structured(ANSWER)])
            run = client.data(RUN_QUERY, {"query": QUERY})["runQuery"]
        finally:
            client.close()
        assert run["answer"] == "The value is X."
        assert seen["held"] is True
        assert [c for c in seen["before_end"] if "key_arg" not in c] == []
        assert [c["key_arg"] for c in calls(tmp_path) if "key_arg" in c] == ["x", "X"]
        (version,) = run["plans"]
        assert version["status"] == "succeeded"
        record = server.store.get_plan(version["planId"])
        assert record is not None
        assert {e["step"]: e["status"] for e in record.meta["earlyStarts"]} == {
            "a": "adopted",
            "b": "adopted",
        }
        if store is not None:
            store.close()
