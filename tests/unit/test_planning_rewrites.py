"""The rewrite pipeline (issue 43): every rule listed, each a format rule (the heuristic ones were
removed in issue 53), each change recorded as ``{rule, step, before, after}``, and the switch
reaching the planner from the environment and from ``Toolplan(rewrites=...)``; ``all``, which
turned the heuristic rules on, warns and means ``format``."""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from toolplan.client import Toolplan
from toolplan.config import PlannerSettings, Settings
from toolplan.errors import SettingRemoved
from toolplan.planning import rewrites
from toolplan.planning.parsing import quote_bare_templates, read_plan
from toolplan.planning.rewrites import RULES, Change, rule_runs, step_changes
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


def test_every_rule_is_listed_once_and_documented_in_the_module() -> None:
    names = [rule.name for rule in RULES]
    assert names == ["json_text", "unwrap", "nulls", "shapes", "tool_names", "loop_lists"]
    doc = inspect.getdoc(rewrites) or ""
    for rule in RULES:
        assert f"``{rule.name}``" in doc


def test_the_heuristic_rules_are_gone() -> None:
    """Issue 53: none of them was shown to help on data it was not written for."""
    import importlib.util

    for name in ("item_names", "own_conditions", "unstated", "duplicates", "batches", "fixes"):
        assert importlib.util.find_spec(f"toolplan.planning.{name}") is None, name
        with pytest.raises(KeyError):
            rule_runs(name, "format")
    assert importlib.util.find_spec("toolplan.planning.unasked") is None


@pytest.mark.parametrize(("mode", "runs"), [("format", True), ("none", False)])
def test_which_rules_each_setting_runs(mode: Any, runs: bool) -> None:
    assert all(rule_runs(rule.name, mode) is runs for rule in RULES)


def test_a_change_is_one_record_and_one_line() -> None:
    change = Change("nulls", "w", "argument units null", "dropped")
    assert change.to_json() == {
        "rule": "nulls",
        "step": "w",
        "before": "argument units null",
        "after": "dropped",
    }
    assert change.line() == "rewrite nulls: step 'w' argument units null → dropped"
    assert Change("json_text", None, "JSON in a ``` fence", "the JSON read").line() == (
        "rewrite json_text: JSON in a ``` fence → the JSON read"
    )


def test_step_changes_name_each_step_dropped_or_changed() -> None:
    before = {
        "steps": [step("a", "roll_die", sides=6), step("b", "roll_die", sides=6)],
        "outputSteps": ["a", "b"],
    }
    after = {"steps": [dict(step("a", "roll_die"), when="{{x}}")], "outputSteps": ["a"]}
    changes = step_changes("shapes", before, after)
    assert [c.to_json() for c in changes] == [
        {"rule": "shapes", "step": "a", "before": "argument sides 6", "after": "dropped"},
        {"rule": "shapes", "step": "a", "before": "when none", "after": '"{{x}}"'},
        {"rule": "shapes", "step": "b", "before": "roll_die(sides=6)", "after": "dropped"},
        {"rule": "shapes", "step": None, "before": 'outputSteps ["a", "b"]', "after": '["a"]'},
    ]


def test_a_step_written_twice_stays_twice() -> None:
    """The ``duplicates`` rule merged these (with ``all``); a plan is now read as written."""
    two = {"steps": [step("a", "roll_die", sides=6), step("b", "roll_die", sides=6)]}
    reading = read_plan(two, CATALOG)
    assert reading.data is not None and [s["id"] for s in reading.data["steps"]] == ["a", "b"]
    assert reading.changes == []


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


def test_a_bare_template_is_quoted_whatever_key_form_it_uses() -> None:
    text = """{"city": {{x['the city']}}, "n": 1}"""
    assert quote_bare_templates(text) == """{"city": "{{x['the city']}}", "n": 1}"""
    assert quote_bare_templates('{"a": {{$item.id}}}') == '{"a": "{{$item.id}}"}'


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


@pytest.mark.parametrize("mode", ["format", "none"])
def test_the_setting_reaches_the_planner_from_the_environment_and_the_client(
    tmp_path: Path, mode: Any
) -> None:
    store = f"sqlite:///{tmp_path / 'tp.db'}"
    settings = Settings.from_env({"TOOLPLAN_STORE": store, "OPENAI_API_KEY": "sk-test"})
    assert settings.planner.rewrites == "format"  # the default
    with warnings.catch_warnings():
        warnings.simplefilter("error", SettingRemoved)  # neither value warns
        with Toolplan(settings=settings, model="openai:gpt-4o-mini", rewrites=mode) as client:
            assert client.settings.planner.rewrites == mode
            assert client.planner_context().rewrites == mode
        env = {"TOOLPLAN_STORE": store, "TOOLPLAN_PLANNER_REWRITES": mode}
        assert Settings.from_env(env).planner.rewrites == mode


ALL_REMOVED = (
    r"the heuristic rewrite rules it turned on were removed in toolplan 0\.1\.0 .*"
    r"'all' now means 'format'"
)


def test_all_is_still_accepted_warns_once_and_means_format(tmp_path: Path) -> None:
    """Issue 53: ``all`` turned the heuristic rules on; they are gone, so it is read as
    ``format``, with one warning naming where it was given."""
    store = f"sqlite:///{tmp_path / 'tp.db'}"
    env = {"TOOLPLAN_STORE": store, "OPENAI_API_KEY": "sk-test", "TOOLPLAN_PLANNER_REWRITES": "all"}
    with pytest.warns(
        SettingRemoved, match="^TOOLPLAN_PLANNER_REWRITES='all': " + ALL_REMOVED
    ) as env_said:
        settings = Settings.from_env(env)
    assert len(env_said) == 1 and settings.planner.rewrites == "format"

    with pytest.warns(SettingRemoved, match="^rewrites='all': " + ALL_REMOVED) as said:
        client = Toolplan(settings=settings, model="openai:gpt-4o-mini", rewrites="all")
    with client:
        assert client.settings.planner.rewrites == "format"
        assert client.planner_context().rewrites == "format"
    assert len(said) == 1 and said[0].filename == __file__  # said at the caller's line
    assert isinstance(said[0].message, SettingRemoved) and said[0].message.now == "format"

    with pytest.warns(SettingRemoved, match="^rewrites='all': "):
        assert PlannerSettings(rewrites="all").rewrites == "format"  # type: ignore[arg-type]
