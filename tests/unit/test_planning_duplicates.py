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


def test_when_the_later_copy_waits_for_more_the_earlier_one_is_dropped() -> None:
    # "list the posts ... then, after creating one, list the posts": the order is kept
    data = {
        "steps": [
            step("posts", tool="list_posts"),
            step("create", tool="create_post", title="Hi"),
            {**step("posts_after", tool="list_posts"), "dependsOn": ["create"]},
            step("count", tool="count", items="{{posts.items}}"),
        ],
        "outputSteps": ["posts", "count"],
    }
    out, merged = merge_duplicates(data)
    assert merged == {"posts": "posts_after"}
    assert ids(out) == ["create", "posts_after", "count"]
    assert out["steps"][1]["dependsOn"] == ["create"]
    assert out["steps"][2]["parameters"] == {"items": "{{posts_after.items}}"}
    assert out["outputSteps"] == ["posts_after", "count"]


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


def test_the_earlier_copy_is_kept_when_dropping_it_would_make_a_cycle() -> None:
    # b waits for x, and x uses a: renaming a to b would make x wait for itself
    data = {
        "steps": [
            step("a", city="Rome"),
            step("x", tool="forecast", t="{{a.temp}}"),
            {**step("b", city="Rome"), "dependsOn": ["x"]},
        ]
    }
    assert merge_duplicates(data) == (data, {})


def test_three_copies_merge_into_the_one_that_waits_longest() -> None:
    data = {
        "steps": [
            step("a", city="Rome"),
            step("b", city="Rome"),
            step("x", tool="lookup", city="Paris"),
            {**step("c", city="Rome"), "dependsOn": ["x"]},
            step("r", tool="report", p="{{a}}", q="{{b}}"),
        ]
    }
    out, merged = merge_duplicates(data)
    assert merged == {"b": "c", "a": "c"}
    assert ids(out) == ["x", "c", "r"]
    assert out["steps"][-1]["parameters"] == {"p": "{{c}}", "q": "{{c}}"}


def test_two_copies_under_one_id_are_left_for_the_validator() -> None:
    data = {"steps": [step("a", city="Rome"), step("a", city="Rome")]}
    assert merge_duplicates(data) == (data, {})


def test_a_repeat_after_its_twin_that_nothing_uses_is_dropped() -> None:
    data = {
        "steps": [
            step("glucose", city="C6H12O6"),
            step("sucrose", city="C12H22O11"),
            {**step("comparison", city="C12H22O11"), "dependsOn": ["glucose", "sucrose"]},
        ],
        "outputSteps": ["comparison"],
    }
    out, merged = merge_duplicates(data)
    assert merged == {"comparison": "sucrose"}
    assert ids(out) == ["glucose", "sucrose"] and out["outputSteps"] == ["sucrose"]


def test_create_delete_create_again_is_three_steps() -> None:
    data = {
        "steps": [
            step("create", tool="create_user", name="Grace"),
            step("delete", tool="delete_user", id="{{create._id}}"),
            {**step("again", tool="create_user", name="Grace"), "dependsOn": ["create", "delete"]},
        ]
    }
    assert merge_duplicates(data) == (data, {})


def test_a_repeat_something_uses_is_kept() -> None:
    data = {
        "steps": [
            step("a", city="Rome"),
            step("x", tool="lookup", city="Paris"),
            {**step("b", city="Rome"), "dependsOn": ["a", "x"]},
            step("r", tool="report", p="{{b}}"),
        ]
    }
    assert merge_duplicates(data) == (data, {})
