"""A step the request never asked for (seen on BFCL ``multiple``: a t-test request also got
``get_personality_traits(hobby="reading")``), refused so the model removes it; values the
request gives, rewrites of them and the catalog's own choices are never refused."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from toolplan.errors import ValidationIssue
from toolplan.plan_format.plan import parse_plan
from toolplan.planning.grounding import check_grounding
from toolplan.planning.unasked import check_unasked, drop_unasked, mentions
from toolplan.tools.catalog import ToolCatalog

TTEST = (
    "Run a two sample T-test to compare the average of Group A [3, 4, 5, 6, 4] and "
    "Group B [7, 8, 9, 8, 7] assuming equal variance."
)


@tool
def run_two_sample_ttest(group1: list[float], group2: list[float], equal_variance: bool) -> dict:
    """Run a two-sample t-test."""
    return {}


@tool
def get_personality_traits(hobby: str, trait_count: int = 5) -> dict:
    """Personality traits that go with a hobby."""
    return {}


@tool
def get_weather(location: str, unit: Literal["celsius", "fahrenheit"]) -> dict:
    """Current weather at a location."""
    return {}


class _HouseArgs(BaseModel):
    where_to: str = Field(description="City, in the format 'City, State'.")
    laundry: str = Field(description="'True', 'False', or 'dontcare' if no preference.")


@tool(args_schema=_HouseArgs)
def search_house(where_to: str, laundry: str) -> dict:
    """Search houses to stay in."""
    return {}


@tool
def set_alarm(alarm_time: str, purpose: str = "reminder") -> dict:
    """Set an alarm."""
    return {}


@tool
def convert_currency(base_currency: str, target_currency: str, amount: float) -> dict:
    """Convert an amount between currencies (ISO codes)."""
    return {}


CATALOG = ToolCatalog(
    [
        run_two_sample_ttest,
        get_personality_traits,
        get_weather,
        search_house,
        set_alarm,
        convert_currency,
    ]
)


def plan(*steps: tuple[str, str, dict[str, Any]], **extra: Any) -> Any:
    return parse_plan(
        {"steps": [{"id": i, "tool": t, "parameters": p, **extra} for i, t, p in steps]}
    )


def test_the_t_test_plans_unasked_step_is_refused_and_told_to_go() -> None:
    ttest = ("ttest", "run_two_sample_ttest", {"group1": [3, 4], "group2": [7, 8]})
    traits = ("traits", "get_personality_traits", {"hobby": "reading", "trait_count": 5})
    issues = check_unasked(plan(ttest, traits), CATALOG, TTEST)
    assert [(i.code, i.step) for i in issues] == [("unasked", "traits")]
    assert "neither what tool 'get_personality_traits' does" in issues[0].message
    assert "'reading' (hobby)" in issues[0].message
    assert "remove the step" in issues[0].message


def test_a_plan_of_only_unasked_steps_is_told_to_answer_with_no_steps() -> None:
    issues = check_unasked(
        plan(("traits", "get_personality_traits", {"hobby": "reading"})),
        CATALOG,
        "What is the capital of Peru?",
    )
    assert [i.step for i in issues] == ["traits"]
    assert "answer with no steps" in issues[0].message


@pytest.mark.parametrize(
    ("request_text", "value"),
    [
        ("What's the weather in Boston?", "Boston, MA"),  # a word of it
        ("Odds of drawing a heart card", "hearts"),  # its first four letters
        ("Key events in German history", "Germany"),
        ("Find a hotel in LA", "Los Angeles, CA"),  # initials
        ("How many Canadian dollars for 500 US dollars?", "CAD"),  # a code
        ("Book it under the name 'Grocery run'", "grocery run"),  # case aside
        ("Has disk throughput gone over 100 MB/s?", "disk_io"),  # words split at _
        ("Show me the CPU usage", "cpuUsage"),  # and at capitals
        ("The distance in kilometres", "km"),  # an abbreviation
        ("A circle with a radius of 5cm", "centimeter"),  # either way, split from its digit
        ("Who is the top player in woman tennis?", "women"),  # an irregular plural
        ("Events of December 2023", "Dec."),  # a value of one short word, cut short
    ],
)
def test_a_value_the_request_gives_in_other_words_is_mentioned(
    request_text: str, value: str
) -> None:
    assert mentions(request_text, value)


@pytest.mark.parametrize(
    ("request_text", "value"),
    [
        (TTEST, "reading"),
        ("Price of a used Gibson Les Paul guitar", "white"),
        # a short word is an abbreviation only when it is two or three consonants: not a word
        # of the request ("can", "do", "us"), nor an ordinal's ending ("1st"), nor a function
        # word of the value ("of")
        ("Can you help me?", "Canada"),
        ("What do I need?", "Download"),
        ("Show us the list", "user"),
        ("Remind me on the 1st", "Seattle"),
        ("Details of the information office", "Bank of America"),
    ],
)
def test_a_value_the_request_never_gives_is_not_mentioned(request_text: str, value: str) -> None:
    assert not mentions(request_text, value)


@pytest.mark.parametrize(
    ("request_text", "step"),
    [
        # a value of the argument's enum: the catalog's choice
        ("Is it cold in Oslo?", ("w", "get_weather", {"location": "Oslo", "unit": "celsius"})),
        # a word of the argument's description, and a rewrite of the request's city
        ("Find me a house in Austin", ("h", "search_house", {"where_to": "Austin, TX"})),
        ("Find me a house", ("h", "search_house", {"where_to": "x", "laundry": "dontcare"})),
        # a digit: a time written as text, a code for what the request names
        ("Wake me at 5 in the afternoon", ("a", "set_alarm", {"alarm_time": "17:00"})),
        ("Weigh sucrose", ("a", "set_alarm", {"alarm_time": "C12H22O11"})),
        # an optional argument's value is the model's default, not the request's
        ("Alarm at 7", ("a", "set_alarm", {"alarm_time": "07:00", "purpose": "gym"})),
        # codes for the currencies the request names
        (
            "How much is 20000 Japanese Yen in dollars?",
            ("c", "convert_currency", {"base_currency": "JPY", "target_currency": "USD"}),
        ),
    ],
)
def test_steps_the_request_asks_for_are_never_refused(
    request_text: str, step: tuple[str, str, dict[str, Any]]
) -> None:
    assert check_unasked(plan(step), CATALOG, request_text) == []


def test_a_step_that_takes_from_another_step_is_not_judged_by_its_literals() -> None:
    weather = ("w", "get_weather", {"location": "Oslo", "unit": "celsius"})
    traits = ("t", "get_personality_traits", {"hobby": "{{w.condition}} walks"})
    assert check_unasked(plan(weather, traits), CATALOG, "Weather in Oslo?") == []


def test_a_request_in_another_script_or_none_at_all_is_not_checked() -> None:
    beijing = plan(("w", "get_weather", {"location": "Beijing, China", "unit": "celsius"}))
    assert check_unasked(beijing, CATALOG, "北京的天气怎么样") == []
    traits = plan(("t", "get_personality_traits", {"hobby": "reading"}))
    assert check_unasked(traits, CATALOG, "") == []


def test_a_replans_context_counts_as_what_the_planner_was_told() -> None:
    traits = plan(("t", "get_personality_traits", {"hobby": "reading"}))
    weekend = "What should I do this weekend?"
    assert check_unasked(traits, CATALOG, weekend) != []
    told = "Earlier result: the user's hobby is reading"
    assert check_unasked(traits, CATALOG, f"{weekend}\n{told}") == []


def test_the_grounding_refusal_never_judges_a_step_by_the_requests_words() -> None:
    """Issue 43: whether the request's words name a step is a heuristic rewrite rule (off by
    default), never part of the refusal of invented data."""
    traits = plan(("t", "get_personality_traits", {"hobby": "reading"}))
    assert check_unasked(traits, CATALOG, "What should I do this weekend?") != []
    assert check_grounding(traits, CATALOG, "What should I do this weekend?") == []


@pytest.mark.parametrize(
    ("request_text", "step"),
    [
        # the request names what the tool is about; its values are the model's to write
        (
            "Create author Bob (bob@test.com) and draft a welcome message",
            ("d", "createDraft", {"title": "Welcome!", "content": "Hello, readers"}),
        ),
        (
            "Weather in Tokyo and in the capital of France",
            ("w", "get_weather", {"location": "Paris"}),
        ),
    ],
)
def test_a_tool_the_request_names_is_asked_for_whatever_its_values(
    request_text: str, step: tuple[str, str, dict[str, Any]]
) -> None:
    from toolplan.builtin_tools import blog, weather

    catalog = ToolCatalog([*weather.TOOLS, *blog.TOOLS])
    assert check_unasked(plan(step), catalog, request_text) == []


def test_function_words_mention_nothing() -> None:
    assert not mentions("What's the weather in Paris?", "The Hague")
    assert not mentions("What is it like in Rome?", "What it is")


def test_schemas_of_every_shape_are_read_without_failing() -> None:
    """A ``true`` schema (any value, as MCP tools may declare) and enums inside ``anyOf``."""

    class _Pick(BaseModel):
        kind: Literal["fast", "slow"] | None = Field(description="How to pick.")

    @tool(args_schema=_Pick)
    def pick(kind: str | None) -> dict:
        """Pick a shipping speed."""
        return {}

    catalog = ToolCatalog([pick])
    catalog.info("pick").parameters["properties"]["kind"] = True  # JSON Schema's "anything"
    assert check_unasked(plan(("p", "pick", {"kind": "fast"})), catalog, "Weather in Rome") != []
    offered = ToolCatalog([pick])
    # 'fast' is one of the catalog's own values: it proves nothing, and nothing else is passed
    assert check_unasked(plan(("p", "pick", {"kind": "fast"})), offered, "Weather in Rome") == []


def test_unasked_steps_nothing_needs_are_dropped_with_the_outputs_that_named_them() -> None:
    ttest = ("ttest", "run_two_sample_ttest", {"group1": [3, 4], "group2": [7, 8]})
    traits = ("traits", "get_personality_traits", {"hobby": "reading"})
    data = plan(ttest, traits).to_json()
    data["outputSteps"] = ["ttest", "traits"]
    whole = parse_plan(data)
    dropped = drop_unasked(whole, check_unasked(whole, CATALOG, TTEST))
    assert dropped is not None
    smaller, which = dropped
    assert which == {"traits": "get_personality_traits"}
    assert smaller.step_ids == ["ttest"] and smaller.output_steps == ["ttest"]


@pytest.mark.parametrize(
    "extra",
    [
        {"parameters": {"group1": "{{traits.scores}}", "group2": [7, 8]}},  # uses its output
        {"forEach": "{{traits.list}}"},
    ],
)
def test_an_unasked_step_another_step_needs_is_not_dropped(extra: dict[str, Any]) -> None:
    ttest = {"id": "ttest", "tool": "run_two_sample_ttest"}
    ttest["parameters"] = {"group1": [3, 4], "group2": [7, 8]}
    traits = {"id": "traits", "tool": "get_personality_traits", "parameters": {"hobby": "reading"}}
    whole = parse_plan({"steps": [traits, {**ttest, **extra}]})
    issues = check_unasked(whole, CATALOG, TTEST)
    assert [i.step for i in issues] == ["traits"]
    assert drop_unasked(whole, issues) is None


def test_a_step_that_only_waited_for_an_unasked_one_waits_for_it_no_more() -> None:
    ttest = {"id": "ttest", "tool": "run_two_sample_ttest", "dependsOn": ["traits"]}
    ttest["parameters"] = {"group1": [3, 4], "group2": [7, 8]}
    traits = {"id": "traits", "tool": "get_personality_traits", "parameters": {"hobby": "reading"}}
    whole = parse_plan({"steps": [traits, ttest]})
    dropped = drop_unasked(whole, check_unasked(whole, CATALOG, TTEST))
    assert dropped is not None
    assert [(s.id, s.depends_on) for s in dropped[0].steps] == [("ttest", [])]


def test_nothing_is_dropped_when_every_step_is_unasked_or_something_else_is_wrong() -> None:
    traits = plan(("traits", "get_personality_traits", {"hobby": "reading"}))
    assert drop_unasked(traits, check_unasked(traits, CATALOG, TTEST)) is None
    ttest = ("ttest", "run_two_sample_ttest", {"group1": [3, 4], "group2": [7, 8]})
    both = plan(ttest, ("traits", "get_personality_traits", {"hobby": "reading"}))
    other = ValidationIssue("ungrounded", "step 'ttest': made up", "ttest")
    assert drop_unasked(both, [*check_unasked(both, CATALOG, TTEST), other]) is None


def test_single_letters_and_numbers_of_a_tool_name_ask_for_nothing() -> None:
    from toolplan.planning.unasked import asks_for_tool

    @tool
    def s3_list_buckets(prefix: str) -> list[str]:
        """List the storage buckets."""
        return []

    info = ToolCatalog([s3_list_buckets]).info("s3_list_buckets")
    assert not asks_for_tool("Book a table for 3 people", info)
    assert not asks_for_tool("What's John's email?", info)
    assert asks_for_tool("Which buckets do I have?", info)
