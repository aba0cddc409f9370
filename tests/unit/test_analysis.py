"""Validation (every error, all at once) and dependency analysis."""

from __future__ import annotations

from typing import Any

import pytest

from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.plan import parse_plan
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

CATALOG = load_tool_modules(["blog", "metrics", "weather"])


def steps(*items: dict[str, Any]) -> dict[str, Any]:
    return {"steps": list(items)}


def step(sid: str, tool: str = "get_weather", **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters or {"location": "Paris"}}


def issues_of(data: dict[str, Any], **kwargs: Any) -> list[str]:
    with pytest.raises(PlanInvalid) as caught:
        analyze(parse_plan(data), CATALOG, **kwargs)
    return [issue.message for issue in caught.value.issues]


def test_valid_plan_analysis() -> None:
    plan = parse_plan(
        steps(
            step("a"),
            step("b", location="London"),
            {
                "id": "c",
                "tool": "compare_data",
                "parameters": {"data_a": "{{a}}", "data_b": "{{b}}"},
            },
            {"id": "d", "tool": "get_weather", "parameters": {"location": "x"}, "dependsOn": "c"},
        )
    )
    analysis = analyze(plan, CATALOG)
    assert analysis.dependencies == {"a": [], "b": [], "c": ["a", "b"], "d": ["c"]}
    assert analysis.layers == [["a", "b"], ["c"], ["d"]]
    assert analysis.order == ["a", "b", "c", "d"]
    assert analysis.critical_path in (["a", "c", "d"], ["b", "c", "d"])
    assert analysis.critical_path_estimate == 3.0


def test_critical_path_uses_estimates() -> None:
    plan = parse_plan(
        steps(
            step("fast"),
            step("slow", "query_metric", name="cpu_usage"),
            {
                "id": "c",
                "tool": "compare_data",
                "parameters": {"data_a": "{{fast}}", "data_b": "{{slow}}"},
            },
        )
    )
    analysis = analyze(plan, CATALOG, estimate=lambda s: 10.0 if s.tool == "query_metric" else 1.0)
    assert analysis.critical_path == ["slow", "c"]
    assert analysis.critical_path_estimate == 11.0


def test_duplicate_ids() -> None:
    assert any("'a' is used more than once" in m for m in issues_of(steps(step("a"), step("a"))))


def test_unknown_tool_suggests_closest() -> None:
    (message,) = issues_of(steps(step("a", "get_wether")))
    assert "unknown tool 'get_wether'" in message and "did you mean 'get_weather'" in message


def test_unknown_tool_offers_first_the_tools_that_take_its_parameters() -> None:
    from langchain_core.tools import StructuredTool

    from toolplan.tools import ToolCatalog

    def book_house(where_to: str, number_of_adults: int) -> dict[str, str]:
        """Book a house."""
        return {}

    def reserve_hotel(hotel_name: str, number_of_days: int) -> dict[str, str]:
        """Reserve a hotel room."""
        return {}

    hotels = ToolCatalog(
        [
            StructuredTool.from_function(book_house, name="Hotels_BookHouse"),
            StructuredTool.from_function(reserve_hotel, name="Hotels_ReserveHotel"),
        ]
    )
    for parameters, offered in [
        ({}, "'Hotels_BookHouse' or 'Hotels_ReserveHotel'"),
        ({"hotel_name": "Ritz"}, "'Hotels_ReserveHotel' or 'Hotels_BookHouse'"),
        ({"where_to": "Rome", "hotel_name": "Ritz"}, "'Hotels_BookHouse' or 'Hotels_ReserveHotel'"),
    ]:
        with pytest.raises(PlanInvalid) as caught:
            analyze(parse_plan(steps(step("a", "Hotels_BookHotel", **parameters))), hotels)
        assert f"unknown tool 'Hotels_BookHotel'; did you mean {offered}?" in str(caught.value)


def test_unknown_tool_lists_known_ones_when_nothing_is_close() -> None:
    from toolplan.tools import ToolCatalog

    small = load_tool_modules(["weather"])
    assert isinstance(small, ToolCatalog)
    with pytest.raises(PlanInvalid) as caught:
        analyze(parse_plan(steps(step("a", "zzz"))), small)
    assert "known tools: get_weather, compare_data, summarize" in str(caught.value)


def test_unknown_fallback_tool() -> None:
    data = steps({**step("a"), "fallback": {"tool": "nope", "parameters": {}}})
    assert any("fallback: unknown tool 'nope'" in m for m in issues_of(data))


def test_reference_to_missing_step_via_template_and_depends_on() -> None:
    data = steps(
        {
            "id": "a",
            "tool": "get_weather",
            "parameters": {"location": "{{ghost.city}}"},
            "dependsOn": ["phantom"],
        }
    )
    messages = issues_of(data)
    assert any("template '{{ghost.city}}' references unknown step 'ghost'" in m for m in messages)
    assert any("dependsOn names unknown step 'phantom'" in m for m in messages)


def test_unknown_output_step() -> None:
    data = {**steps(step("a")), "outputSteps": ["zz"]}
    assert any("outputSteps names unknown step 'zz'" in m for m in issues_of(data))


def test_cycle_is_named() -> None:
    data = steps(
        {"id": "a", "tool": "get_weather", "parameters": {"location": "{{b.city}}"}},
        {"id": "b", "tool": "get_weather", "parameters": {"location": "{{a.city}}"}},
    )
    assert any(
        m in ("dependency cycle: a -> b -> a", "dependency cycle: b -> a -> b")
        for m in issues_of(data)
    )


def test_three_step_cycle_behind_a_tail_and_a_self_loop() -> None:
    data = steps(
        {"id": "a", "tool": "get_weather", "parameters": {"location": "x"}, "dependsOn": ["c"]},
        {"id": "b", "tool": "get_weather", "parameters": {"location": "x"}, "dependsOn": ["a"]},
        {"id": "c", "tool": "get_weather", "parameters": {"location": "x"}, "dependsOn": ["b"]},
        {"id": "tail", "tool": "get_weather", "parameters": {"location": "{{c.city}}"}},
    )
    (message,) = issues_of(data)
    assert message == "dependency cycle: a -> b -> c -> a"
    (self_loop,) = issues_of(
        steps({"id": "s", "tool": "get_weather", "parameters": {"location": "{{s}}"}})
    )
    assert self_loop.startswith("dependency cycle: s -> s: step 's' uses its own output ('{{s}}')")


@pytest.mark.parametrize(
    ("own", "says"),
    [
        ({"parameters": {"location": "{{s.city}}"}}, "uses its own output ('{{s.city}}'); a step"),
        ({"parameters": {"location": "x"}, "dependsOn": ["s"]}, "is in its own dependsOn"),
        (
            {"parameters": {"location": "{{$item}}"}, "forEach": "{{s.cities}}"},
            "uses its own output in its forEach or when",
        ),
    ],
)
def test_a_step_that_waits_for_itself_is_told_what_to_change(
    own: dict[str, Any], says: str
) -> None:
    """A model wrote ``{{best_offers.id}}`` inside ``best_offers`` (NESTFUL ``executable-22``,
    JSON format) and repeated it twice, told only ``dependency cycle: best_offers ->
    best_offers``."""
    (message,) = issues_of(steps({"id": "s", "tool": "get_weather", **own}))
    assert message.startswith("dependency cycle: s -> s: step 's' ") and says in message


@pytest.mark.parametrize(
    ("parameters", "fragment"),
    [
        ({}, "missing required argument 'location'"),
        ({"location": "x", "unit": "C"}, "unknown argument 'unit'"),
        (
            {"location": 42},
            "argument 'location' of tool 'get_weather' is invalid: 42 is not of type 'string'",
        ),
    ],
)
def test_literal_arguments_are_checked_against_schema(
    parameters: dict[str, Any], fragment: str
) -> None:
    data = steps({"id": "a", "tool": "get_weather", "parameters": parameters})
    assert any(fragment in m for m in issues_of(data))


@pytest.mark.parametrize(
    ("given", "suggested"),
    [
        ("locaton", "location"),
        ("numAdults", "number_of_adults"),
        ("city", "city_name"),
        ("number_of_days", None),  # says something else: no suggestion
        ("days", None),
    ],
)
def test_an_unknown_argument_is_told_a_close_name_only_when_it_is_spelled_alike(
    given: str, suggested: str | None
) -> None:
    """``number_of_days`` for a tool taking ``number_of_adults`` was told "did you mean
    'number_of_adults'?", and the real model put the days there (NESTFUL sgd-29)."""
    from toolplan.validation.dag import check_arguments

    properties = {
        name: {"type": "string"} for name in ("location", "number_of_adults", "city_name")
    }
    schema = {"type": "object", "properties": properties}
    (issue,) = check_arguments("step 's'", "search", {given: "x"}, schema)
    assert issue.message.startswith(f"step 's': unknown argument {given!r} for tool 'search'")
    if suggested is None:
        assert "did you mean" not in issue.message
    else:
        assert issue.message.endswith(f"; did you mean {suggested!r}?")


def test_an_unknown_argument_that_another_tool_takes_names_that_tool() -> None:
    """The real model gave a restaurant search the party size that the reservation takes, and,
    told only what the search takes, wrote the search again with it (NESTFUL sgd-16)."""
    [message] = issues_of(steps(step("p", "listBlogs", authorId="a1", title="Hello")))
    # two tools take it (createBlog, createDraft): which one is a guess, and both write
    assert message == "step 'p': unknown argument 'title' for tool 'listBlogs' (it takes: authorId)"
    [one] = issues_of(steps(step("p", "listBlogs", authorId="a1", blogId="b1")))
    assert one.endswith(
        "; 'blogId' is an argument of tool 'createComment': call that tool for it as well"
    )
    # the plan calls that tool already: the argument is to move there, not a call to add
    [moved] = issues_of(
        steps(
            step("c", "createComment", blogId="b1", text="Hi"),
            step("p", "listBlogs", authorId="a1", blogId="b1"),
        )
    )
    assert moved.endswith(
        "; 'blogId' is an argument of tool 'createComment', which the plan calls: give it to "
        "that call, and leave it out here"
    )
    [spelled] = issues_of(steps(step("p", "listBlogs", authorID="a1")))
    assert spelled.endswith("; did you mean 'authorId'?")  # a misspelling is told as one
    [nowhere] = issues_of(steps(step("p", "listBlogs", authorId="a1", mood="calm")))
    assert nowhere.endswith("(it takes: authorId)")


def test_an_argument_many_tools_take_points_to_none_of_them() -> None:
    from langchain_core.tools import StructuredTool

    from toolplan.tools import ToolCatalog

    def searcher(name: str) -> StructuredTool:
        return StructuredTool.from_function(
            lambda query="": {"hits": []}, name=name, description=f"Search {name}."
        )

    catalog = ToolCatalog([searcher(f"search_{n}") for n in range(4)] + [searcher("lookup")])
    data = steps(step("s", "get_weather", location="Oslo", query="rain"))
    with pytest.raises(PlanInvalid) as invalid:
        analyze(parse_plan(data), ToolCatalog([*CATALOG, *catalog]))
    [message] = [issue.message for issue in invalid.value.issues]
    assert message.startswith("step 's': unknown argument 'query' for tool 'get_weather'")
    assert "is an argument of" not in message  # five tools take it: it names none


def test_a_long_value_is_quoted_briefly() -> None:
    """A problem quotes what the plan wrote; 90,000 characters of it went back to the model."""
    [message] = issues_of(steps(step("w", location="Oslo", **{"q" * 90_000: 1})))
    assert message.startswith("step 'w': unknown argument 'qqqq")
    assert "...' (90,000 characters) for tool 'get_weather'" in message and len(message) < 300


def test_a_long_run_between_two_quoted_names_is_not_taken_for_a_quote() -> None:
    """NESTFUL's LocalBusinessData returns 30 keys. The text between the quotes closing the step
    name and opening the missing key was cut as if it were a quote, so the model never saw the
    keys it could use ("returns an object with keys business_id...' (501 characters)items')."""
    keys = {f"field_number_{n}": {"type": "string"} for n in range(30)}
    message = f"step 'places' (LocalBusinessData) returns an object with keys {', '.join(keys)}, without 'items'"
    assert ValidationIssue("template", message).message == message
    templated = f"template '{{{{places.items[0].id}}}}': the step's {message}"
    assert ValidationIssue("template", templated).message == templated
    quoted = "q" * 300
    assert ValidationIssue("template", f"x '{quoted}' y").message == (
        f"x '{'q' * 60}...' (300 characters) y"
    )


def test_enum_and_number_types() -> None:
    data = steps(
        {
            "id": "a",
            "tool": "check_threshold",
            "parameters": {"metric_name": "cpu", "threshold": "high", "operator": "gt"},
        },
        {
            "id": "b",
            "tool": "check_threshold",
            "parameters": {"metric_name": "cpu", "threshold": 1, "operator": "bigger"},
        },
    )
    messages = issues_of(data)
    assert any("'threshold'" in m and "'high' is not of type 'number'" in m for m in messages)
    assert any("'operator'" in m and "'bigger' is not one of" in m for m in messages)


def test_templated_arguments_count_as_present_and_skip_type_checks() -> None:
    plan = parse_plan(
        steps(
            step("a"),
            {
                "id": "t",
                "tool": "check_threshold",
                "parameters": {"metric_name": "{{a.city}}", "threshold": "{{a.temp}}"},
            },
        )
    )
    assert analyze(plan, CATALOG).dependencies["t"] == ["a"]


def test_parameters_must_be_an_object() -> None:
    data = steps({"id": "a", "tool": "get_weather", "parameters": "Paris"})
    assert any("must be a JSON object" in m for m in issues_of(data))


def test_step_limit() -> None:
    data = steps(*[step(f"s{i}") for i in range(6)])
    assert any("6 steps, more than the limit of 5" in m for m in issues_of(data, max_steps=5))
    analyze(parse_plan(steps(*[step(f"s{i}") for i in range(50)])), CATALOG)  # default limit is 50
    assert any("limit of 50" in m for m in issues_of(steps(*[step(f"s{i}") for i in range(51)])))


def test_a_plan_over_the_step_limit_is_refused_for_that_alone() -> None:
    # 10,000 steps that share one id: the limit is the one problem (not 20,000 of them).
    data = steps(*[step("s", "no_such_tool") for _ in range(10_000)])
    with pytest.raises(PlanInvalid) as refused:
        analyze(parse_plan(data), CATALOG)
    assert [issue.code for issue in refused.value.issues] == ["limit"]
    assert "10000 steps, more than the limit of 50" in refused.value.message
    assert refused.value.message.startswith("the plan is invalid (1 problem)")


def test_a_refusal_lists_a_capped_number_of_problems() -> None:
    data = steps(*[step(f"s{i}", "no_such_tool") for i in range(40)])
    with pytest.raises(PlanInvalid) as refused:
        analyze(parse_plan(data), CATALOG)
    error = refused.value
    assert len(error.issues) == 25 and error.omitted == 15
    assert error.message.startswith("the plan is invalid (40 problems):")
    assert error.message.endswith("  - and 15 more (fix these and check again)")
    assert error.message.count("unknown tool") == 25


@pytest.mark.parametrize("name", ["execute_plan", "execute_tool_plan"])
def test_calling_the_plan_executor_is_rejected(name: str) -> None:
    data = steps({"id": "inner", "tool": name, "parameters": {"plan": "{}"}})
    assert any("cannot call the plan executor itself" in m for m in issues_of(data))


def test_malformed_template_is_rejected() -> None:
    data = steps({"id": "a", "tool": "get_weather", "parameters": {"location": "{{a.}}"}})
    assert any("malformed template '{{a.}}'; write {{stepId}}" in m for m in issues_of(data))


def test_a_key_with_a_space_named_plainly_is_shown_quoted() -> None:
    # NESTFUL executable-16: the output sketch shows "Exchange Rate"; the model wrote it plainly
    data = steps(
        step("rate", "get_weather"),
        {"id": "b", "tool": "get_weather", "parameters": {"location": "{{rate.Exchange Rate}}"}},
    )
    assert any(
        "malformed template '{{rate.Exchange Rate}}': a key with a space is written quoted: "
        '{{rate["Exchange Rate"]}}' in m
        for m in issues_of(data)
    )


def test_invalid_step_id_and_empty_plan() -> None:
    assert any("not usable in templates" in m for m in issues_of(steps(step("bad id"))))
    assert issues_of({"steps": []}) == ["the plan has no steps"]


def test_all_errors_reported_together() -> None:
    data = steps(
        step("a", "nope"),
        step("a"),
        {"id": "b", "tool": "get_weather", "parameters": {"location": "{{zz}}", "extra": 1}},
    )
    assert len(issues_of(data)) == 4
