"""The fixes the validator is certain of, applied by the planner (issue 28)."""

from __future__ import annotations

import pytest

from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.plan import parse_plan
from toolplan.planning.fixes import apply_fixes
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

CATALOG = load_tool_modules(["blog", "weather"])


def issues(data: dict) -> list[ValidationIssue]:
    with pytest.raises(PlanInvalid) as caught:
        analyze(parse_plan(data), CATALOG)
    return caught.value.issues


def test_the_validator_names_certain_fixes_and_only_those() -> None:
    data = {
        "steps": [
            {"id": "paris", "tool": "get_weather", "parameters": {"location": "Paris"}},
            {"id": "posts", "tool": "listBlogs", "parameters": {}},
            {
                "id": "compare",
                "tool": "compare_data",
                "parameters": {"data_a": "{{paris.temp}}", "data_b": "{{paris}}"},
            },
            {
                "id": "c",
                "tool": "createComment",
                "forEach": "{{posts.blogs}}",
                "parameters": {"blogId": "{{$item._id}}", "text": "{{$item.titel}}"},
            },
            {
                "id": "d",
                "tool": "createDraft",
                "parameters": {
                    "title": "{{paris.nothing_like_it}}",
                    "content": "{{paris.conditon}}",
                },
            },
        ]
    }
    found = {(i.step, i.fix) for i in issues(data) if i.fix}
    assert found == {
        ("compare", ("{{paris.temp}}", "{{paris}}")),
        ("d", ("{{paris.conditon}}", "{{paris.condition}}")),
        ("c", ("{{$item.titel}}", "{{$item.title}}")),
    }
    fixed, done = apply_fixes(data, issues(data)) or ({}, [])
    assert fixed["steps"][2]["parameters"]["data_a"] == "{{paris}}"
    assert fixed["steps"][3]["parameters"]["text"] == "{{$item.title}}"
    assert "compare: {{paris.temp}} -> {{paris}}" in done
    assert data["steps"][2]["parameters"]["data_a"] == "{{paris.temp}}"  # input untouched
    # the made-up key has no certain fix: still reported
    assert [i.step for i in issues(fixed)] == ["d"]


def test_nothing_to_fix_is_none() -> None:
    assert apply_fixes({"steps": []}, [ValidationIssue("x", "no fix", "s")]) is None
