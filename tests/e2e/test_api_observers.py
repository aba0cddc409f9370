"""The API's ``stepEvents`` fan-out is an observer of a run, never part of it: a server whose
event hub fails on every event (a subscriber queue that overflows) still runs plans to their end
and records them truly, and subscribers still receive the events."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.api_support import ApiServer, server_factory
from tests.e2e.test_api import EXECUTE, EXECUTION, GATED_PLAN, read_events, submit
from tests.support.observers import OverflowingHub
from toolplan.api import context as api_context

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(tmp_path / "gate.open"))
    monkeypatch.setattr(api_context, "EventHub", OverflowingHub)
    for start in server_factory(tmp_path):
        yield start()


def test_a_failing_event_fan_out_changes_nothing_in_the_run(
    server: ApiServer, tmp_path: Path
) -> None:
    client = server.client()
    plan_id = submit(client, GATED_PLAN)["planId"]

    started = client.data(EXECUTE, {"id": plan_id, "wait": False})["executePlan"]
    assert started["status"] == "running"  # returned at the first step, though publishing failed
    payloads = read_events(client, plan_id, on_first=(tmp_path / "gate.open").touch)

    events = [
        (p["data"]["stepEvents"]["kind"], p["data"]["stepEvents"]["stepId"]) for p in payloads
    ]
    assert events == [
        ("started", "wait"),
        ("succeeded", "wait"),
        ("started", "after"),
        ("succeeded", "after"),
    ]
    execution = client.data(EXECUTION, {"id": plan_id})["execution"]
    assert execution["status"] == "succeeded"
    assert [(s["id"], s["status"]) for s in execution["steps"]] == [
        ("wait", "succeeded"),
        ("after", "succeeded"),
    ]
    client.close()
