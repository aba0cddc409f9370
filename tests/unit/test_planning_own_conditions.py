"""A ``when`` that reads its own step's output is dropped; any other condition is kept."""

from __future__ import annotations

from toolplan.planning.own_conditions import drop_own_conditions


def test_a_condition_on_the_step_itself_is_dropped() -> None:
    data = {
        "steps": [
            {"id": "check", "tool": "check_threshold", "when": "{{check.exceeded}}"},
            {"id": "cpu", "tool": "query_metric", "when": {"not": "{{ cpu.current }}"}},
            {"id": "draft", "tool": "createDraft", "when": "{{check.exceeded}}"},
        ]
    }
    out, dropped = drop_own_conditions(data)
    assert dropped == ["check", "cpu"]
    assert [s["when"] for s in out["steps"]] == [None, None, "{{check.exceeded}}"]
    assert data["steps"][0]["when"] == "{{check.exceeded}}"  # the input is not changed


def test_plans_without_such_a_condition_are_returned_as_they_are() -> None:
    data = {
        "steps": [
            {"id": "a", "tool": "t", "when": None},
            {"id": "b", "tool": "t", "when": True},
            {"id": "c", "tool": "t", "when": "{{a.ok}}"},
            {"id": "d", "tool": "t", "forEach": "{{a.items}}", "when": "{{$item.ok}}"},
        ]
    }
    assert drop_own_conditions(data) == (data, [])
    assert drop_own_conditions({"steps": "x"}) == ({"steps": "x"}, [])


def test_a_step_waiting_for_itself_waits_for_it_no_more() -> None:
    # BFCL multiple_182: a repeated id renamed as the hint said, and the step's own dependsOn
    # pointed at the new id with it
    from toolplan.plan_format.plan import parse_plan
    from toolplan.tools import load_tool_modules
    from toolplan.validation import analyze

    data = {
        "steps": [
            {"id": "games", "tool": "get_weather", "parameters": {"location": "Oslo"}},
            {
                "id": "games_2",
                "tool": "get_weather",
                "parameters": {"location": "Rome"},
                "dependsOn": ["games", "games_2"],
            },
        ]
    }
    out, dropped = drop_own_conditions(data)
    assert out["steps"][1]["dependsOn"] == ["games"] and dropped == []
    assert data["steps"][1]["dependsOn"] == ["games", "games_2"]  # the input is not changed
    assert analyze(parse_plan(out), load_tool_modules(["weather"])).order == ["games", "games_2"]


def test_a_template_reading_the_step_itself_is_left_for_the_validator() -> None:
    step = {"id": "a", "tool": "get_weather", "parameters": {"location": "{{a.city}}"}}
    data = {"steps": [step]}
    assert drop_own_conditions(data) == (data, [])
