"""The rewrite pipeline (issue 43): every rule listed with its kind, only the format rules on by
default, each change recorded as ``{rule, step, before, after}``, and the switch reaching the
planner from the environment and from ``Toolplan(rewrites=...)``."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.planning import rewrites
from toolplan.planning.parsing import read_plan
from toolplan.planning.rewrites import RULES, Change, rewrite_answer, rule_runs, step_changes
from toolplan.tools.catalog import ToolCatalog


def get_weather(city: str, units: str = "metric") -> dict[str, Any]:
    """Current weather for a city (units: optional, default metric)."""
    return {}


def roll_die(sides: int = 6) -> int:
    """Roll one die."""
    return 4


CATALOG = ToolCatalog([get_weather, roll_die])


def step(sid: str, tool: str, **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": []}


def test_every_rule_is_listed_once_with_its_kind_and_documented_in_the_module() -> None:
    names = [rule.name for rule in RULES]
    assert len(names) == len(set(names))
    kinds = {rule.name: rule.kind for rule in RULES}
    assert {n for n, k in kinds.items() if k == "format"} == {
        "json_text",
        "unwrap",
        "nulls",
        "shapes",
        "tool_names",
        "loop_lists",
    }
    heuristic = {"item_names", "own_conditions", "unstated", "duplicates", "batches"}
    assert {n for n, k in kinds.items() if k == "heuristic"} == heuristic | {"fixes", "unasked"}
    doc = inspect.getdoc(rewrites) or ""
    for rule in RULES:
        assert f"``{rule.name}``" in doc and rule.kind in doc


@pytest.mark.parametrize(
    ("mode", "format_runs", "heuristic_runs"),
    [("format", True, False), ("all", True, True), ("none", False, False)],
)
def test_which_rules_each_setting_runs(mode: Any, format_runs: bool, heuristic_runs: bool) -> None:
    assert rule_runs("nulls", mode) is format_runs
    assert rule_runs("duplicates", mode) is heuristic_runs
    assert rule_runs("unasked", mode) is heuristic_runs


def test_a_change_is_one_record_and_one_line() -> None:
    change = Change("unstated", "w", 'argument units "imperial"', "dropped")
    assert change.to_json() == {
        "rule": "unstated",
        "step": "w",
        "before": 'argument units "imperial"',
        "after": "dropped",
    }
    assert change.line() == "rewrite unstated: step 'w' argument units \"imperial\" → dropped"
    assert change.kind == "heuristic"
    assert Change("json_text", None, "JSON in a ``` fence", "the JSON read").line() == (
        "rewrite json_text: JSON in a ``` fence → the JSON read"
    )


def test_step_changes_name_each_step_dropped_merged_or_changed() -> None:
    before = {
        "steps": [step("a", "roll_die", sides=6), step("b", "roll_die", sides=6)],
        "outputSteps": ["a", "b"],
    }
    after = {"steps": [dict(step("a", "roll_die"), when="{{x}}")], "outputSteps": ["a"]}
    changes = step_changes("duplicates", before, after, joined={"b": "a"})
    assert [c.to_json() for c in changes] == [
        {"rule": "duplicates", "step": "a", "before": "argument sides 6", "after": "dropped"},
        {"rule": "duplicates", "step": "a", "before": "when none", "after": '"{{x}}"'},
        {
            "rule": "duplicates",
            "step": "b",
            "before": "roll_die(sides=6)",
            "after": "merged into 'a'",
        },
        {"rule": "duplicates", "step": None, "before": 'outputSteps ["a", "b"]', "after": '["a"]'},
    ]


def test_by_default_the_heuristic_rules_change_nothing() -> None:
    two = {"steps": [step("a", "roll_die", sides=6), step("b", "roll_die", sides=6)]}
    told = dict(
        catalog=CATALOG, request="roll twice", read_only=lambda t: False, gated=lambda t: False
    )
    kept = rewrite_answer(two, mode="format", **told)  # type: ignore[arg-type]
    assert kept.data is two and kept.changes == [] and kept.merged == {}
    merged = rewrite_answer(two, mode="all", **told)  # type: ignore[arg-type]
    assert [s["id"] for s in merged.data["steps"]] == ["a"] and merged.merged == {"b": "a"}
    assert [c.rule for c in merged.changes] == ["duplicates"]


def test_the_format_rules_record_what_they_change_while_reading() -> None:
    answer = {
        "name": "make_plan",
        "arguments": {
            "steps": [
                {
                    "id": "w",
                    "tool": "get_weather",
                    "parameters": {"city": "Oslo", "units": None},
                    "dependsOn": "x",
                    "forEach": None,
                    "confidence": 3,
                },
                step("x", "roll_die"),
            ],
            "outputSteps": "w",
        },
    }
    text = "Here it is:\n```json\n" + json.dumps(answer) + "\n```"
    reading = read_plan(text, CATALOG)
    assert reading.issues == [] and reading.data is not None
    assert reading.data["steps"][0] == {
        "id": "w",
        "tool": "get_weather",
        "parameters": {"city": "Oslo"},
        "dependsOn": ["x"],
        "confidence": 1.0,
    }
    assert [c.to_json() for c in reading.changes] == [
        {
            "rule": "json_text",
            "step": None,
            "before": "JSON in a ``` fence",
            "after": "the JSON read",
        },
        {
            "rule": "unwrap",
            "step": None,
            "before": "the plan inside {'name', 'arguments'}",
            "after": "the plan",
        },
        {"rule": "nulls", "step": "w", "before": "argument units null", "after": "dropped"},
        {"rule": "nulls", "step": "w", "before": "forEach null", "after": "dropped"},
        {"rule": "shapes", "step": "w", "before": 'dependsOn "x"', "after": '["x"]'},
        {"rule": "shapes", "step": "w", "before": "confidence 3", "after": "1.0"},
        {"rule": "shapes", "step": None, "before": 'outputSteps "w"', "after": '["w"]'},
    ]
    assert all(c.kind == "format" for c in reading.changes)


def test_a_plain_answer_has_no_change() -> None:
    plain = {"steps": [step("w", "get_weather", city="Oslo"), step("r", "roll_die")]}
    assert read_plan(json.dumps(plain), CATALOG).changes == []
    assert read_plan(plain, CATALOG).changes == []


def test_none_reads_the_answer_as_written() -> None:
    fenced = "```json\n" + json.dumps({"steps": [step("w", "get_weather", city="Oslo")]}) + "\n```"
    strict = read_plan(fenced, CATALOG, rewrites="none")
    assert strict.data is None and strict.issues[0].code == "json"
    wrapped = {"name": "make_plan", "arguments": {"steps": []}}
    assert read_plan(wrapped, CATALOG, rewrites="none").issues[0].code == "shape"
    nulls = {"steps": [{**step("w", "get_weather", city="Oslo", units=None), "forEach": None}]}
    reading = read_plan(nulls, CATALOG, rewrites="none")
    assert reading.changes == [] and reading.data is not None
    assert reading.data["steps"][0]["parameters"] == {"city": "Oslo", "units": None}
    assert reading.data["steps"][0]["forEach"] is None


@pytest.mark.parametrize("mode", ["format", "all", "none"])
def test_the_setting_reaches_the_planner_from_the_environment_and_the_client(
    tmp_path: Path, mode: Any
) -> None:
    store = f"sqlite:///{tmp_path / 'tp.db'}"
    settings = Settings.from_env({"TOOLPLAN_STORE": store, "OPENAI_API_KEY": "sk-test"})
    assert settings.planner.rewrites == "format"  # the default
    with Toolplan(settings=settings, model="openai:gpt-4o-mini", rewrites=mode) as client:
        assert client.settings.planner.rewrites == mode
        assert client.planner_context().rewrites == mode
    env = {"TOOLPLAN_STORE": f"sqlite:///{tmp_path / 'tp.db'}", "TOOLPLAN_PLANNER_REWRITES": mode}
    assert Settings.from_env(env).planner.rewrites == mode
