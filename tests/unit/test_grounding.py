"""Made-up data where a tool's output belongs (seen in a new-user trial: literal weather reports
passed to ``compare_data``, with ``dependsOn`` and no template), refused with the template to
write; literals from the request are never refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from typing_extensions import TypedDict

from toolplan.builtin_tools import blog, metrics, weather
from toolplan.errors import ValidationIssue
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.planning.grounding import Grounds, check_grounding
from toolplan.planning.id_by_name import find_ids_by_name
from toolplan.planning.reuse import match_plan
from toolplan.store.protocol import PlanRecord
from toolplan.tools.catalog import ToolCatalog


def ids_by_name(plan: Plan, catalog: ToolCatalog) -> list[ValidationIssue]:
    """The issue of each id argument given the name of something the plan creates."""
    return [found.issue for found in find_ids_by_name(plan, catalog)]


CATALOG = ToolCatalog([*weather.TOOLS, *metrics.TOOLS, *blog.TOOLS])
BERLIN_MADRID = "What's the weather in Berlin and Madrid, and which one is warmer?"


def plan(*steps: tuple[Any, ...]) -> Any:
    return parse_plan(
        {
            "steps": [
                {
                    "id": s[0],
                    "tool": s[1],
                    "parameters": s[2],
                    "dependsOn": s[3] if len(s) > 3 else [],
                }
                for s in steps
            ]
        }
    )


def invented(*, depends: bool = True) -> list[tuple[Any, ...]]:
    """The trial's plan: weather reports the model made up, passed to compare_data."""
    return [
        ("berlin", "get_weather", {"location": "Berlin"}),
        ("madrid", "get_weather", {"location": "Madrid"}),
        (
            "compare",
            "compare_data",
            {
                "data_a": {"city": "Berlin", "temp": 12.5, "condition": "cloudy"},
                "data_b": {"city": "Madrid", "temp": 24.1, "condition": "sunny"},
            },
            ["berlin", "madrid"] if depends else [],
        ),
    ]


def test_the_berlin_madrid_plan_is_refused_naming_the_templates() -> None:
    issues = check_grounding(plan(*invented()), CATALOG, BERLIN_MADRID)
    assert [(i.code, i.step) for i in issues] == [("ungrounded", "compare")] * 2
    first, second = (i.message for i in issues)
    assert first.startswith(
        "step 'compare': argument 'data_a' of tool 'compare_data' is a literal object"
    )
    assert "depends on 'berlin' (get_weather)" in first
    assert "12.5" in first and "in neither the request nor any tool's output" in first
    assert first.endswith('"{{berlin}}" (or one field of it, e.g. "{{berlin.temp}}")')
    assert '"{{madrid}}"' in second and "berlin" not in second.split("depends on")[1]


def test_made_up_objects_are_refused_without_the_edge_too() -> None:
    issues = check_grounding(plan(*invented(depends=False)), CATALOG, BERLIN_MADRID)
    assert len(issues) == 2 and "this plan has 'berlin' (get_weather)" in issues[0].message


def test_one_side_templated_the_other_made_up() -> None:
    steps = invented()
    steps[2][2]["data_a"] = "{{berlin}}"
    (issue,) = check_grounding(plan(*steps), CATALOG, BERLIN_MADRID)
    assert "'data_b'" in issue.message and '"{{madrid}}"' in issue.message


def test_a_list_of_made_up_reports_gets_a_list_of_templates() -> None:
    issue, *_ = check_grounding(
        plan(
            ("paris", "get_weather", {"location": "Paris"}),
            ("rome", "get_weather", {"location": "Rome"}),
            (
                "sum",
                "summarize",
                {"data": [{"city": "Rome", "temp": 20}, {"city": "Paris", "temp": 15}]},
                ["paris", "rome"],
            ),
        ),
        CATALOG,
        "Summarize the weather in Paris and Rome",
    )
    assert issue.message.endswith('["{{rome}}", "{{paris}}"]')


def test_a_made_up_number_where_a_dependency_has_one() -> None:
    (issue,) = check_grounding(
        plan(
            ("q", "query_metric", {"name": "error_rate"}),
            (
                "t",
                "check_threshold",
                {"metric_name": "error_rate", "threshold": 1, "value": 1.2},
                ["q"],
            ),
        ),
        CATALOG,
        "Query the error rate, then check whether its current value is above 1 percent",
    )
    assert "argument 'value'" in issue.message and 'e.g. "{{q.current}}"' in issue.message


class Business(TypedDict):
    business_id: str
    rating: float
    review_count: int


def test_a_number_for_an_option_is_the_callers_choice() -> None:
    """NESTFUL executable-10: reviews of a business found by a search, ``limit=5``, refused
    because the search's output has numbers (a rating, a review count). An argument whose
    declared default is a number is an option; one that defaults to nothing is still data."""

    @tool
    def find_businesses(query: str) -> Business:
        """Find a business."""
        return {"business_id": "b1", "rating": 4.5, "review_count": 12}

    @tool
    def reviews(
        business_id: str,
        limit: int = 20,
        min_rating: float | None = None,
        min_count: float = 0.5,
    ) -> list[str]:
        """Reviews of a business."""
        return []

    catalog = ToolCatalog([find_businesses, reviews])
    request = "Find a pet groomer in Sydney and its reviews"

    def refused(**chosen: Any) -> list[str]:
        found = check_grounding(
            plan(
                ("shop", "find_businesses", {"query": "pet groomer in Sydney"}),
                ("r", "reviews", {"business_id": "{{shop.business_id}}", **chosen}),
            ),
            catalog,
            request,
        )
        return [issue.message for issue in found]

    assert refused(limit=5) == []
    (made_up,) = refused(min_rating=4.2)
    assert "argument 'min_rating'" in made_up and "{{shop.rating}}" in made_up
    (fraction,) = refused(min_count=7)  # a fraction as the default: data, not an option
    assert "argument 'min_count'" in fraction


def test_a_depends_on_edge_no_template_uses() -> None:
    (issue,) = check_grounding(
        plan(
            ("a", "createAuthor", {"name": "Alice", "email": "alice@test.com"}),
            ("b", "createBlog", {"authorId": "author_1", "title": "Hello", "content": "x"}, ["a"]),
        ),
        CATALOG,
        "Create author Alice with email alice@test.com, then a blog titled Hello",
    )
    assert "without using its output" in issue.message and issue.message.endswith(
        'pass "{{a._id}}"'
    )


def mapped(items: Any, depends: list[str]) -> dict[str, Any]:
    """A comment on each of ``items`` (a ``forEach``), waiting for ``depends``."""
    return {
        "id": "comment",
        "tool": "createComment",
        "parameters": {"blogId": "{{$item._id}}", "text": "Nice!"},
        "forEach": items,
        "dependsOn": depends,
    }


LISTING = {"id": "list", "tool": "listBlogs", "parameters": {}, "dependsOn": []}
EACH_POST = "Comment 'Nice!' on every blog post"


def test_a_literal_for_each_list_where_a_listing_fits_is_refused_naming_it() -> None:
    made_up = [{"_id": "post-1"}, {"_id": "post-2"}]
    whole = parse_plan({"steps": [LISTING, mapped(made_up, ["list"])]})
    (issue,) = check_grounding(whole, CATALOG, EACH_POST)
    assert (issue.code, issue.step) == ("ungrounded", "comment")
    assert "its forEach is a literal list" in issue.message
    assert '"post-1", "post-2" are in neither the request' in issue.message
    assert issue.message.endswith('"forEach": "{{list.blogs}}"')


def test_a_literal_for_each_list_the_request_gives_or_with_no_listing_to_use_is_kept() -> None:
    given = [{"_id": "p1"}, {"_id": "p2"}]
    whole = parse_plan({"steps": [LISTING, mapped(given, ["list"])]})
    assert check_grounding(whole, CATALOG, "Comment 'Nice!' on posts p1 and p2") == []
    # the user's ids, with a title the model added: the ids are what the map is over
    titled = [{"_id": "p1", "title": "Post one"}, {"_id": "p2", "title": "Post two"}]
    whole = parse_plan({"steps": [LISTING, mapped(titled, ["list"])]})
    assert check_grounding(whole, CATALOG, "Comment 'Nice!' on posts p1 and p2") == []
    # numbers, names and dates written the model's way are the user's list, not a listing's
    for items in ([1, 2, 3, 4, 5], ["New York", "Los Angeles"], [{"date": "2024-03-03"}]):
        whole = parse_plan({"steps": [LISTING, mapped(items, ["list"])]})
        assert check_grounding(whole, CATALOG, "Pages 1 to 5 in NYC and LA on March 3") == []
    # nothing in the plan lists anything: nothing to take the list from
    alone = parse_plan({"steps": [mapped([{"_id": "post-1"}], [])]})
    assert check_grounding(alone, CATALOG, EACH_POST) == []
    # a dependency whose output has no list
    author = {"id": "a", "tool": "createAuthor", "dependsOn": []}
    author["parameters"] = {"name": "Ann", "email": "ann@test.com"}
    plain = parse_plan({"steps": [author, mapped([{"_id": "post-1"}], ["a"])]})
    assert check_grounding(plain, CATALOG, EACH_POST + " as Ann (ann@test.com)") == []


class Profile(TypedDict):
    name: str
    email: str
    age: int


@tool
def get_profile(user: str) -> Profile:
    """A user's profile."""
    return {"name": user, "email": "", "age": 0}


@tool
def update_profile(user: str, profile: dict[str, Any], age: int = 0) -> Profile:
    """Replace a user's profile."""
    return {"name": user, "email": str(profile.get("email")), "age": age}


@tool
def triangle_area(base: float, height: float) -> float:
    """The area of a triangle."""
    return base * height / 2


@pytest.mark.parametrize(
    ("query", "steps"),
    [
        (
            "create author Alice with email alice@test.com",
            [("a", "createAuthor", {"name": "Alice", "email": "alice@test.com"})],
        ),
        (
            "Is the p95 latency above two hundred... no, above 200 ms?",
            [("t", "check_threshold", {"metric_name": "latency_p95", "threshold": 200})],
        ),
        (
            "Query CPU usage, then check whether it is above 80",
            [
                ("q", "query_metric", {"name": "cpu_usage"}),
                ("t", "check_threshold", {"metric_name": "cpu_usage", "threshold": 80}, ["q"]),
            ],
        ),
        (
            "Get bob's profile, then set it to name Bob, email bob@x.com and age 42",
            [
                ("get", "get_profile", {"user": "bob"}),
                (
                    "set",
                    "update_profile",
                    {"user": "bob", "profile": {"name": "Bob", "email": "bob@x.com"}, "age": 42},
                    ["get"],
                ),
            ],
        ),
        (
            "Get bob's profile and raise the rate by 5%",
            [
                ("get", "get_profile", {"user": "bob"}),
                ("set", "update_profile", {"user": "bob", "profile": {"rate": 0.05}}, ["get"]),
            ],
        ),
        (
            "What is the area of a triangle with base 10 and height 5.5?",
            [("area", "triangle_area", {"base": 10, "height": 5.5})],
        ),
    ],
)
def test_literals_from_the_request_are_never_refused(query: str, steps: list[Any]) -> None:
    catalog = ToolCatalog([*CATALOG, get_profile, update_profile, triangle_area])
    assert check_grounding(plan(*steps), catalog, query) == []


def test_a_replans_context_grounds_the_earlier_results() -> None:
    steps = invented()
    context = 'earlier results: berlin {"temp": 12.5, "condition": "cloudy"}; madrid 24.1 sunny'
    assert check_grounding(plan(*steps), CATALOG, BERLIN_MADRID, context=context) == []


def test_numbers_in_text() -> None:
    grounds = Grounds("a budget of 1,500 at 5% over 12 months, 1e-9 F, \u22121.7 °C")
    assert all(map(grounds.has_number, [1500, 0.05, 5, 12, 1e-9, -1.7, 0, 1]))
    assert not any(map(grounds.has_number, [34.4, 150, 2]))


@pytest.mark.parametrize("said", ["above eighty", "über achtzig", "au-dessus de quatre-vingts"])
def test_a_number_in_words_is_judged_alike_in_every_language(said: str) -> None:
    """No language's word list decides whether a plan is valid (issue 43): a number written in
    words is not read as a number in English either, so a plan is refused, or not, on its
    structure alone, whatever the language of the request."""
    assert not Grounds(f"Query CPU usage, then check whether it is {said}").has_number(80)
    steps = [
        ("q", "query_metric", {"name": "cpu_usage"}),
        ("t", "check_threshold", {"metric_name": "cpu_usage", "threshold": 80}, ["q"]),
    ]
    (issue,) = check_grounding(plan(*steps), CATALOG, f"CPU usage: is it {said}?")
    assert issue.step == "t" and "argument 'threshold'" in issue.message


def test_id_hints_never_close_a_cycle_or_name_another_kind() -> None:
    """The hint that pointed ``authorId`` at a comment's ``_id``: the comment depends on the
    blog (a cycle), and a comment is not an author."""
    steps = [
        ("post", "createBlog", {"authorId": "alice", "title": "Hello", "content": "x"}),
        ("comment", "createComment", {"blogId": "{{post._id}}", "text": "Hi", "author": "alice"}),
    ]
    assert ids_by_name(plan(*steps), CATALOG) == []
    assert check_grounding(plan(*steps), CATALOG, "Alice posts Hello; comment Hi as alice") == []
    # with the author created too, the hint names the author, listed after the comment or not
    author = ("author", "createAuthor", {"name": "Alice", "email": "alice@test.com"})
    (issue,) = ids_by_name(plan(*steps, author), CATALOG)
    assert issue.step == "post" and issue.message.endswith('"{{author._id}}"')
    # another kind, no cycle: a getAuthor given a comment's text is not pointed at the comment
    other = [
        ("post", "createBlog", {"authorId": "{{author._id}}", "title": "Nice", "content": "x"}),
        ("comment", "createComment", {"blogId": "{{post._id}}", "text": "Great"}),
        ("who", "getAuthor", {"authorId": "great"}),
        author,
    ]
    assert ids_by_name(plan(*other), CATALOG) == []


def _record(query: str, steps: list[tuple[Any, ...]]) -> PlanRecord:
    stored = plan(*steps).to_json()
    return PlanRecord(
        plan_id="plan_1",
        request_id="req_1",
        plan=stored,
        analysis={},
        status="planned",
        created_at="2026-01-01T00:00:00Z",
        query=query,
    )


def test_parametric_reuse_never_carries_made_up_numbers() -> None:
    """The trial's invented weather reports went on to a query about Lisbon and Prague."""
    new = "What's the weather in Lisbon and Prague, and which one is warmer?"
    # step ids that are not the cities' names: a template holding one keeps it from being a slot
    steps = [
        ("a", "get_weather", {"location": "Berlin"}),
        ("b", "get_weather", {"location": "Madrid"}),
        ("c", "compare_data", invented()[2][2], ["a", "b"]),
    ]
    assert match_plan(new, _record(BERLIN_MADRID, steps)) is None
    assert match_plan(new, _record(BERLIN_MADRID, steps), CATALOG) is None
    steps[2] = ("c", "compare_data", {"data_a": "{{a}}", "data_b": "{{b}}"})
    found = match_plan(new, _record(BERLIN_MADRID, steps), CATALOG)
    assert found is not None and found.values == {"Berlin": "Lisbon", "Madrid": "Prague"}


def test_parametric_reuse_keeps_numbers_the_new_request_has() -> None:
    steps = [("t", "check_threshold", {"metric_name": "error_rate", "threshold": 80})]
    found = match_plan("Is latency_p95 above 80?", _record("Is error_rate above 80?", steps))
    assert found is not None and found.plan["steps"][0]["parameters"]["threshold"] == 80


def test_no_false_refusal_on_bfcl_ground_truth_or_the_projects_own_plans() -> None:
    """BFCL's answers take every literal from the request (``python -m bench.grounding``)."""
    from bench.bfcl.data import BfclMissing
    from bench.grounding import measure_bfcl, measure_own

    own = measure_own()
    assert own["plans"] >= 25 and own["refusals"] == []
    try:
        bfcl = measure_bfcl()
    except BfclMissing:
        pytest.skip("bfcl-eval is not installed")
    assert {category: row["refused"] for category, row in bfcl.items()} == dict.fromkeys(bfcl, 0)
    assert sum(row["entries"] for row in bfcl.values()) == 2351


def test_nestfuls_gold_is_checked_as_plans_with_each_samples_tools(tmp_path: Path) -> None:
    """``python -m bench.grounding`` checks every NESTFUL split's gold too, each sample with
    its own tools and query. Here the measure runs on the stand-in copy (its gold chains a
    search's output into a booking); the real copy's figures (0 of 131 tuning samples
    refused) are BENCHMARKS', since CI has no copy of the data."""
    from bench.grounding import measure_nestful

    from tests.support.nestful_copy import write_copy

    found = measure_nestful(write_copy(tmp_path / "nestful"))
    assert {split: row["samples"] for split, row in found.items()} == {
        "sgd": 2,
        "executable": 1,
        "glaive": 0,
    }
    assert {split: row["refused"] for split, row in found.items()} == dict.fromkeys(found, 0)


def test_the_refusal_reads_no_word_list() -> None:
    """Issue 43: the grounding refusal (and the id-by-name check it runs) does not import the
    function words."""
    import ast
    import inspect

    from toolplan.planning import grounding, id_by_name

    for module in (grounding, id_by_name):
        tree = ast.parse(inspect.getsource(module))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        assert "toolplan.planning.words" not in imported


def test_a_listing_declared_as_a_nullable_type_list_is_a_listing_too() -> None:
    """Grounding read ``"type": ["array", "null"]`` (and ``oneOf``) as no list at all, while
    another rule read it as one; it uses the one walker now, so this forEach is refused."""
    from langchain_core.tools import StructuredTool

    listing = StructuredTool.from_function(
        lambda: {},
        name="listPosts",
        description="List posts.",
        metadata={
            "returns": {
                "type": "object",
                "properties": {"posts": {"type": ["array", "null"], "items": POST_ITEM}},
            }
        },
    )
    catalog = ToolCatalog([listing, *blog.TOOLS])
    made_up = [{"_id": "post-1"}, {"_id": "post-2"}]
    listed = {"id": "list", "tool": "listPosts", "parameters": {}, "dependsOn": []}
    whole = parse_plan({"steps": [listed, mapped(made_up, ["list"])]})
    (issue,) = check_grounding(whole, catalog, EACH_POST)
    assert issue.message.endswith('"forEach": "{{list.posts}}"')


POST_ITEM = {"type": "object", "properties": {"_id": {"type": "string"}}}
