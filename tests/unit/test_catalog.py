"""The tool catalog: plain functions become tools, names are unique, modules load by name."""

from __future__ import annotations

import pytest

from toolplan.errors import InvalidInput
from toolplan.tools import ToolCatalog, load_tool_modules, tagged


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


async def fetch(url: str) -> dict[str, str]:
    """Fetch a URL (pretend)."""
    return {"url": url}


def undocumented(x: int) -> int:
    return x


async def test_plain_sync_and_async_functions_become_tools() -> None:
    catalog = ToolCatalog([add, fetch])
    assert catalog.names == ["add", "fetch"]
    info = catalog.info("add")
    assert info.description == "Add two integers."
    assert (
        info.parameters["required"] == ["a"]
        and info.parameters["properties"]["a"]["type"] == "integer"
    )
    assert await catalog.get("add").ainvoke({"a": 2, "b": 3}) == 5
    assert await catalog.get("fetch").ainvoke({"url": "u"}) == {"url": "u"}


def test_catalog_mistakes_are_clear() -> None:
    with pytest.raises(InvalidInput, match="has no docstring"):
        ToolCatalog([undocumented])
    with pytest.raises(InvalidInput, match="defined twice"):
        ToolCatalog([add, add])
    with pytest.raises(InvalidInput, match="reserved for the plan executor"):

        def execute_plan(plan: str) -> str:
            """Nope."""
            return plan

        ToolCatalog([execute_plan])
    with pytest.raises(InvalidInput, match="no module named 'no_such_module'"):
        load_tool_modules(["no_such_module"])
    with pytest.raises(InvalidInput, match="has no TOOLS list"):
        load_tool_modules(["json"])


def test_tags_and_examples_filter_the_catalog() -> None:
    catalog = ToolCatalog([add, fetch])
    tagged(catalog.get("fetch"), "web", examples=[{"query": "get it", "parameters": {"url": "u"}}])
    assert [i.name for i in catalog.infos(tag="web")] == ["fetch"]
    assert catalog.info("fetch").examples == ({"query": "get it", "parameters": {"url": "u"}},)
    assert "did you mean 'fetch'" in catalog.unknown_tool_message("fetc")


def test_read_only_and_approval_are_data_on_the_tool_info() -> None:
    """The planner's rules (merging duplicates, batching) ask the catalog, not the engine."""
    from langchain_core.tools import StructuredTool

    lookup = StructuredTool.from_function(add, name="lookup", metadata={"readOnlyHint": True})
    drop = StructuredTool.from_function(add, name="drop", metadata={"destructiveHint": True})
    catalog = ToolCatalog([tagged(add, "read-only"), tagged(fetch, "approval"), lookup, drop])
    assert [(i.name, i.read_only, i.gated) for i in catalog.infos()] == [
        ("add", True, False),
        ("fetch", False, True),
        ("lookup", True, False),
        ("drop", False, True),
    ]
    assert catalog.read_only("add") and catalog.gated("fetch")
    assert not catalog.read_only("nowhere") and not catalog.gated("nowhere")


def test_the_built_in_tools_load_by_their_name_before_the_rename() -> None:
    """Plans stored before toolsets/ became builtin_tools/ record ``toolplan.toolsets.weather``
    as their tool source, and a project config or a script may still name it."""
    old, new = load_tool_modules(["toolplan.toolsets.weather"]), load_tool_modules(["weather"])
    assert old.names == new.names
