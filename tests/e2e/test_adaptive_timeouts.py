"""Adaptive timeouts end to end: once a tool has enough observed durations, a step calling it
without its own ``timeout`` gets one from that history (p99 x factor, clamped to [1 s, the
default]); the step records the effective timeout and its source, ``toolplan show`` and the
GraphQL API show them, and the timeout really cuts a slow call that the default would have let
through. The rule itself (quantile, clamping) is unit-tested in
tests/unit/test_timeouts.py; its false-timeout rate is measured in bench (BENCHMARKS.md).

On SQLite: how the MongoDB store keeps and returns the observed durations (``tool_durations``)
is the store conformance suite's (tests/unit/test_store_conformance.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import ServerFactory, server_factory
from tests.e2e.conftest import Cli
from toolplan.store import open_store

pytestmark = [pytest.mark.e2e]

OBSERVATIONS = 3


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    made = Cli(tmp_path)
    made.env["TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS"] = str(OBSERVATIONS)
    made.env["TOOLPLAN_TIMEOUT"] = "20"
    return made


def _steps(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in result["steps"]}


def _fast_sleepy_history(cli: Cli, count: int = OBSERVATIONS) -> dict[str, Any]:
    """``count`` quick successful calls of ``sleepy``: its history (milliseconds each)."""
    plan = {
        "steps": [
            {"id": f"warm{i}", "tool": "sleepy", "parameters": {"label": f"w{i}"}}
            for i in range(count)
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan, "warm.json"), "--json")
    assert done.code == 0, done.stderr
    return done.json()


SLOW_PLAN = {
    "steps": [
        # 1.5 s: the 20 s default lets it through; 1 s learned from history cuts it.
        {
            "id": "slow",
            "tool": "sleepy",
            "parameters": {"label": "s", "seconds": 1.5},
            "maxAttempts": 1,
        },
        {"id": "own", "tool": "sleepy", "parameters": {"label": "o"}, "timeout": 5},
        {"id": "fresh", "tool": "echo", "parameters": {"value": 1}},
    ]
}


def test_history_sets_the_timeout_and_show_says_so(cli: Cli) -> None:
    # Before enough observations: the default, recorded as such.
    warm = _fast_sleepy_history(cli, OBSERVATIONS - 1)
    assert {(s["timeout"], s["timeoutSource"]) for s in warm["steps"]} == {(20, "default")}
    _fast_sleepy_history(cli, 1)  # now sleepy has OBSERVATIONS successful calls

    result = cli("run", "--file", cli.write_plan(SLOW_PLAN), "--json")
    assert result.code == 1
    steps = _steps(result.json())
    # sleepy's history is milliseconds: p99 x 3 is far under the 1 s floor, so 1 s.
    assert (steps["slow"]["timeout"], steps["slow"]["timeoutSource"]) == (1, "history")
    assert steps["slow"]["status"] == "failed"
    assert "timed out after 1s" in steps["slow"]["error"]
    assert (steps["own"]["timeout"], steps["own"]["timeoutSource"]) == (5, "plan")
    assert steps["own"]["status"] == "succeeded"
    assert (steps["fresh"]["timeout"], steps["fresh"]["timeoutSource"]) == (20, "default")

    shown = cli("show", result.json()["planId"])
    assert shown.code == 0
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line.strip()}
    assert "1 s (history)" in lines["slow"]
    assert "5 s (plan)" in lines["own"]
    assert "20 s (default)" in lines["fresh"]
    as_json = cli("show", result.json()["planId"], "--json").json()
    assert _steps(as_json["execution"])["slow"]["timeoutSource"] == "history"


def test_turned_off_the_default_applies(cli: Cli) -> None:
    _fast_sleepy_history(cli)
    cli.env["TOOLPLAN_ADAPTIVE_TIMEOUTS"] = "0"
    result = cli("run", "--file", cli.write_plan(SLOW_PLAN), "--json")
    assert result.code == 0, result.stdout
    slow = _steps(result.json())["slow"]
    assert (slow["status"], slow["timeout"], slow["timeoutSource"]) == ("succeeded", 20, "default")


def test_bad_settings_are_one_line_errors(cli: Cli) -> None:
    cli.env["TOOLPLAN_TIMEOUT_FACTOR"] = "0.5"
    bad = cli("run", "--file", cli.write_plan(SLOW_PLAN))
    assert bad.code == 2
    assert "TOOLPLAN_TIMEOUT_FACTOR must be at least 1" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[ServerFactory]:
    yield from server_factory(tmp_path)


def test_api_shows_the_effective_timeout(
    cli: Cli, servers: ServerFactory, monkeypatch: Any
) -> None:
    # The server runs with the default policy: 20 observations, a 30 s default timeout.
    _fast_sleepy_history(cli, 20)
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", cli.env["TOOLPLAN_TEST_LOG"])
    store = open_store(cli.env["TOOLPLAN_STORE"])
    try:
        client = servers(store=store).client()
        plan_id = client.data(
            "mutation($p: JSON!) { submitPlan(plan: $p) { planId } }", {"p": SLOW_PLAN}
        )["submitPlan"]["planId"]
        executed = client.data(
            "mutation($id: String!) { executePlan(planId: $id) "
            "{ status steps { id status timeout timeoutSource error } } }",
            {"id": plan_id},
        )["executePlan"]
        steps = {step["id"]: step for step in executed["steps"]}
        assert (steps["slow"]["timeout"], steps["slow"]["timeoutSource"]) == (1.0, "history")
        assert "timed out after 1s" in steps["slow"]["error"]
        assert (steps["own"]["timeout"], steps["own"]["timeoutSource"]) == (5.0, "plan")
        assert (steps["fresh"]["timeout"], steps["fresh"]["timeoutSource"]) == (30.0, "default")
        # The same record read back, as `toolplan show` reads it.
        read = client.data(
            "query($id: String!) { execution(planId: $id) { steps { id timeoutSource } } }",
            {"id": plan_id},
        )["execution"]
        assert {s["id"]: s["timeoutSource"] for s in read["steps"]}["slow"] == "history"
    finally:
        store.close()
