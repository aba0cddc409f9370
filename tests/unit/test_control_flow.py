"""forEach, maxItems and when: the plan model, the loop templates and every validation error."""

from __future__ import annotations

from typing import Any

import pytest

from toolplan.engine.items import item_list
from toolplan.errors import PlanInvalid, TemplateError
from toolplan.plan_format.plan import Not, Step, parse_plan
from toolplan.plan_format.templates import Template, references, resolve
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

CATALOG = load_tool_modules(["blog", "metrics", "weather"])

POSTS = {"id": "posts", "tool": "listBlogs", "parameters": {}}


def comment(sid: str = "comments", **fields: Any) -> dict[str, Any]:
    step = {
        "id": sid,
        "tool": "createComment",
        "forEach": "{{posts.blogs}}",
        "parameters": {"blogId": "{{$item._id}}", "text": "comment #{{$index}}"},
    }
    step.update(fields)
    return step


def issues_of(*steps: dict[str, Any], **kwargs: Any) -> list[str]:
    with pytest.raises(PlanInvalid) as caught:
        analyze(parse_plan({"steps": list(steps)}), CATALOG, **kwargs)
    return [issue.message for issue in caught.value.issues]


# -- the model and the templates ----------------------------------------------------------------


def test_both_plan_forms_load_for_each_and_when() -> None:
    canonical = parse_plan({"steps": [POSTS, comment(maxItems=7, when={"not": "{{posts.count}}"})]})
    step = canonical.step("comments")
    assert step.for_each == "{{posts.blogs}}"
    assert step.max_items == 7
    assert step.when == Not(template="{{posts.count}}")
    assert step.condition == "{{posts.count}}"
    assert canonical.to_json()["steps"][1]["when"] == {"not": "{{posts.count}}"}
    assert canonical.to_json()["steps"][1]["forEach"] == "{{posts.blogs}}"

    seed = parse_plan(
        {
            "tools": [
                {"name": "listBlogs", "parameters": {}},
                {
                    "name": "createComment",
                    "forEach": [{"_id": "b1"}],
                    "when": True,
                    "parameters": {"blogId": "{{$item._id}}", "text": "x"},
                },
            ]
        }
    )
    assert seed.step("createComment").for_each == [{"_id": "b1"}]
    assert seed.step("createComment").when is True
    assert seed.step("createComment").condition is None


def test_loop_templates_parse_resolve_and_are_not_step_references() -> None:
    item = Template.parse("{{$item.author.name}}")
    assert item is not None and item.is_loop and item.path == ("author", "name")
    assert Template.parse("{{$itemx}}") is None
    parameters = {
        "id": "{{$item._id}}",
        "n": "{{$index}}",
        "text": "#{{$index}} of {{posts.count}}",
    }
    assert references(parameters) == {"posts"}
    resolved = resolve(parameters, {"posts": {"count": 3}, "$item": {"_id": "b2"}, "$index": 1})
    assert resolved == {"id": "b2", "n": 1, "text": "#1 of 3"}


def test_for_each_and_when_imply_dependencies() -> None:
    plan = parse_plan(
        {
            "steps": [
                POSTS,
                {"id": "cpu", "tool": "query_metric", "parameters": {"name": "cpu_usage"}},
                comment(when="{{cpu.value}}"),
                {
                    "id": "again",
                    "tool": "list_metrics",
                    "parameters": {},
                    "when": {"not": "{{comments}}"},
                },
            ]
        }
    )
    analysis = analyze(plan, CATALOG)
    assert set(analysis.dependencies["comments"]) == {"cpu", "posts"}
    assert analysis.dependencies["again"] == ["comments"]


def test_a_literal_list_and_a_bool_condition_are_valid() -> None:
    plan = parse_plan(
        {
            "steps": [
                {
                    "id": "w",
                    "tool": "get_weather",
                    "forEach": ["Paris", "Oslo"],
                    "when": False,
                    "parameters": {"location": "{{$item}}"},
                }
            ]
        }
    )
    assert analyze(plan, CATALOG).dependencies == {"w": []}


# -- validation: every error of the issue, all at once -----------------------------------------


def test_item_or_index_in_a_step_without_for_each() -> None:
    [item, index] = issues_of(
        POSTS,
        {
            "id": "c",
            "tool": "createComment",
            "parameters": {"blogId": "{{$item._id}}", "text": "x"},
            "fallback": {"tool": "createDraft", "parameters": {"title": "{{$index}}"}},
        },
    )
    assert "'{{$item._id}}' is only defined in a step with forEach" in item
    assert "add forEach with a template of the list to call the tool for" in item
    assert "fallback parameters: template '{{$index}}'" in index


def test_for_each_or_when_naming_an_unknown_step() -> None:
    [for_each, when] = issues_of(
        POSTS, comment(forEach="{{post.blogs}}", when={"not": "{{chek.ok}}"})
    )
    assert "forEach '{{post.blogs}}' names unknown step 'post'" in for_each
    assert "did you mean 'posts'?" in for_each
    assert "when '{{chek.ok}}' names unknown step 'chek'" in when


def test_a_for_each_over_a_step_never_written_names_the_tool_that_lists_it() -> None:
    # what a small model wrote for "comment on every blog post": the map, without the list
    [message] = issues_of(comment(forEach="{{posts.blogs}}"))
    assert "names unknown step 'posts'" in message
    assert "a step with id 'posts' calling 'listBlogs' (its output has 'blogs')" in message


def test_a_condition_on_a_tool_name_says_to_add_the_step() -> None:
    draft = {
        "id": "draft",
        "tool": "createDraft",
        "parameters": {"title": "Slow", "content": "p95 is high"},
        "when": "{{check_threshold.exceeded}}",
    }
    [message] = issues_of(draft)
    assert (
        "'check_threshold' is a tool, not a step: add a step with id 'check_threshold'" in message
    )


def test_a_missing_key_of_an_object_holding_one_list_points_at_the_list() -> None:
    metrics = {"id": "metrics", "tool": "list_metrics", "parameters": {}}
    query = {
        "id": "values",
        "tool": "query_metric",
        "forEach": "{{metrics.items}}",
        "parameters": {"name": "{{$item.name}}"},
    }
    [message] = issues_of(metrics, query)
    assert "without 'items'; the list is under 'metrics': {{metrics.metrics}}" in message


def test_for_each_over_a_path_that_is_not_a_list() -> None:
    [message] = issues_of(POSTS, comment(forEach="{{posts}}"))
    assert "forEach '{{posts}}' is an object with keys blogs, count, not a list" in message
    assert "the list is under 'blogs': {{posts.blogs}}" in message
    [scalar] = issues_of(POSTS, comment(forEach="{{posts.count}}"))
    assert "forEach '{{posts.count}}' is an integer, not a list" in scalar


def test_an_item_path_that_cannot_exist_names_the_fix() -> None:
    step = comment()
    step["parameters"] = {"blogId": "{{$item.id}}", "text": "{{$item.titel}}"}
    messages = issues_of(POSTS, step)
    assert any("'{{$item.id}}'" in m and "did you mean {{$item._id}}?" in m for m in messages)
    assert any("did you mean {{$item.title}}?" in m for m in messages)


def test_a_literal_list_longer_than_max_items() -> None:
    step = {
        "id": "w",
        "tool": "get_weather",
        "forEach": ["a", "b", "c"],
        "maxItems": 2,
        "parameters": {"location": "{{$item}}"},
    }
    [own] = issues_of(step)
    assert "forEach lists 3 items, more than the limit of 2 (its maxItems)" in own
    del step["maxItems"]
    [default] = issues_of(step, max_items=2)
    assert "more than the limit of 2 (TOOLPLAN_MAX_ITEMS)" in default


def test_max_items_lowers_the_operators_limit_and_never_raises_it() -> None:
    """TOOLPLAN_MAX_ITEMS is a ceiling: a plan's own maxItems of 1000 under a ceiling of 5
    does not let a list of 6 through (issue 42); a maxItems under the ceiling still applies."""
    step = {
        "id": "w",
        "tool": "get_weather",
        "forEach": [f"city {i}" for i in range(6)],
        "maxItems": 1000,
        "parameters": {"location": "{{$item}}"},
    }
    [message] = issues_of(step, max_items=5)
    assert "forEach lists 6 items, more than the limit of 5 (TOOLPLAN_MAX_ITEMS)" in message
    assert "its maxItems of 1000 cannot raise the operator's limit" in message
    analyze(parse_plan({"steps": [step]}), CATALOG, max_items=6)  # within the ceiling: valid
    step["maxItems"] = 4
    [own] = issues_of(step, max_items=5)
    assert "more than the limit of 4 (its maxItems)" in own and "up to TOOLPLAN_MAX_ITEMS, 5" in own


def test_the_engine_applies_the_same_ceiling_to_a_list_known_at_run_time() -> None:
    step = Step.model_validate(
        {"id": "s", "tool": "echo", "parameters": {}, "forEach": "{{a}}", "maxItems": 1000}
    )
    with pytest.raises(TemplateError, match=r"has 6 items, more than the limit of 5 \(TOOLPLAN"):
        item_list(step, {"a": list(range(6))}, 5)
    assert item_list(step, {"a": list(range(5))}, 5) == list(range(5))
    lower = step.model_copy(update={"max_items": 3})
    with pytest.raises(TemplateError, match=r"more than the limit of 3 \(its maxItems\)"):
        item_list(lower, {"a": list(range(4))}, 5)


def test_malformed_conditions_and_loop_templates_in_the_wrong_place() -> None:
    messages = issues_of(
        POSTS,
        comment(when="yes", maxItems=None),
        {
            "id": "x",
            "tool": "list_metrics",
            "parameters": {},
            "maxItems": 3,
            "when": "{{$index}}",
            "forEach": "posts.blogs",
        },
    )
    text = "\n".join(messages)
    assert "when: 'yes' is not a template" in text
    assert "forEach: 'posts.blogs' is not a template" in text
    assert "when '{{$index}}' uses $index" in text
    assert "maxItems applies only" not in text  # x has forEach, comments has no maxItems


def test_a_for_each_step_output_is_a_list_of_item_outputs() -> None:
    later = {
        "id": "read",
        "tool": "getAuthor",
        "parameters": {"authorId": "{{comments[0].author}}"},
    }
    analyze(parse_plan({"steps": [POSTS, comment(), later]}), CATALOG)
    later["parameters"] = {"authorId": "{{comments.author}}"}
    [message] = issues_of(POSTS, comment(), later)
    assert "returns a list, so it has no key 'author'" in message
    assert "{{comments[0].author}}" in message


# -- planner-only: a condition on a number ----------------------------------------------------


def test_a_condition_on_a_number_or_text_is_refused_for_planner_plans() -> None:
    from toolplan.planning.number_conditions import check_conditions

    cpu = {"id": "cpu", "tool": "query_metric", "parameters": {"name": "cpu_usage"}}
    draft = {"id": "draft", "tool": "createDraft", "parameters": {"title": "t", "content": "c"}}
    number = parse_plan({"steps": [cpu, {**draft, "when": "{{cpu.current}}"}]})
    analyze(number, CATALOG)  # valid for the engine: a hand-written plan may mean it
    [issue] = check_conditions(number, CATALOG)
    assert "when '{{cpu.current}}' is a number, not a yes/no value" in issue.message
    assert "'check_threshold'" in issue.message
    text = parse_plan({"steps": [cpu, {**draft, "when": {"not": "{{cpu.unit}}"}}]})
    assert "is text" in check_conditions(text, CATALOG)[0].message
    check = {
        "id": "check",
        "tool": "check_threshold",
        "parameters": {"metric_name": "cpu_usage", "threshold": 80},
    }
    fine = [
        {**draft, "when": "{{check.exceeded}}"},  # a boolean
        {**draft, "when": {"not": "{{check.exceeded}}"}},
        {**draft, "when": "{{cpu.series}}"},  # a list: "if there are any"
        {**draft, "when": True},
    ]
    for when in fine:
        assert check_conditions(parse_plan({"steps": [cpu, check, when]}), CATALOG) == []
