"""Plan estimates: the schedule over observed tool durations (mean per tool, the default for a
tool never seen), the basis, costs declared by tools and planning calls at a price table."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path
from typing import get_args

import pytest
from langchain_core.tools import tool

from toolplan.config import Settings
from toolplan.config.settings import EstimateSettings
from toolplan.errors import InvalidInput
from toolplan.plan_format.plan import parse_plan
from toolplan.service.estimates import (
    Estimate,
    EstimateBasis,
    estimate_plan,
    load_prices,
    planning_cost,
    schedule_length,
)
from toolplan.tools import ToolCatalog, tagged
from toolplan.validation import analyze


def test_schedule_length_is_the_critical_path_unless_the_limit_binds() -> None:
    order = ["a", "b", "c", "d"]
    deps = {"a": [], "b": ["a"], "c": [], "d": ["b", "c"]}
    weights = {"a": 10.0, "b": 20.0, "c": 25.0, "d": 5.0}
    assert schedule_length(order, deps, weights, 10) == 35.0  # a -> b -> d
    # Four independent 10 ms steps two at a time: two rounds.
    flat = {s: [] for s in order}
    assert schedule_length(order, flat, dict.fromkeys(order, 10.0), 2) == 20.0
    assert schedule_length(order, flat, dict.fromkeys(order, 10.0), 4) == 10.0
    assert schedule_length(["x"], {"x": []}, {"x": 0.0}, 1) == 0.0


@tool
def fast(x: int = 0) -> dict[str, int]:
    """A tool with a history."""
    return {"x": x}


@tool
def paid(x: int = 0) -> dict[str, int]:
    """A tool that costs money per call."""
    return {"x": x}


@tool
def unseen(x: int = 0) -> dict[str, int]:
    """A tool never run."""
    return {"x": x}


tagged(paid, cost_usd=0.002)
for _pure in (fast, paid, unseen):  # no side effect: no order among them but their data's
    tagged(_pure, "read-only")
CATALOG = ToolCatalog([fast, paid, unseen], source="test")


class _History:
    def __init__(self, durations: dict[str, list[float]]) -> None:
        self.durations = durations
        self.asked: list[list[str]] = []

    def tool_durations(self, tools: Collection[str], limit: int) -> dict[str, list[float]]:
        self.asked.append(sorted(tools))
        return {t: self.durations.get(t, [])[:limit] for t in tools}


def _estimate(plan: dict[str, object], history: _History, **settings: object) -> Estimate:
    parsed = parse_plan(plan)
    analysis = analyze(parsed, CATALOG)
    return estimate_plan(parsed, analysis, CATALOG, history, EstimateSettings(**settings))  # type: ignore[arg-type]


CHAIN = {
    "steps": [
        {"id": "a", "tool": "fast", "parameters": {}},
        {"id": "b", "tool": "fast", "parameters": {"x": "{{a.x}}"}},
        {"id": "side", "tool": "fast", "parameters": {}},
    ]
}


def test_duration_is_the_critical_path_over_mean_durations() -> None:
    history = _History({"fast": [100.0, 200.0, 600.0]})  # mean 300, median 200
    estimate = _estimate(CHAIN, history)
    assert estimate == Estimate(600.0, None, "history")
    assert history.asked == [["fast"]]  # one read
    assert estimate.to_json() == {"durationMs": 600.0, "costUsd": None, "basis": "history"}
    assert Estimate.from_json(estimate.to_json()) == estimate


def test_basis_says_what_the_duration_rests_on() -> None:
    mixed = {
        "steps": [
            {"id": "a", "tool": "fast", "parameters": {}},
            {"id": "b", "tool": "unseen", "parameters": {"x": "{{a.x}}"}},
        ]
    }
    history = _History({"fast": [50.0]})
    assert _estimate(mixed, history, default_ms=700.0) == Estimate(750.0, None, "mixed")
    only_new = {"steps": [{"id": "n", "tool": "unseen", "parameters": {}}]}
    assert _estimate(only_new, history) == Estimate(1000.0, None, "default")


def test_a_map_counts_one_call_per_item_once_its_list_is_known() -> None:
    history = _History({"fast": [100.0], "paid": [10.0]})
    known = {
        "steps": [
            {
                "id": "m",
                "tool": "paid",
                "forEach": [1, 2, 3, 4, 5],
                "parameters": {"x": "{{$item}}"},
            }
        ]
    }
    # Five items two at a time: three rounds of 10 ms; five calls at 0.002.
    assert _estimate(known, history, concurrency=2) == Estimate(30.0, 0.01, "history")
    empty = {"steps": [{"id": "m", "tool": "paid", "forEach": [], "parameters": {}}]}
    assert _estimate(empty, history) == Estimate(0.0, 0.0, "history")
    later = {
        "steps": [
            {"id": "a", "tool": "fast", "parameters": {}},
            {"id": "m", "tool": "paid", "forEach": "{{a.items}}", "parameters": {}},
        ]
    }
    estimate = _estimate(later, history)
    assert estimate == Estimate(110.0, 0.002, "history, item count unknown")
    assert Estimate.from_json(estimate.to_json()) == estimate


def test_every_basis_the_code_writes_is_documented() -> None:
    # The code wrote "mixed, item count unknown", which the docs did not list (issue 52).
    docs = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text()
    start = docs.index("- **`basis`**:") + len("- **`basis`**:")
    basis_line = docs[start:].split("\n- ", 1)[0]
    documented = set(re.findall(r"`([a-z, ]+)`", basis_line)) - {", item count unknown"}
    assert documented == set(get_args(EstimateBasis))


def test_cost_sums_declared_tool_costs_and_priced_planning(tmp_path: Path) -> None:
    plan = {
        "steps": [
            {"id": "p1", "tool": "paid", "parameters": {}},
            {"id": "p2", "tool": "paid", "parameters": {}},
            {"id": "f", "tool": "fast", "parameters": {}},
        ]
    }
    history = _History({})
    assert _estimate(plan, history).cost_usd == pytest.approx(0.004)  # fast counts as free
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input": 0.15, "output": 0.6}}))
    parsed = parse_plan(plan)
    meta = {"model": "openai:gpt-4o-mini", "usage": {"inputTokens": 2000, "outputTokens": 1000}}
    estimate = estimate_plan(
        parsed,
        analyze(parsed, CATALOG),
        CATALOG,
        history,  # type: ignore[arg-type]
        EstimateSettings(prices_file=str(prices)),
        meta=meta,
    )
    assert estimate.cost_usd == pytest.approx(0.004 + (2000 * 0.15 + 1000 * 0.6) / 1e6)


def test_planning_cost_reads_the_price_table(tmp_path: Path) -> None:
    table = {
        "openai:gpt-4o-mini": {"input": 0.15, "output": 0.6, "cachedInput": 0.075},
        "local": {"input": 0, "output": 0},
    }
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(table))
    prices = load_prices(str(path))
    usage = {"inputTokens": 1000, "outputTokens": 100, "cachedInputTokens": 400}
    cost = planning_cost({"model": "openai:gpt-4o-mini", "usage": usage}, prices)
    assert cost == pytest.approx((600 * 0.15 + 400 * 0.075 + 100 * 0.6) / 1e6)
    assert planning_cost({"model": "openai:local", "usage": usage}, prices) == 0.0
    assert planning_cost({"model": "openai:other", "usage": usage}, prices) is None
    assert planning_cost({}, prices) is None  # not planned by an LLM


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not a JSON file"),
        ("[1, 2]", "must be a JSON object"),
        ('{"m": {"input": -1, "output": 1}}', "needs non-negative numbers"),
        ('{"m": {"input": 1}}', "needs non-negative numbers"),
    ],
)
def test_a_bad_price_table_is_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / f"prices-{abs(hash(content))}.json"
    path.write_text(content)
    with pytest.raises(InvalidInput, match=message) as caught:
        load_prices(str(path))
    assert "TOOLPLAN_PRICES" in caught.value.message
    with pytest.raises(InvalidInput, match="cannot be read"):
        load_prices(str(tmp_path / "missing.json"))


def test_settings_read_the_estimate_variables() -> None:
    settings = Settings.from_env(
        {
            "TOOLPLAN_ESTIMATE_DEFAULT_MS": "250",
            "TOOLPLAN_PRICES": "/p.json",
            "TOOLPLAN_CONCURRENCY": "3",
        }
    )
    assert settings.estimates == EstimateSettings(250.0, "/p.json", 3)
    assert settings.with_overrides(concurrency=5).estimates.concurrency == 5
    with pytest.raises(InvalidInput, match="TOOLPLAN_ESTIMATE_DEFAULT_MS"):
        Settings.from_env({"TOOLPLAN_ESTIMATE_DEFAULT_MS": "-1"})


def test_tagged_checks_the_cost() -> None:
    with pytest.raises(ValueError, match="cost_usd"):
        tagged(unseen, cost_usd=-1)
    with pytest.raises(ValueError, match="cost_usd"):
        tagged(unseen, cost_usd=True)  # type: ignore[arg-type]
