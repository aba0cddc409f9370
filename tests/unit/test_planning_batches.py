"""One-item calls of a list-taking tool are batched into one call (issue 28): the rule of
:mod:`toolplan.planning.batches`, case by case, and what it never touches."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool

from toolplan.plan_format.plan import parse_plan
from toolplan.planning.batches import batch_items
from toolplan.tools.catalog import ToolCatalog


def market_data(indexes: list[str], days: int, detailed: bool = False) -> dict[str, Any]:
    """Market performance of stock indexes over the past days."""
    return {}


def analyze_structure(building_id: str, floors: list[int], mode: str = "static") -> str:
    """Structural analysis of some floors of a building."""
    return "ok"


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {}


def summarize(data: Any) -> str:
    """A summary of some data."""
    return ""


def pair_tool() -> StructuredTool:
    """A tool whose list takes at most two items (``maxItems``), given by its JSON schema."""

    def never_run(**_: Any) -> None:
        raise AssertionError("planned, never run")

    schema = {
        "type": "object",
        "properties": {"cities": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
        "required": ["cities"],
    }
    return StructuredTool(
        name="pair", description="Two cities.", args_schema=schema, func=never_run
    )


CATALOG = ToolCatalog([market_data, analyze_structure, get_weather, summarize, pair_tool()])


def step(sid: str, tool: str = "market_data", **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": []}


def test_one_item_calls_become_one_call_with_the_list_in_plan_order() -> None:
    data = {
        "steps": [
            step("sp500", indexes=["S&P 500"], days=5),
            step("dow", indexes=["Dow Jones"], days=5),
        ],
        "outputSteps": ["sp500", "dow"],
    }
    out, batched = batch_items(data, CATALOG)
    assert batched == {"dow": "sp500"}
    assert out["steps"] == [step("sp500", indexes=["S&P 500", "Dow Jones"], days=5)]
    assert out["outputSteps"] == ["sp500"]
    parse_plan(out)  # still a plan


def test_a_step_that_waited_for_a_batched_one_waits_for_the_batch() -> None:
    data = {
        "steps": [
            step("f2", tool="analyze_structure", building_id="B1004", floors=[2]),
            step("f3", tool="analyze_structure", building_id="B1004", floors=[3]),
            step("f4", tool="analyze_structure", building_id="B1004", floors=[4]),
            {**step("done", tool="summarize", data="all floors"), "dependsOn": ["f3", "f4"]},
        ]
    }
    out, batched = batch_items(data, CATALOG)
    assert batched == {"f3": "f2", "f4": "f2"}
    assert out["steps"][0]["parameters"]["floors"] == [2, 3, 4]
    assert out["steps"][1]["dependsOn"] == ["f2"]


def test_calls_that_differ_in_anything_else_are_kept() -> None:
    for other in (
        step("dow", indexes=["Dow Jones"], days=7),  # another argument
        step("dow", indexes=["Dow Jones"], days=5, detailed=True),  # one more argument
        {**step("dow", indexes=["Dow Jones"], days=5), "dependsOn": ["x"]},  # waits for more
        {**step("dow", indexes=["Dow Jones"], days=5), "when": "{{x.ok}}"},
        step("dow", tool="analyze_structure", building_id="B", floors=[1]),  # another tool
    ):
        data = {
            "steps": [
                step("x", tool="get_weather", city="Rome"),
                step("sp", indexes=["S&P"], days=5),
                other,
            ]
        }
        assert batch_items(data, CATALOG) == (data, {})


def test_a_call_another_step_reads_is_kept() -> None:
    # the template expects the Dow's result, not the list's
    data = {
        "steps": [
            step("sp500", indexes=["S&P 500"], days=5),
            step("dow", indexes=["Dow Jones"], days=5),
            step("sum", tool="summarize", data="{{dow.change}}"),
        ]
    }
    assert batch_items(data, CATALOG) == (data, {})


def test_only_one_item_lists_of_list_arguments_without_templates_are_batched() -> None:
    for first, second in (
        (["S&P 500", "Nasdaq"], ["Dow Jones"]),  # a list of two already
        (["{{x.index}}"], ["Dow Jones"]),  # an item another step finds
        (["S&P 500"], ["S&P 500"]),  # a plain repeat: merge_duplicates' to merge
    ):
        data = {
            "steps": [
                step("x", tool="get_weather", city="Rome"),
                step("a", indexes=first, days=5),
                step("b", indexes=second, days=5),
            ]
        }
        assert batch_items(data, CATALOG) == (data, {})
    # a one-item list under an argument that is no list is the model's mistake, not a batch
    data = {
        "steps": [step("a", tool="summarize", data=["x"]), step("b", tool="summarize", data=["y"])]
    }
    assert batch_items(data, CATALOG) == (data, {})


def test_maps_shared_ids_and_tools_outside_the_catalog_are_left_alone() -> None:
    def mapped(sid: str, index: str) -> dict[str, Any]:
        return {**step(sid, indexes=[index], days=5), "forEach": "{{x.items}}"}

    maps = [step("x", tool="get_weather", city="Rome"), mapped("a", "S&P"), mapped("b", "Dow")]
    shared = [step("a", indexes=["S&P 500"], days=5), step("a", indexes=["Dow Jones"], days=5)]
    unknown = [step("a", tool="nope", xs=["1"]), step("b", tool="nope", xs=["2"])]
    for steps in (maps, shared, unknown):
        data = {"steps": steps}
        assert batch_items(data, CATALOG) == (data, {})


def test_a_tool_whose_calls_wait_for_approval_is_never_batched() -> None:
    data = {
        "steps": [step("sp", indexes=["S&P 500"], days=5), step("dow", indexes=["Dow"], days=5)]
    }
    assert batch_items(data, CATALOG, gated=lambda tool: tool == "market_data") == (data, {})
    assert batch_items(data, CATALOG, gated=lambda tool: tool == "other")[1] == {"dow": "sp"}
    # nor are steps the plan itself sends for approval
    asked = {"steps": [{**each, "approval": True} for each in data["steps"]]}
    assert batch_items(asked, CATALOG) == (asked, {})


def plot(x: list[float], y: list[float]) -> str:
    """Plot points."""
    return ""


def top(cities: list[str] | None = None, count: int = 3) -> list[str]:
    """The top cities."""
    return []


def test_lists_that_go_together_are_not_batched_an_optional_list_is() -> None:
    catalog = ToolCatalog([plot, top])
    # x=[1] with y=[2] and y=[3]: batched, x and y would no longer match in length
    for a, b in (
        ({"x": [1], "y": [2]}, {"x": [1], "y": [3]}),
        ({"y": [2], "x": [1]}, {"y": [3], "x": [1]}),
    ):
        paired = {"steps": [step("a", tool="plot", **a), step("b", tool="plot", **b)]}
        assert batch_items(paired, catalog) == (paired, {})
    optional = {
        "steps": [step("a", tool="top", cities=["Rome"]), step("b", tool="top", cities=["Oslo"])]
    }
    out, batched = batch_items(optional, catalog)
    assert batched == {"b": "a"} and out["steps"][0]["parameters"]["cities"] == ["Rome", "Oslo"]


def test_ids_are_renamed_where_junk_stands_beside_them() -> None:
    # the validator reports the junk; the batched id must not be reported as unknown too
    data = {
        "steps": [
            step("sp", indexes=["S&P 500"], days=5),
            step("dow", indexes=["Dow Jones"], days=5),
            {**step("sum", tool="summarize", data="x"), "dependsOn": ["dow", None, "sp"]},
        ],
        "outputSteps": ["dow", 3],
    }
    out, batched = batch_items(data, CATALOG)
    assert batched == {"dow": "sp"}
    assert out["steps"][1]["dependsOn"] == ["sp", None]
    assert out["outputSteps"] == ["sp", 3]


def test_a_list_longer_than_the_tools_max_items_is_not_made() -> None:
    two = {
        "steps": [step("a", tool="pair", cities=["Rome"]), step("b", tool="pair", cities=["Oslo"])]
    }
    out, batched = batch_items(two, CATALOG)
    assert batched == {"b": "a"} and out["steps"][0]["parameters"]["cities"] == ["Rome", "Oslo"]
    three = {"steps": [*two["steps"], step("c", tool="pair", cities=["Lima"])]}
    assert batch_items(three, CATALOG) == (three, {})
