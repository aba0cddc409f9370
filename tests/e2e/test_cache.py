"""Tool-result caching end to end: a read-only tool's result is shared by plans run in different
processes, the cached step says so (with its age) and calls no tool; failures and writes are
never cached; ``--no-cache`` and ``toolplan cache clear`` bypass and empty it; the GraphQL API
shows cached steps and takes ``noCache``; ``toolplan.clear_cache`` empties it from Python.

``lookup`` and ``lookup_hourly`` (tests/support/tools.py) are tagged ``read-only`` (the latter
with ``cache_ttl=3600``) and log every call. Expiry is covered in process
(tests/unit/test_result_cache.py) and by the store conformance suite: a CLI process starts too
slowly on a loaded machine for a short TTL here.

On SQLite: the cache on MongoDB (put, get, expiry, clear, concurrent puts) is the store
conformance suite's (tests/unit/test_store_conformance.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import toolplan
from tests.e2e.api_support import ServerFactory, server_factory
from tests.e2e.conftest import Cli
from toolplan.store import open_store

pytestmark = [pytest.mark.e2e]


def _plan(*steps: tuple[str, str, str]) -> dict[str, Any]:
    return {"steps": [{"id": i, "tool": t, "parameters": {"key": k}} for i, t, k in steps]}


def _lookups(cli: Cli) -> list[str]:
    return [c["key_arg"] for c in cli.calls() if "key_arg" in c]


def _steps(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in result["steps"]}


def test_a_cache_hit_in_another_process_and_plan_calls_no_tool(cli: Cli) -> None:
    plan = cli.write_plan(_plan(("a", "lookup", "x"), ("b", "lookup", "bad")), "xbad.json")
    first = cli("run", "--file", plan, "--json")
    assert first.code == 1  # "bad" failed
    assert "cached" not in _steps(first.json())["a"]
    assert sorted(_lookups(cli)) == ["bad", "x"]

    # Another process, another plan, the same tool and arguments: answered from the cache.
    second = cli("run", "--file", plan, "--json")
    steps = _steps(second.json())
    assert steps["a"]["status"] == "succeeded" and steps["a"]["cached"] is True
    assert steps["a"]["output"] == {"key": "x", "value": "X"}
    assert 0 <= steps["a"]["cacheAgeSeconds"] < 60
    assert steps["a"]["attempts"] == 0  # the tool was not called
    assert steps["b"]["status"] == "failed" and "cached" not in steps["b"]  # never a failure
    assert sorted(_lookups(cli)) == ["bad", "bad", "x"]

    human = cli("show", second.json()["planId"])
    assert "cached (" in human.stdout

    # Other arguments are another entry; a write tool (echo) is never cached.
    cli("run", "--file", cli.write_plan(_plan(("a", "lookup", "y")), "y.json"))
    echo = cli.write_plan({"steps": [{"id": "e", "tool": "echo", "parameters": {"value": 1}}]})
    for _ in range(2):
        assert "cached" not in _steps(cli("run", "--file", echo, "--json").json())["e"]
    assert [c["step"] for c in cli.calls() if c["event"] == "call" and "key_arg" not in c] == [
        "e",
        "e",
    ]
    assert sorted(_lookups(cli)) == ["bad", "bad", "x", "y"]

    # --no-cache calls the tool; `cache clear` empties the cache for every process.
    bypass = cli("run", "--file", plan, "--no-cache", "--json").json()
    assert "cached" not in _steps(bypass)["a"]
    assert sorted(_lookups(cli)[-2:]) == ["bad", "x"]
    cleared = cli("cache", "clear", "--json")
    assert cleared.code == 0 and cleared.json()["cleared"] == 2  # x and y
    assert "cleared 0 cached result(s)" in cli("cache", "clear").stdout
    after = cli("run", "--file", plan, "--json").json()
    assert "cached" not in _steps(after)["a"]


def test_a_tool_keeps_its_own_ttl_and_execute_takes_no_cache(cli: Cli) -> None:
    # TOOLPLAN_CACHE_TTL=0 turns the default off: only a tool with its own cache_ttl is cached.
    cli.env["TOOLPLAN_CACHE_TTL"] = "0"
    both = cli.write_plan(_plan(("a", "lookup_hourly", "k"), ("b", "lookup", "k")))
    cli("run", "--file", both)
    steps = _steps(cli("run", "--file", both, "--json").json())
    assert steps["a"].get("cached") is True and "cached" not in steps["b"]
    assert sorted(_lookups(cli)) == ["k", "k", "k"]

    submitted = cli("submit", "--file", both, "--json").json()["planId"]
    done = cli("execute", submitted, "--no-cache", "--json").json()
    assert "cached" not in _steps(done)["a"] and len(_lookups(cli)) == 5

    only = cli("cache", "clear", "--tool", "lookup", "--json").json()
    assert only == {"cleared": 0, "tool": "lookup"}
    assert cli("cache", "clear", "--tool", "lookup_hourly", "--json").json()["cleared"] == 1
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as store:
        stats = store.tool_stats()
    assert stats["lookup_hourly"].calls == 2  # the cached step is not a call


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[ServerFactory]:
    yield from server_factory(tmp_path)


def test_api_shows_cached_steps(cli: Cli, servers: ServerFactory, monkeypatch: Any) -> None:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(cli.log))
    store = open_store(cli.env["TOOLPLAN_STORE"])
    try:
        client = servers(store=store).client()
        plan = _plan(("a", "lookup", "api"))
        query = (
            "mutation($p: JSON!) { submitPlan(plan: $p) { planId } }",
            "mutation($id: String!) { executePlan(planId: $id) "
            "{ status steps { id cached cacheAgeSeconds attempts } } }",
        )
        results = []
        for _ in range(2):
            plan_id = client.data(query[0], {"p": plan})["submitPlan"]["planId"]
            results.append(client.data(query[1], {"id": plan_id})["executePlan"])
        assert results[0]["steps"][0]["cached"] is False
        assert results[1]["steps"][0]["cached"] is True
        assert results[1]["steps"][0]["cacheAgeSeconds"] >= 0
        assert _lookups(cli) == ["api"]

        # noCache: true calls the tool, like the CLI's --no-cache.
        bypass = (
            "mutation($id: String!) { executePlan(planId: $id, noCache: true) "
            "{ status steps { id cached attempts } } }"
        )
        plan_id = client.data(query[0], {"p": plan})["submitPlan"]["planId"]
        step = client.data(bypass, {"id": plan_id})["executePlan"]["steps"][0]
        assert step["cached"] is False and step["attempts"] == 1
        assert _lookups(cli) == ["api", "api"]

        # The Python API empties the cache like `toolplan cache clear`.
        assert toolplan.clear_cache(tool="echo", store=store) == 0
        assert toolplan.clear_cache(store=store) == 1
        plan_id = client.data(query[0], {"p": plan})["submitPlan"]["planId"]
        step = client.data(query[1], {"id": plan_id})["executePlan"]["steps"][0]
        assert step["cached"] is False
        assert _lookups(cli) == ["api", "api", "api"]
    finally:
        store.close()
