"""Plan loading: canonical and seed-002 forms, shape errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.plans import SEED_002
from toolplan.errors import InvalidInput, PlanInvalid
from toolplan.plan_format.plan import load_plan, parse_plan


def test_canonical_form_loads_with_all_optional_fields() -> None:
    plan = parse_plan(
        {
            "reasoning": "why",
            "steps": [
                {"id": "a", "tool": "t", "parameters": {}},
                {
                    "id": "b",
                    "tool": "t",
                    "parameters": {"x": "{{a}}"},
                    "dependsOn": ["a"],
                    "timeout": 5,
                    "maxAttempts": 2,
                    "fallback": {"tool": "u", "parameters": {"y": 1}},
                    "confidence": 0.8,
                },
            ],
            "outputSteps": ["b"],
        }
    )
    b = plan.step("b")
    assert (b.depends_on, b.timeout, b.max_attempts, b.confidence) == (["a"], 5, 2, 0.8)
    assert b.fallback is not None and b.fallback.tool == "u"
    assert plan.result_steps == ["b"]
    assert plan.to_json()["steps"][1]["dependsOn"] == ["a"]


@pytest.mark.parametrize(("raw", "expected"), [(None, []), ("a", ["a"]), (["a", "b"], ["a", "b"])])
def test_depends_on_accepts_null_single_or_list(raw: object, expected: list[str]) -> None:
    plan = parse_plan({"steps": [{"id": "s", "tool": "t", "parameters": {}, "dependsOn": raw}]})
    assert plan.steps[0].depends_on == expected


def test_seed_002_form_loads_into_the_same_model() -> None:
    plan = parse_plan(SEED_002)
    assert plan.step_ids == ["createAuthor", "createBlog"]
    assert plan.step("createBlog").tool == "createBlog"
    assert plan.step("createBlog").depends_on == ["createAuthor"]
    assert plan.step("createAuthor").depends_on == []


def test_load_from_file_and_string(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(SEED_002))
    assert load_plan(path).step_ids == load_plan(json.dumps(SEED_002)).step_ids


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ([1, 2], "must be a JSON object"),
        ({"stepz": []}, "needs a 'steps' list"),
        ({"steps": [{"tool": "t", "parameters": {}}]}, "steps.0.id"),
        ({"steps": [{"id": "a", "parameters": {}}]}, "steps.0.tool"),
        ({"steps": [{"id": "a", "tool": "t"}]}, "steps.0.parameters"),
        ({"steps": [{"id": "a", "tool": "t", "parameters": {}, "timeout": -1}]}, "timeout"),
        ({"steps": [{"id": "a", "tool": "t", "parameters": {}, "maxAttempts": 0}]}, "maxAttempts"),
        ({"steps": [{"id": "a", "tool": "t", "parameters": {}, "confidence": 2}]}, "confidence"),
        ({"steps": [{"id": "a", "tool": "t", "parameters": {}, "bogus": 1}]}, "unknown field"),
        ({"steps": "nope"}, "steps"),
    ],
)
def test_shape_errors(data: object, fragment: str) -> None:
    with pytest.raises(PlanInvalid) as caught:
        parse_plan(data)
    assert fragment in str(caught.value)


def test_shape_errors_are_all_reported() -> None:
    with pytest.raises(PlanInvalid) as caught:
        parse_plan({"steps": [{"id": "a"}, {"tool": "t", "parameters": {}}]})
    assert len(caught.value.issues) == 3


def test_malformed_json_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"steps": [')
    with pytest.raises(PlanInvalid, match="not valid JSON"):
        load_plan(bad)
    with pytest.raises(InvalidInput, match="does not exist"):
        load_plan(tmp_path / "missing.json")


def test_absurd_nesting_is_a_validation_error_not_a_crash() -> None:
    deep: object = "x"
    for _ in range(500):
        deep = {"a": deep}
    with pytest.raises(PlanInvalid, match="nested more than 64 levels"):
        parse_plan({"steps": [{"id": "a", "tool": "t", "parameters": deep}]})
    ok: object = "x"
    for _ in range(30):
        ok = [ok]
    assert (
        parse_plan({"steps": [{"id": "a", "tool": "t", "parameters": {"v": ok}}]}).steps[0].id
        == "a"
    )
