"""Which tools are cached, under which key, and the engine's use of the store's cache (in process;
tests/e2e/test_cache.py covers the CLI and the API on SQLite and MongoDB)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import StructuredTool, ToolException, tool

from toolplan import ExecutionOptions, run_plan, tagged
from toolplan.engine.cache import cache_key, cache_ttl_of
from toolplan.store import open_store


def _tool(name: str) -> Any:
    def body(key: str) -> dict[str, Any]:
        """Return {"key": key}."""
        return {"key": key}

    return StructuredTool.from_function(body, name=name)


def test_only_read_only_tools_are_cached_with_their_ttl() -> None:
    assert cache_ttl_of(_tool("plain"), 300) is None
    assert cache_ttl_of(tagged(_tool("ro"), "read-only"), 300) == 300
    assert cache_ttl_of(tagged(_tool("own"), "read-only", cache_ttl=60), 300) == 60
    assert cache_ttl_of(tagged(_tool("off"), "read-only"), 0) is None  # TOOLPLAN_CACHE_TTL=0
    mcp = _tool("mcp")
    mcp.metadata = {"readOnlyHint": True, "mcp_server": "s"}  # how langchain-mcp-adapters maps it
    assert cache_ttl_of(mcp, 300) == 300
    mcp.metadata = {"readOnlyHint": False}
    assert cache_ttl_of(mcp, 300) is None
    # 0: a read whose answer changes by itself (a clock): ordered as a read, never cached
    assert cache_ttl_of(tagged(_tool("live"), "read-only", cache_ttl=0), 300) is None
    with pytest.raises(ValueError, match="cache_ttl"):
        tagged(_tool("bad"), "read-only", cache_ttl=-1)


def test_the_key_is_the_tool_and_its_canonical_arguments() -> None:
    assert cache_key("t", {"a": 1, "b": [2]}) == cache_key("t", {"b": [2], "a": 1})
    assert cache_key("t", {"a": 1}) != cache_key("u", {"a": 1})
    assert cache_key("t", {"a": 1}) != cache_key("t", {"a": "1"})


async def test_a_hit_calls_no_tool_and_failures_are_not_cached(tmp_path: Path) -> None:
    calls: list[str] = []

    @tool
    def look(key: str) -> dict[str, Any]:
        """Look a key up."""
        calls.append(key)
        if key == "bad":
            raise ToolException("no such key")
        return {"key": key}

    tagged(look, "read-only")
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    plan = {
        "steps": [
            {"id": "a", "tool": "look", "parameters": {"key": "x"}},
            {"id": "b", "tool": "look", "parameters": {"key": "bad"}},
        ]
    }
    try:
        first = await run_plan(plan, tools=[look], store=store)
        second = await run_plan(plan, tools=[look], store=store)
        third = await run_plan(
            plan, tools=[look], store=store, options=ExecutionOptions(cache=False)
        )
    finally:
        store.close()
    assert not first.step("a").cached
    hit = second.step("a")
    assert hit.cached and hit.output == {"key": "x"} and hit.attempts == 0
    assert hit.cache_age_seconds is not None and hit.cache_age_seconds >= 0
    assert second.step("b").status == "failed" and not second.step("b").cached
    assert not third.step("a").cached
    assert sorted(calls) == ["bad", "bad", "bad", "x", "x"]


async def test_a_result_expires_after_the_tools_own_ttl(tmp_path: Path) -> None:
    calls: list[str] = []

    @tool
    def brief(key: str) -> str:
        """Return the key."""
        calls.append(key)
        return key

    tagged(brief, "read-only", cache_ttl=0.3)
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    plan = {"steps": [{"id": "a", "tool": "brief", "parameters": {"key": "k"}}]}
    try:
        await run_plan(plan, tools=[brief], store=store)
        await asyncio.sleep(0.4)
        later = await run_plan(plan, tools=[brief], store=store)
    finally:
        store.close()
    assert not later.step("a").cached and calls == ["k", "k"]


async def test_the_tool_that_runs_decides_what_is_cached(tmp_path: Path) -> None:
    """Issue 42: the tags of the tool that actually runs decide. A read-only step whose tool
    failed and whose fallback answered is not cached (the output is the fallback's, under the
    read-only tool's key); a read-only fallback behind a tool with side effects is not cached
    under that tool's key either. The next run calls the step's own tool again."""
    calls: list[str] = []

    @tool
    def ro_down(key: str) -> dict[str, Any]:
        """A read-only lookup that is down."""
        calls.append(f"ro_down:{key}")
        raise ToolException("service down")

    @tool
    def write(key: str) -> dict[str, Any]:
        """Write a key (a side effect) that fails."""
        calls.append(f"write:{key}")
        raise ToolException("rejected")

    @tool
    def ro_backup(key: str) -> dict[str, Any]:
        """A read-only backup lookup."""
        calls.append(f"ro_backup:{key}")
        return {"key": key, "from": "backup"}

    tagged(ro_down, "read-only")
    tagged(ro_backup, "read-only")
    tools = [ro_down, write, ro_backup]
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    plan = {
        "steps": [
            {
                "id": "a",
                "tool": "ro_down",
                "parameters": {"key": "x"},
                "fallback": {"tool": "ro_backup", "parameters": {"key": "x"}},
            },
            {
                "id": "b",
                "tool": "write",
                "parameters": {"key": "y"},
                "fallback": {"tool": "ro_backup", "parameters": {"key": "y"}},
            },
        ]
    }
    try:
        first = await run_plan(plan, tools=tools, store=store)
        second = await run_plan(plan, tools=tools, store=store)
    finally:
        store.close()
    for result in (first, second):
        assert result.step("a").used_fallback and not result.step("a").cached
        assert result.step("b").used_fallback and not result.step("b").cached
    assert sorted(calls) == sorted(["ro_down:x", "ro_backup:x", "write:y", "ro_backup:y"] * 2)
