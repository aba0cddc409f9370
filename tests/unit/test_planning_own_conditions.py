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
