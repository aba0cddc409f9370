"""Plan estimates end to end: ``submit`` and ``plan`` (--json and the human output) and the
GraphQL ``Plan`` report ``estimate: {durationMs, costUsd, basis}``, from the tool durations
observed in the store (the mean per tool over the critical path, the default for a tool never
seen), the costs tools declare and the planning call's tokens at a price table; ``toolplan show``
puts the estimate beside the actual duration. The figures are checked against
what the store holds (exact arithmetic), never against the clock; how close estimates come to
actual durations is measured by ``python -m bench.estimates`` (BENCHMARKS.md).

On SQLite: how the MongoDB store keeps and returns the observed durations (``tool_durations``)
is the store conformance suite's (tests/unit/test_store_conformance.py).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import ServerFactory, server_factory
from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan
from toolplan.store import open_store

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    made = Cli(tmp_path)
    made.env["TOOLPLAN_ESTIMATE_DEFAULT_MS"] = "700"
    return made


WARM = {
    "steps": [
        {"id": f"w{i}", "tool": "sleepy", "parameters": {"label": "w", "seconds": 0.05}}
        for i in range(3)
    ]
}

CHAIN = {
    "steps": [
        {"id": "a", "tool": "sleepy", "parameters": {"label": "a", "seconds": 0.05}},
        {"id": "b", "tool": "sleepy", "parameters": {"label": "{{a.label}}", "seconds": 0.05}},
        {"id": "side", "tool": "sleepy", "parameters": {"label": "s", "seconds": 0.05}},
    ]
}


def _sleepy_mean(cli: Cli) -> float:
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as store:
        seen = store.tool_durations(["sleepy"], 100)["sleepy"]
    assert seen and min(seen) >= 50  # each call slept 50 ms
    return statistics.fmean(seen)


def test_submit_reports_the_estimate_and_show_the_actual(cli: Cli) -> None:
    # Nothing observed yet: every step at the default.
    fresh = cli("submit", "--file", cli.write_plan(CHAIN, "chain.json"), "--json")
    assert fresh.code == 0, fresh.stderr
    assert fresh.json()["estimate"] == {"durationMs": 1400.0, "costUsd": None, "basis": "default"}

    assert cli("run", "--file", cli.write_plan(WARM, "warm.json")).code == 0
    mean = _sleepy_mean(cli)
    submitted = cli("submit", "--file", cli.write_plan(CHAIN, "chain.json"), "--json").json()
    estimate = submitted["estimate"]
    # The critical path a -> b at the observed mean; the side step runs beside it.
    assert estimate["basis"] == "history" and estimate["costUsd"] is None
    assert estimate["durationMs"] == pytest.approx(2 * mean, abs=0.1)
    human = cli("submit", "--file", cli.write_plan(CHAIN, "chain.json"))
    # the same estimate as printed, not 2 * mean printed again: 104.99 ms and 105.01 ms round
    # to different hundredths of a second
    seconds = f"{estimate['durationMs'] / 1000:.2f} s (history)"
    assert f"estimate: {seconds}" in human.stdout

    # One tool never seen: mixed. lookup declares a cost of $0.001 per call.
    mixed = {
        "steps": [
            {"id": "a", "tool": "sleepy", "parameters": {"label": "a"}},
            {"id": "l1", "tool": "lookup", "parameters": {"key": "{{a.label}}"}},
            {"id": "l2", "tool": "lookup", "parameters": {"key": "z"}},
        ]
    }
    got = cli("submit", "--file", cli.write_plan(mixed, "mixed.json"), "--json").json()
    assert got["estimate"]["basis"] == "mixed"
    assert got["estimate"]["durationMs"] == pytest.approx(mean + 700, abs=0.1)
    assert got["estimate"]["costUsd"] == pytest.approx(0.002)

    # After execution, show puts the estimate beside the actual duration.
    plan_id = submitted["planId"]
    assert cli("execute", plan_id).code == 0
    shown = cli("show", plan_id, "--json").json()
    assert shown["estimate"] == estimate
    assert shown["actualDurationMs"] >= 100  # two 50 ms calls in a chain
    human_show = cli("show", plan_id).stdout
    assert f"estimate {seconds}" in human_show
    assert f"actual {shown['actualDurationMs'] / 1000:.2f} s" in human_show


def test_plan_prices_the_planning_call(cli: Cli, llm: FakeOpenAIServer, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:gpt-4o-mini": {"input": 0.15, "output": 0.6}}))
    cli.env.update(
        {
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": llm.base_url,
            "TOOLPLAN_LLM_RETRIES": "0",
            "TOOLPLAN_PRICES": str(prices),
        }
    )
    cli.env.pop("TOOLPLAN_MODEL", None)
    llm.script([Reply.structured(blog_plan(), usage=(2000, 1000))])
    done = cli("plan", QUERY, "--json")
    assert done.code == 0, done.stderr
    estimate = done.json()["estimate"]
    assert estimate["costUsd"] == pytest.approx((2000 * 0.15 + 1000 * 0.6) / 1e6)
    assert estimate["basis"] == "default"  # the blog tools never ran in this store
    steps = len(done.json()["plan"]["steps"])
    assert 700 <= estimate["durationMs"] <= 700 * steps

    llm.script([Reply.structured(blog_plan(), usage=(2000, 1000))])
    human = cli("plan", QUERY)
    assert human.code == 0, human.stderr
    assert "estimate: " in human.stdout and "$0.0009" in human.stdout

    llm.script([Reply.structured(blog_plan(), usage=(2000, 1000))])
    ran = cli("run", QUERY, "--no-answer", "--json")
    assert ran.code == 0, ran.stderr
    assert ran.json()["estimate"]["costUsd"] == pytest.approx(0.0009)

    prices.write_text("{broken")
    llm.script([Reply.structured(blog_plan())])
    bad = cli("plan", QUERY)
    assert bad.code == 2 and "TOOLPLAN_PRICES" in bad.stderr and "Traceback" not in bad.stderr


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[ServerFactory]:
    yield from server_factory(tmp_path)


def test_api_plan_reports_the_estimate(cli: Cli, servers: ServerFactory, monkeypatch: Any) -> None:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(cli.log))
    assert cli("run", "--file", cli.write_plan(WARM, "warm.json")).code == 0
    mean = _sleepy_mean(cli)
    store = open_store(cli.env["TOOLPLAN_STORE"])
    try:
        client = servers(store=store).client()
        submitted = client.data(
            "mutation($p: JSON!) { submitPlan(plan: $p) "
            "{ planId estimate { durationMs costUsd basis } } }",
            {"p": CHAIN},
        )["submitPlan"]
        assert submitted["estimate"]["basis"] == "history"
        assert submitted["estimate"]["durationMs"] == pytest.approx(2 * mean, abs=0.1)
        plan_id = submitted["planId"]
        query = (
            "query($id: String!) { plan(planId: $id) "
            "{ estimate { durationMs costUsd basis } actualDurationMs } }"
        )
        before = client.data(query, {"id": plan_id})["plan"]
        assert before["estimate"] == submitted["estimate"] and before["actualDurationMs"] is None
        client.data(
            "mutation($id: String!) { executePlan(planId: $id) { status } }", {"id": plan_id}
        )
        after = client.data(query, {"id": plan_id})["plan"]
        assert after["estimate"] == submitted["estimate"]
        assert after["actualDurationMs"] >= 100
    finally:
        store.close()
