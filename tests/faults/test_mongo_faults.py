"""MongoDB store faults: the server going away mid-run and coming back, and a document over
MongoDB's size limit.

The server is always a local jongodb the test owns. jongodb is in-memory: killed, it comes back
empty (``tests/e2e/test_cli_mongo.py`` checks that case gives a clean exit 3, then "does not
exist"). To see what a client sees when a *persistent* MongoDB dies and restarts, the CLI talks to
the server through a TCP proxy process that is killed with SIGKILL mid-run (connections reset,
the port refuses) and restarted on the same port, with the data intact behind it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.e2e.conftest import Cli
from tests.support.faults import GATED_PLAN, wait_for_call
from tests.support.mongo_server import JongoServer, fresh_db_name
from tests.support.tcp_proxy import TcpProxy
from toolplan.errors import InvalidInput
from toolplan.plan_format.ids import new_id
from toolplan.store import PlanRecord, RequestRecord, utc_now
from toolplan.store.mongo import MongoStore

pytestmark = [pytest.mark.mongodb, pytest.mark.e2e]


@pytest.fixture
def own_server() -> Iterator[JongoServer]:
    with JongoServer() as server:
        yield server


def _through(proxy: TcpProxy, uri: str) -> str:
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(netloc=f"127.0.0.1:{proxy.port}"))


def test_server_killed_mid_run_exit_3_then_back_resumes_without_rerunning(
    tmp_path: Path, own_server: JongoServer
) -> None:
    direct = own_server.uri_for(fresh_db_name("down"))
    with TcpProxy("127.0.0.1", urlsplit(direct).port or 27017) as proxy:
        uri = _through(proxy, direct)
        cli = Cli(tmp_path, store_uri=uri)
        cli.env.update({"TOOLPLAN_LEASE_SECONDS": "1.5", "TOOLPLAN_MONGO_TIMEOUT_MS": "500"})
        submitted = cli("submit", "--file", cli.write_plan(GATED_PLAN), "--json")
        assert submitted.code == 0, submitted.stderr
        plan_id = submitted.json()["planId"]
        process = cli.popen("execute", plan_id, "--json")
        wait_for_call(cli.calls, "blocked", process)

        proxy.kill()  # the server is gone for the client: resets, then refused connections
        cli.gate.touch()
        out, err = process.communicate(timeout=60)
        assert process.returncode == 3, (out, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        payload = json.loads(out)
        assert payload["exitCode"] == 3 and payload["resumable"] is True
        assert f"cannot reach the MongoDB store {uri!r}" in payload["error"]

        down = cli("execute", plan_id, "--json")  # still down: the same clean exit 3
        assert down.code == 3 and json.loads(down.stdout)["exitCode"] == 3

        proxy.start()  # back, on the same port, with the data intact
        resumed = cli("execute", plan_id, "--json")
        assert resumed.code == 0, resumed.stderr
        assert resumed.json()["status"] == "succeeded"
    starts = [c["step"] for c in cli.calls() if c["event"] in ("start", "call")]
    assert starts.count("first") == 1  # finished before the outage: not called again
    assert starts.count("blocked") == 2  # interrupted: called again...
    assert {c["key"] for c in cli.calls() if c["step"] == "blocked"} == {f"{plan_id}:blocked"}


def test_document_over_the_size_limit_is_invalid_input_and_nothing_is_stored(
    mongodb_uri: str,
) -> None:
    """The store's own backstop (the edge limits refuse such plans before they get here): the
    driver's ``DocumentTooLarge`` becomes InvalidInput naming the limit, and no request or plan
    is left behind."""
    store = MongoStore(mongodb_uri)
    try:
        request = RequestRecord(new_id("req"), "huge", utc_now())
        plan = PlanRecord(
            plan_id=new_id("plan"),
            request_id=request.request_id,
            plan={
                "steps": [{"id": "a", "tool": "echo", "parameters": {"value": "x" * 20_000_000}}]
            },
            analysis={},
            status="planned",
            created_at=utc_now(),
        )
        with pytest.raises(InvalidInput, match=r"too large for the MongoDB store .*16 MB"):
            store.save_plan(plan, request)
        assert store.get_plan(plan.plan_id) is None
        assert store.get_request(request.request_id) is None
    finally:
        store.close()


def test_twenty_megabyte_parameter_exit_2_with_the_limit_nothing_stored(
    tmp_path: Path, mongodb_uri: str
) -> None:
    """The table's 20 MB string on MongoDB: the edge refuses it with the size limit before the
    store sees it; with the edge limits raised past it, the store's own backstop refuses it
    (MongoDB's 16 MB), still exit 2 and still nothing stored."""
    cli = Cli(tmp_path, store_uri=mongodb_uri)
    plan = {"steps": [{"id": "a", "tool": "echo", "parameters": {"value": "x" * 20_000_000}}]}
    path = cli.write_plan(plan)
    for env, words in (
        ({}, "TOOLPLAN_MAX_PLAN_BYTES"),
        (
            {"TOOLPLAN_MAX_PLAN_BYTES": "50000000", "TOOLPLAN_MAX_STRING_CHARS": "50000000"},
            "16 MB",
        ),
    ):
        cli.env.update(env)
        done = cli("submit", "--file", path, "--json")
        assert done.code == 2, done.stderr[-2000:]
        assert "Traceback" not in done.stderr and len(done.stdout.splitlines()) == 1
        payload = json.loads(done.stdout)
        assert payload["exitCode"] == 2 and words in payload["error"], payload["error"]
    store = MongoStore(mongodb_uri)
    try:
        assert store._plans.count_documents({}) == 0
        assert store._requests.count_documents({}) == 0
    finally:
        store.close()
