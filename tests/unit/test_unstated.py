"""Optional values the request never stated are dropped (issue 28, no invented data): the rule
of :mod:`toolplan.planning.unstated`, case by case, and what it never touches."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from langchain_core.tools import StructuredTool

from toolplan.planning.unstated import drop_unstated
from toolplan.tools.catalog import ToolCatalog


def shortest_distance(origin: str, destination: str, unit: str = "kilometers") -> float:
    """The shortest driving distance between two places."""
    return 1.0


def calories(website: str, recipe: str, meal_time: str | None = None) -> int:
    """Calories of a recipe. meal_time is optional (Breakfast, Lunch or Dinner)."""
    return 1


def check_threshold(
    metric: str, threshold: float, operator: Literal["gt", "lt"] = "gt", days: int = 7
) -> bool:
    """Compare a metric with a threshold."""
    return True


def save_draft(title: str, content: str = "", tags: list[str] | None = None) -> str:
    """Save a draft."""
    return "d1"


def schema_tool(name: str, properties: dict[str, Any], required: list[str]) -> StructuredTool:
    """A tool given by its JSON schema, as an MCP server's are: planned, never run."""

    def never_run(**_: Any) -> None:
        raise AssertionError("planned, never run")

    schema = {"type": "object", "properties": properties, "required": required}
    return StructuredTool(name=name, description=f"{name}.", args_schema=schema, func=never_run)


# the default is only said in the description
FIND_GAME = schema_tool(
    "find_game",
    {
        "platform": {"type": "string"},
        "genre": {"type": "string", "description": "Desired genre. Default is ''."},
        "mode": {"type": "string", "description": "Online or local play."},
    },
    ["platform"],
)
CATALOG = ToolCatalog([shortest_distance, calories, check_threshold, save_draft, FIND_GAME])
DISTANCE = "Find the shortest driving distance between New York City and Washington D.C."


def plan(*steps: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "steps": [{"id": sid, "tool": tool, "parameters": params} for sid, tool, params in steps]
    }


def test_a_value_the_request_never_stated_is_dropped_and_named() -> None:
    data = plan(
        (
            "d",
            "shortest_distance",
            {"origin": "New York City", "destination": "Washington D.C.", "unit": "miles"},
        )
    )
    out, dropped = drop_unstated(data, CATALOG, DISTANCE)
    assert dropped == {"d": {"unit": "miles"}}
    assert out["steps"][0]["parameters"] == {
        "origin": "New York City",
        "destination": "Washington D.C.",
    }
    assert data["steps"][0]["parameters"]["unit"] == "miles"  # the input is not changed


def test_a_default_said_only_in_the_description_counts() -> None:
    data = plan(
        (
            "c",
            "calories",
            {"website": "Foodnetwork.com", "recipe": "Beef Lasagna", "meal_time": "Dinner"},
        ),
        ("g", "find_game", {"platform": "Windows 10", "genre": "Strategy", "mode": "online"}),
    )
    query = "How many calories in the Beef Lasagna Recipe from Foodnetwork.com? And a game?"
    _, dropped = drop_unstated(data, CATALOG, query)
    # mode says nothing of a default or of being optional: the model may have had to choose
    assert dropped == {"c": {"meal_time": "Dinner"}, "g": {"genre": "Strategy"}}


@pytest.mark.parametrize(
    ("query", "unit"),
    [
        (DISTANCE + " in miles", "miles"),
        (DISTANCE + ", answer in mi", "MI"),  # a code in capitals
        (DISTANCE + " in kilometres", "kilometers"),  # the same first four letters
        (DISTANCE + " in kilometres", "km"),  # an abbreviation
        (DISTANCE + " in km", "kilometers"),  # and the other way round
    ],
)
def test_a_value_the_request_mentions_is_kept(query: str, unit: str) -> None:
    data = plan(("d", "shortest_distance", {"origin": "NYC", "destination": "DC", "unit": unit}))
    assert drop_unstated(data, CATALOG, query) == (data, {})


def test_the_tools_own_default_is_left_as_it_is() -> None:
    # dropping it would change nothing, and the record would name a value nobody made up
    data = plan(
        ("d", "shortest_distance", {"origin": "NYC", "destination": "DC", "unit": "kilometers"})
    )
    assert drop_unstated(data, CATALOG, "How far is DC from NYC?") == (data, {})


def test_a_replans_context_counts_as_stated() -> None:
    data = plan(("d", "shortest_distance", {"origin": "NYC", "destination": "DC", "unit": "miles"}))
    context = 'The previous plan called shortest_distance(unit="miles").'
    assert drop_unstated(data, CATALOG, DISTANCE + "\n" + context)[1] == {}


@pytest.mark.parametrize(
    ("tool", "parameters"),
    [
        # a closed choice: "below 20" means lt, which no word of the request shows
        ("check_threshold", {"metric": "cpu", "threshold": 20, "operator": "lt"}),
        # numbers, digits and lists: "next month" is 30 days, a right inference
        ("save_draft", {"title": "Notes", "content": "2023-03-12"}),
        ("check_threshold", {"metric": "cpu", "threshold": 20, "days": 30}),
        ("save_draft", {"title": "Notes", "tags": ["weekly"]}),
        # text the model was asked to write
        ("save_draft", {"title": "Notes", "content": "Welcome to the blog"}),
        # what another step found
        ("save_draft", {"title": "Notes", "content": "{{summary.text}}"}),
        # required: a value the validator and the model answer for
        ("shortest_distance", {"origin": "Boston", "destination": "Chicago"}),
    ],
)
def test_what_the_rule_never_touches(tool: str, parameters: dict[str, Any]) -> None:
    data = plan(("s", tool, parameters))
    assert drop_unstated(data, CATALOG, "Alert me when cpu goes below 20") == (data, {})


def test_a_required_argument_is_never_dropped_whatever_its_description_says() -> None:
    unit = {"type": "string", "description": "The unit; the default is km."}
    convert = schema_tool(
        "convert", {"amount": {"type": "number"}, "unit": unit}, ["amount", "unit"]
    )
    data = plan(("c", "convert", {"amount": 3, "unit": "miles"}))
    assert drop_unstated(data, ToolCatalog([convert]), "Convert 3") == (data, {})


@pytest.mark.parametrize(
    "prop",
    [
        # a closed choice in a branch pydantic v1 and MCP servers write
        {"allOf": [{"enum": ["km", "miles"]}], "description": "Optional unit."},
        # a description that says there is no default
        {"type": "string", "description": "The unit. There is no default."},
        {"type": "string", "description": "The unit (not optional)."},
    ],
)
def test_an_argument_that_does_not_state_a_default_keeps_its_value(prop: dict[str, Any]) -> None:
    measure = schema_tool("measure", {"route": {"type": "string"}, "unit": prop}, ["route"])
    data = plan(("m", "measure", {"route": "A to B", "unit": "miles"}))
    assert drop_unstated(data, ToolCatalog([measure]), "Measure A to B") == (data, {})


def test_two_steps_sharing_an_id_are_both_named() -> None:
    route = {"origin": "NYC", "destination": "DC"}
    data = plan(
        ("d", "shortest_distance", {**route, "unit": "miles"}),
        ("d", "calories", {"website": "x.com", "recipe": "Pie", "meal_time": "Dinner"}),
    )
    assert drop_unstated(data, CATALOG, DISTANCE)[1] == {
        "d": {"unit": "miles", "meal_time": "Dinner"}
    }


def test_a_request_in_another_script_is_not_read() -> None:
    # Berlin for 柏林: its letters cannot be matched, so nothing can be called unstated
    data = plan(
        ("d", "shortest_distance", {"origin": "Berlin", "destination": "Paris", "unit": "miles"})
    )
    assert drop_unstated(data, CATALOG, "从柏林到巴黎的最短驾驶距离是多少") == (data, {})


def test_steps_it_cannot_read_are_left_for_the_validator() -> None:
    data = {
        "steps": [
            {"id": "a", "tool": "nope", "parameters": {"unit": "miles"}},
            {"id": "b", "tool": "shortest_distance", "parameters": "not an object"},
            {"tool": "shortest_distance", "parameters": {"unit": "miles"}},
            "junk",
        ]
    }
    assert drop_unstated(data, CATALOG, DISTANCE) == (data, {})


def test_an_irregular_plural_is_the_word_the_request_said() -> None:
    # BFCL multiple_175, "the top player in woman tennis": gender "women" was the model's
    # right reading, and "wome" is not "woma"
    def top_player(sport: str, gender: str = "men") -> str:
        """The top-ranked player of a sport."""
        return "x"

    data = plan(("t", "top_player", {"sport": "tennis", "gender": "women"}))
    query = "Who is ranked as the top player in woman tennis?"
    assert drop_unstated(data, ToolCatalog([top_player]), query) == (data, {})
