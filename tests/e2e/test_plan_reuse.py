"""Plan reuse through the real CLI and the scripted OpenAI-compatible server: a reused plan
costs 0 LLM calls (the server sees no request), and nothing is reused across catalogs, for a
query that differs outside its slots, or from a plan whose execution did not succeed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, llm_step
from toolplan.reuse import _parametric, normalise_query, reuse_mode
from toolplan.store.protocol import PlanRecord

WEATHER = "Compare the weather in Tokyo and London"


def weather_plan(a: str = "Tokyo", b: str = "London") -> dict[str, Any]:
    return {
        "reasoning": "two lookups, then a comparison",
        "steps": [
            llm_step("a", "get_weather", {"location": a}),
            llm_step("b", "get_weather", {"location": b}),
            llm_step(
                "c",
                "compare_data",
                {"data_a": "{{a}}", "data_b": "{{b}}"},
                depends_on=["a", "b"],
            ),
        ],
        "outputSteps": ["c"],
    }


def stored(query: str, plan: dict[str, Any]) -> PlanRecord:
    steps = [{**s, "parameters": json.loads(s["parameters"])} for s in plan["steps"]]
    return PlanRecord("plan_x", "req_x", {**plan, "steps": steps}, {}, "planned", "now", query)


@pytest.fixture
def llm() -> Any:
    with FakeOpenAIServer(api_key="sk-test") as server:
        yield server


@pytest.fixture
def cli_llm(cli: Cli, llm: FakeOpenAIServer) -> Cli:
    cli.env.update(
        {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url, "TOOLPLAN_LLM_RETRIES": "0"}
    )
    cli.env.pop("TOOLPLAN_MODEL", None)
    cli.env.pop("TOOLPLAN_PLAN_REUSE", None)
    return cli


def test_normalised_query_and_mode() -> None:
    assert normalise_query("  Compare the   weather in TOKYO and London?! ") == normalise_query(
        WEATHER
    )
    assert reuse_mode(None) == "exact" and reuse_mode("Parametric") == "parametric"


def test_parametric_slots_are_whole_literals_with_fixed_text_between() -> None:
    record = stored(WEATHER, weather_plan())
    found = _parametric("compare the weather in Paris and Oslo.", record)
    assert found is not None and found.values == {"Tokyo": "Paris", "London": "Oslo"}
    assert [s["parameters"] for s in found.plan["steps"]][:2] == [
        {"location": "Paris"},
        {"location": "Oslo"},
    ]
    assert found.plan["steps"][2]["parameters"] == {"data_a": "{{a}}", "data_b": "{{b}}"}
    # outside the slots the text must match, and a value must not straddle the fixed text
    assert _parametric("Compare the forecast in Paris and Oslo", record) is None
    assert _parametric("Compare the weather in Paris and Oslo and Rome", record) is None
    # a literal repeated in the query must take the same new value everywhere
    blog = stored(QUERY, blog_plan())
    again = QUERY.replace("Alice", "Bea")
    assert _parametric(again, blog) is not None
    assert _parametric(QUERY.replace("Alice", "Bea", 1), blog) is None


def test_exact_reuse_makes_no_llm_call(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan())])
    first = cli_llm("run", QUERY, "--json")
    assert first.code == 0, first.stderr
    assert len(llm.requests) == 1

    again = cli_llm("run", "  " + QUERY.upper() + ". ", "--json")
    assert again.code == 0, again.stderr
    assert len(llm.requests) == 1  # the server saw no request
    data = again.json()
    assert data["reusedFrom"] == first.json()["planId"] and data["reuse"] == "exact"
    assert data["llmCalls"] == 0 and data["status"] == "succeeded"
    assert data["planId"] != first.json()["planId"]
    shown = cli_llm("show", data["planId"], "--json").json()
    assert shown["meta"]["reusedFrom"] == first.json()["planId"]
    assert (
        f"reused from {first.json()['planId']} (exact match"
        in cli_llm("show", data["planId"]).stdout
    )

    human = cli_llm("run", QUERY)
    assert human.code == 0 and "0 LLM calls" in human.stderr
    llm.script([Reply.structured(blog_plan())])
    assert cli_llm("run", QUERY, "--no-reuse").code == 0
    assert len(llm.requests) == 2


def test_parametric_reuse_substitutes_the_values(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    cli_llm.env["TOOLPLAN_PLAN_REUSE"] = "parametric"
    llm.script([Reply.structured(weather_plan())])
    first = cli_llm("run", WEATHER, "--json")
    assert first.code == 0, first.stderr

    again = cli_llm("run", "Compare the weather in Paris and Oslo", "--json")
    assert again.code == 0, again.stderr
    assert len(llm.requests) == 1
    data = again.json()
    assert data["reuse"] == "parametric" and data["llmCalls"] == 0
    assert {data["outputs"]["c"]["a"], data["outputs"]["c"]["b"]} == {"Paris", "Oslo"}

    # the default mode (exact) does not reuse across values
    cli_llm.env.pop("TOOLPLAN_PLAN_REUSE")
    llm.script([Reply.structured(weather_plan("Rome", "Lima"))])
    other = cli_llm("run", "Compare the weather in Rome and Lima", "--json")
    assert other.code == 0 and "reusedFrom" not in other.json()
    assert len(llm.requests) == 2


def test_no_reuse_across_catalogs_or_other_text_or_failed_runs(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    cli_llm.env["TOOLPLAN_PLAN_REUSE"] = "parametric"
    llm.script([Reply.structured(weather_plan())])
    assert cli_llm("run", WEATHER).code == 0

    cli_llm.env["TOOLPLAN_TOOLS"] = "weather"  # another catalog
    llm.script([Reply.structured(weather_plan())])
    changed = cli_llm("run", WEATHER, "--json")
    assert changed.code == 0 and "reusedFrom" not in changed.json()
    assert len(llm.requests) == 2

    llm.script([Reply.structured(weather_plan("Paris", "Oslo"))])
    text = cli_llm("run", "Compare the forecast in Paris and Oslo", "--json")
    assert text.code == 0 and "reusedFrom" not in text.json()
    assert len(llm.requests) == 3

    cli_llm.env["TOOLPLAN_TOOLS"] = "weather,tests.support.tools"
    failing = weather_plan("Tokyo", "Lima")
    failing["steps"][2] = llm_step("c", "business_error", {"message": "no such city"})
    llm.script([Reply.structured(failing)])
    query = "Weather in Tokyo versus Lima"
    assert cli_llm("run", query).code == 1
    llm.script([Reply.structured(weather_plan("Tokyo", "Lima"))])  # planned anew
    retried = cli_llm("run", query, "--json")
    assert retried.code == 0 and "reusedFrom" not in retried.json()
    assert len(llm.requests) == 5
