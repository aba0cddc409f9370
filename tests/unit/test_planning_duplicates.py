"""Identical steps a model wrote twice are merged before validation (issue 28)."""

from __future__ import annotations

from typing import Any

from toolplan.planning.duplicates import merge_duplicates


def step(sid: str, tool: str = "get_weather", **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": []}


def ids(data: dict[str, Any]) -> list[str]:
    return [s["id"] for s in data["steps"]]


def test_the_later_identical_step_is_dropped_and_references_follow() -> None:
    data = {
        "steps": [
            step("berlin", city="Berlin"),
            step("berlin2", city="Berlin"),
            {
                "id": "compare",
                "tool": "compare",
                "parameters": {
                    "a": "{{berlin.temp}}",
                    "b": "{{ berlin2.temp }}",
                    "c": "{{berlin2}}",
                },
                "dependsOn": ["berlin2", "berlin"],
            },
        ],
        "outputSteps": ["berlin2", "compare"],
    }
    out, merged = merge_duplicates(data)
    assert merged == {"berlin2": "berlin"}
    assert ids(out) == ["berlin", "compare"]
    compare = out["steps"][1]
    assert compare["parameters"] == {
        "a": "{{berlin.temp}}",
        "b": "{{ berlin.temp }}",
        "c": "{{berlin}}",
    }
    assert compare["dependsOn"] == ["berlin"]
    assert out["outputSteps"] == ["berlin", "compare"]


def test_steps_that_differ_in_anything_but_id_and_description_are_kept() -> None:
    data = {
        "steps": [
            step("a", city="Berlin"),
            step("b", city="Madrid"),
            step("c", tool="get_time", city="Berlin"),
            {**step("d", city="Berlin"), "when": "{{b.hot}}"},
            {**step("e", city="Berlin"), "approval": True},
        ]
    }
    out, merged = merge_duplicates(data)
    assert merged == {} and out is data


def test_description_and_confidence_do_not_make_steps_different() -> None:
    data = {
        "steps": [
            {**step("a", city="Rome"), "description": "weather in Rome", "confidence": 0.9},
            {**step("b", city="Rome"), "description": "Rome's weather", "confidence": 0.7},
        ]
    }
    out, merged = merge_duplicates(data)
    assert merged == {"b": "a"} and ids(out) == ["a"]


def test_merges_reach_a_fixpoint_through_the_steps_that_use_duplicates() -> None:
    # b duplicates a; then d (using b) duplicates c (using a)
    data = {
        "steps": [
            step("a", city="Oslo"),
            step("b", city="Oslo"),
            step("c", tool="forecast", t="{{a.temp}}"),
            step("d", tool="forecast", t="{{b.temp}}"),
            step("e", tool="report", x="{{d}}", y="{{c}}"),
        ]
    }
    out, merged = merge_duplicates(data)
    assert merged == {"b": "a", "d": "c"}
    assert ids(out) == ["a", "c", "e"]
    assert out["steps"][2]["parameters"] == {"x": "{{c}}", "y": "{{c}}"}


def test_a_name_that_prefixes_another_is_not_renamed() -> None:
    data = {
        "steps": [
            step("w", city="Lima"),
            step("w2", city="Lima"),
            step("w22", city="Quito"),
            step("r", tool="report", x="{{w22.temp}}", y="{{w2[0]}}"),
        ]
    }
    out, merged = merge_duplicates(data)
    assert merged == {"w2": "w"}
    assert out["steps"][-1]["parameters"] == {"x": "{{w22.temp}}", "y": "{{w[0]}}"}


def test_malformed_steps_are_left_for_the_validator() -> None:
    data = {"steps": [{"tool": "x"}, {"tool": "x"}, "junk", "junk"]}
    out, merged = merge_duplicates(data)
    assert merged == {} and out["steps"] == data["steps"]


def test_a_repeat_that_waits_for_its_twin_is_merged() -> None:
    twin = {**step("b", city="Rome"), "dependsOn": ["a"]}
    out, merged = merge_duplicates({"steps": [step("a", city="Rome"), twin]})
    assert merged == {"b": "a"} and ids(out) == ["a"]


def test_a_read_before_and_after_a_write_is_two_steps() -> None:
    data = {
        "steps": [
            step("before", tool="list_posts"),
            step("create", tool="create_post", title="Hi"),
            {**step("after", tool="list_posts"), "dependsOn": ["create"]},
            step("cmp", tool="compare", a="{{before.items}}", b="{{after.items}}"),
        ]
    }
    assert merge_duplicates(data, read_only=lambda tool: tool == "list_posts") == (data, {})


def test_copies_that_each_wait_for_something_else_are_kept() -> None:
    data = {
        "steps": [
            {**step("a", city="Rome"), "dependsOn": ["x"]},
            step("x", tool="lookup", city="Rome"),
            step("y", tool="lookup", city="Paris"),
            {**step("b", city="Rome"), "dependsOn": ["y"]},
        ]
    }
    assert merge_duplicates(data) == (data, {})


def test_a_copy_the_first_one_waits_for_is_not_merged_into_a_cycle() -> None:
    direct = {"steps": [{**step("a", city="Rome"), "dependsOn": ["b"]}, step("b", city="Rome")]}
    assert merge_duplicates(direct) == (direct, {})
    through = {
        "steps": [
            {**step("a", city="Rome"), "dependsOn": ["c"]},
            {**step("c", tool="lookup"), "dependsOn": ["b"]},
            step("b", city="Rome"),
        ]
    }
    assert merge_duplicates(through) == (through, {})


def test_two_copies_under_one_id_are_left_for_the_validator() -> None:
    data = {"steps": [step("a", city="Rome"), step("a", city="Rome")]}
    assert merge_duplicates(data) == (data, {})


def test_a_repeat_after_its_twin_and_reads_only_that_nothing_uses_is_dropped() -> None:
    data = {
        "steps": [
            step("glucose", tool="weigh", compound="C6H12O6"),
            step("sucrose", tool="weigh", compound="C12H22O11"),
            {
                **step("comparison", tool="weigh", compound="C12H22O11"),
                "dependsOn": ["glucose", "sucrose"],
            },
        ],
        "outputSteps": ["comparison"],
    }
    out, merged = merge_duplicates(data, read_only=lambda tool: tool == "weigh")
    assert merged == {"comparison": "sucrose"}
    assert ids(out) == ["glucose", "sucrose"] and out["outputSteps"] == ["sucrose"]
    # without the read-only tag, what is in between might have changed something: kept
    assert merge_duplicates(data) == (data, {})


def test_a_repeat_after_a_side_effect_is_kept() -> None:
    made = step("create", tool="create_user", name="Grace")
    for between in (
        step("delete", tool="delete_user", id="{{create._id}}"),
        step("wipe", tool="delete_all_users"),  # does not name the first create
    ):
        again = {**step("again", tool="create_user", name="Grace")}
        again["dependsOn"] = ["create", between["id"]]
        data = {"steps": [made, between, again]}
        assert merge_duplicates(data, read_only=lambda tool: False) == (data, {})


def test_a_repeat_something_uses_is_kept() -> None:
    data = {
        "steps": [
            step("a", city="Rome"),
            step("x", tool="lookup", city="Paris"),
            {**step("b", city="Rome"), "dependsOn": ["a", "x"]},
            step("r", tool="report", p="{{b}}"),
        ]
    }
    assert merge_duplicates(data, read_only=lambda tool: True) == (data, {})


def test_steps_that_share_an_id_are_left_for_the_validator() -> None:
    data = {
        "steps": [
            step("a", city="Rome"),
            step("x", tool="lookup"),
            {**step("b", city="Rome"), "dependsOn": ["x"]},
            step("a", tool="other"),
        ]
    }
    assert merge_duplicates(data, read_only=lambda tool: True) == (data, {})


def test_junk_in_depends_on_or_outputs_is_left_for_the_validator() -> None:
    data = {
        "steps": [
            step("a", x=1),
            step("b", x=1),
            {**step("c", x=2), "dependsOn": [["a"], "b", "b"]},
        ],
        "outputSteps": [["b"], "b"],
    }
    out, merged = merge_duplicates(data)  # an unhashable entry once raised TypeError
    assert merged == {"b": "a"}
    assert out["steps"][1]["dependsOn"] == [["a"], "a"]
    assert out["outputSteps"] == [["b"], "a"]
