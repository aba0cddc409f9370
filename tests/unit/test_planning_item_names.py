"""A forEach step's item, named after the step or after no step, is read as ``$item``."""

from __future__ import annotations

from typing import Any

from toolplan.planning.item_names import read_item_names
from toolplan.tools import load_tool_modules

CATALOG = load_tool_modules(["blog", "metrics"])


def plan(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"steps": list(steps)}


POSTS = {"id": "posts", "tool": "listBlogs", "parameters": {}}


def mapped(parameters: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": "comment",
        "tool": "createComment",
        "forEach": "{{posts.blogs}}",
        "parameters": parameters,
        **fields,
    }


def test_the_step_itself_and_an_unknown_name_mean_the_item() -> None:
    data = plan(
        POSTS,
        mapped(
            {"blogId": "{{ comment._id }}", "text": "On {{blog.title}}: nice", "n": "{{$index}}"},
            fallback={"tool": "log", "parameters": {"id": "{{blog._id}}"}},
        ),
    )
    out = read_item_names(data)
    step = out["steps"][1]
    assert step["parameters"] == {
        "blogId": "{{ $item._id }}",
        "text": "On {{$item.title}}: nice",
        "n": "{{$index}}",
    }
    assert step["fallback"]["parameters"] == {"id": "{{$item._id}}"}
    assert data["steps"][1]["parameters"]["blogId"] == "{{ comment._id }}"  # input untouched


def test_real_steps_typos_and_steps_without_for_each_are_left_alone() -> None:
    data = plan(
        POSTS,
        {"id": "author", "tool": "getAuthor", "parameters": {}},
        mapped({"blogId": "{{$item._id}}", "by": "{{author._id}}", "x": "{{autor._id}}"}),
        {"id": "plain", "tool": "createComment", "parameters": {"blogId": "{{blog._id}}"}},
    )
    assert read_item_names(data) is data


def test_a_plan_without_steps_is_returned_as_it_is() -> None:
    assert read_item_names({"steps": "x"}) == {"steps": "x"}


def test_item_without_for_each_maps_over_the_one_list_on_offer() -> None:
    # what the model wrote for "for every post by author a1, add the comment 'Reviewed'"
    data = plan(
        {"id": "posts", "tool": "listBlogs", "parameters": {"authorId": "a1"}},
        {
            "id": "comments",
            "tool": "createComment",
            "parameters": {"blogId": "{{$item._id}}", "text": "Reviewed"},
        },
        {"id": "draft", "tool": "createDraft", "parameters": {"title": "t", "content": "c"}},
    )
    out = read_item_names(data, CATALOG)
    assert out["steps"][1]["forEach"] == "{{posts.blogs}}"
    assert "forEach" not in out["steps"][0] and "forEach" not in out["steps"][2]


def test_item_without_for_each_is_left_alone_when_the_list_is_not_certain() -> None:
    comments = {
        "id": "comments",
        "tool": "createComment",
        "parameters": {"blogId": "{{$item._id}}", "text": "Reviewed"},
    }
    none = plan({"id": "d", "tool": "createDraft", "parameters": {}}, comments)
    whole = dict(comments, parameters={"blogId": "{{$item}}", "text": "Reviewed"})
    two = plan(
        {"id": "a", "tool": "listBlogs", "parameters": {}},
        {"id": "b", "tool": "list_metrics", "parameters": {}},
        whole,  # the whole item: either list could be meant
    )
    cycle = plan(
        {"id": "a", "tool": "listBlogs", "parameters": {"authorId": "{{comments[0]._id}}"}},
        comments,
    )
    for data in (none, two, cycle):
        assert read_item_names(data, CATALOG) is data
    assert read_item_names(two) is two  # and nothing is inferred without a catalog


def test_the_item_paths_pick_the_list_whose_items_have_them() -> None:
    # the p95 latency's series (numbers) is on offer too, but numbers have no _id
    data = plan(
        {"id": "blogs", "tool": "listBlogs", "parameters": {}},
        {"id": "latency", "tool": "query_metric", "parameters": {"name": "latency_p95"}},
        {
            "id": "comments",
            "tool": "createComment",
            "parameters": {"blogId": "{{$item._id}}", "text": "Thanks"},
        },
    )
    assert read_item_names(data, CATALOG)["steps"][2]["forEach"] == "{{blogs.blogs}}"


def test_a_step_reading_itself_without_for_each_maps_over_the_one_list() -> None:
    """'Query the current value of each metric': the model wrote ``{{metric.name}}`` in the
    step ``metric`` itself, with no ``forEach``."""
    metrics = {"id": "metrics", "tool": "list_metrics", "parameters": {"category": "compute"}}
    metric = {"id": "metric", "tool": "query_metric", "parameters": {"name": "{{metric.name}}"}}
    out = read_item_names(plan(metrics, metric), CATALOG)
    assert out["steps"][1]["forEach"] == "{{metrics.metrics}}"
    assert out["steps"][1]["parameters"] == {"name": "{{$item.name}}"}


def test_a_step_reading_itself_is_left_for_the_validator_without_one_fitting_list() -> None:
    # no list on offer at all: the cycle is reported, not guessed away
    alone = {"id": "metric", "tool": "query_metric", "parameters": {"name": "{{metric.name}}"}}
    data = plan(alone)
    assert read_item_names(data, CATALOG) is data
    # a list on offer whose items do not have the path read
    posts = dict(POSTS)
    wrong = {"id": "metric", "tool": "query_metric", "parameters": {"name": "{{metric.unit_x}}"}}
    data = plan(posts, wrong)
    assert read_item_names(data, CATALOG) is data


def test_a_for_each_on_the_step_whose_list_it_is_moves_to_the_step_using_the_item() -> None:
    # what the model wrote for our map-3, "for every post by author a1, add the comment
    # 'Reviewed'", three times over: a map of listBlogs over its own output (a cycle), and the
    # comment using the item with no map
    from toolplan.plan_format.plan import parse_plan
    from toolplan.validation import analyze

    data = plan(
        {
            "id": "posts",
            "tool": "listBlogs",
            "parameters": {"authorId": "a1"},
            "dependsOn": [],
            "forEach": "{{posts.blogs}}",
            "when": None,
        },
        {
            "id": "comment",
            "tool": "createComment",
            "parameters": {"blogId": "{{$item._id}}", "text": "Reviewed"},
            "dependsOn": [],
            "forEach": None,
            "when": None,
        },
    )
    out = read_item_names(data, CATALOG)
    posts, comment = out["steps"]
    assert "forEach" not in posts
    assert comment["forEach"] == "{{posts.blogs}}" and comment["dependsOn"] == ["posts"]
    assert data["steps"][0]["forEach"] == "{{posts.blogs}}"  # the input is not changed
    analysis = analyze(parse_plan(out), CATALOG)  # valid: no cycle, the item fits
    assert analysis.order == ["posts", "comment"]


def test_a_for_each_over_its_own_output_stays_when_the_taker_is_not_certain() -> None:
    own = {"id": "posts", "tool": "listBlogs", "parameters": {}, "forEach": "{{posts.blogs}}"}
    taker = {"id": "a", "tool": "createComment", "parameters": {"blogId": "{{$item._id}}"}}
    two = plan(own, taker, dict(taker, id="b"))
    assert read_item_names(two, CATALOG)["steps"][0]["forEach"] == "{{posts.blogs}}"
    none = plan(own, {"id": "d", "tool": "createDraft", "parameters": {"title": "t"}})
    assert read_item_names(none, CATALOG) is none
