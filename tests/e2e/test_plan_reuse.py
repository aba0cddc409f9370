"""Plan reuse through the real CLI and the scripted OpenAI-compatible server: a reused plan
costs 0 LLM calls (the server sees no request), and nothing is reused across catalogs, for a
query that differs outside its slots, or from a plan whose execution did not succeed.

These runs use ``--no-answer`` to count planning calls alone; reuse under the agent loop (where
the answer still costs its one call) is tested in ``test_agent.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.reuse import CORPUS, batch_passes, ideal_reply

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, llm_step
from toolplan.config.settings import reuse_mode
from toolplan.planning.reuse import match_plan
from toolplan.service.plan_index import normalise_query
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
def cli_llm(cli_llm: Cli) -> Cli:
    cli_llm.env.pop("TOOLPLAN_PLAN_REUSE", None)
    return cli_llm


def test_normalised_query_and_mode() -> None:
    assert normalise_query("  Compare the   weather in TOKYO and London?! ") == normalise_query(
        WEATHER
    )
    assert reuse_mode(None) == "exact" and reuse_mode("Parametric") == "parametric"


def test_parametric_slots_are_whole_literals_with_fixed_text_between() -> None:
    record = stored(WEATHER, weather_plan())
    found = match_plan("compare the weather in Paris and Oslo.", record)
    assert found is not None and found.values == {"Tokyo": "Paris", "London": "Oslo"}
    assert [s["parameters"] for s in found.plan["steps"]][:2] == [
        {"location": "Paris"},
        {"location": "Oslo"},
    ]
    assert found.plan["steps"][2]["parameters"] == {"data_a": "{{a}}", "data_b": "{{b}}"}
    # outside the slots the text must match, and a value must not straddle the fixed text
    assert match_plan("Compare the forecast in Paris and Oslo", record) is None
    assert match_plan("Compare the weather in Paris and Oslo and Rome", record) is None
    # a literal repeated in the query must take the same new value everywhere
    twice = stored("Weather in Tokyo, then compare Tokyo with London", weather_plan())
    found = match_plan("Weather in Lima, then compare Lima with Oslo", twice)
    assert found is not None and found.values == {"Tokyo": "Lima", "London": "Oslo"}
    assert match_plan("Weather in Lima, then compare Rome with Oslo", twice) is None
    # "Alice" is also in "alice@test.com", itself a slot: both are taken from the new query
    blog = stored(QUERY, blog_plan())
    found = match_plan(QUERY.replace("Alice", "Bea"), blog)
    assert found is not None and found.values["Alice"] == "Bea"
    assert match_plan(QUERY.replace("Alice", "Bea", 1), blog) is None
    # a value also part of a string that stays is derived, so not a slot: the new author
    # would keep the old email
    derived = blog_plan()
    derived["steps"][0]["parameters"] = json.dumps({"name": "Alice", "email": "alice@x.org"})
    assert match_plan("Create author Bea", stored("Create author Alice", derived)) is None


def test_exact_reuse_makes_no_llm_call(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan())])
    first = cli_llm("run", QUERY, "--json", "--no-answer")
    assert first.code == 0, first.stderr
    assert len(llm.requests) == 1

    again = cli_llm("run", "  " + QUERY.upper() + ". ", "--json", "--no-answer")
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

    human = cli_llm("run", QUERY, "--no-answer")
    assert human.code == 0 and "0 LLM calls" in human.stderr
    llm.script([Reply.structured(blog_plan())])
    assert cli_llm("run", QUERY, "--no-reuse", "--no-answer").code == 0
    assert len(llm.requests) == 2


def test_a_plan_from_toolplan_plan_is_reused_once_executed(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """``toolplan plan`` never reuses (it always asks the planner), but the plan it stores is
    indexed: once ``toolplan execute`` ran it successfully, ``run "QUERY"`` reuses it."""
    llm.script([Reply.structured(blog_plan())] * 2)
    planned = cli_llm("plan", QUERY, "--json")
    assert planned.code == 0, planned.stderr
    plan_id = planned.json()["planId"]

    not_run = cli_llm("run", QUERY, "--json", "--no-answer")  # no execution yet: planned anew
    assert not_run.code == 0 and "reusedFrom" not in not_run.json()
    assert len(llm.requests) == 2

    llm.script([Reply.structured(blog_plan())])
    replanned = cli_llm("plan", QUERY, "--json")  # executed plans exist now: still plans
    assert replanned.code == 0 and len(llm.requests) == 3
    assert cli_llm("execute", replanned.json()["planId"]).code == 0

    reused = cli_llm("run", QUERY, "--json", "--no-answer")
    assert reused.code == 0, reused.stderr
    assert len(llm.requests) == 3  # the server saw no request
    data = reused.json()
    assert data["reusedFrom"] == replanned.json()["planId"] != plan_id
    assert data["reuse"] == "exact" and data["llmCalls"] == 0


def test_parametric_reuse_substitutes_the_values(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    cli_llm.env["TOOLPLAN_PLAN_REUSE"] = "parametric"
    llm.script([Reply.structured(weather_plan())])
    first = cli_llm("run", WEATHER, "--json", "--no-answer")
    assert first.code == 0, first.stderr

    again = cli_llm("run", "Compare the weather in Paris and Oslo", "--json", "--no-answer")
    assert again.code == 0, again.stderr
    assert len(llm.requests) == 1
    data = again.json()
    assert data["reuse"] == "parametric" and data["llmCalls"] == 0
    assert {data["outputs"]["c"]["a"], data["outputs"]["c"]["b"]} == {"Paris", "Oslo"}

    # the default mode (exact) does not reuse across values
    cli_llm.env.pop("TOOLPLAN_PLAN_REUSE")
    llm.script([Reply.structured(weather_plan("Rome", "Lima"))])
    other = cli_llm("run", "Compare the weather in Rome and Lima", "--json", "--no-answer")
    assert other.code == 0 and "reusedFrom" not in other.json()
    assert len(llm.requests) == 2


def test_no_reuse_across_catalogs_or_other_text_or_failed_runs(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    cli_llm.env["TOOLPLAN_PLAN_REUSE"] = "parametric"
    llm.script([Reply.structured(weather_plan())])
    assert cli_llm("run", WEATHER, "--no-answer").code == 0

    cli_llm.env["TOOLPLAN_TOOLS"] = "weather"  # another catalog
    llm.script([Reply.structured(weather_plan())])
    changed = cli_llm("run", WEATHER, "--json", "--no-answer")
    assert changed.code == 0 and "reusedFrom" not in changed.json()
    assert len(llm.requests) == 2

    llm.script([Reply.structured(weather_plan("Paris", "Oslo"))])
    text = cli_llm("run", "Compare the forecast in Paris and Oslo", "--json", "--no-answer")
    assert text.code == 0 and "reusedFrom" not in text.json()
    assert len(llm.requests) == 3

    cli_llm.env["TOOLPLAN_TOOLS"] = "weather,tests.support.tools"
    failing = weather_plan("Tokyo", "Lima")
    failing["steps"][2] = llm_step("c", "business_error", {"message": "no weather for Lima"})
    llm.script([Reply.structured(failing)])
    query = "Weather in Tokyo versus Lima"
    assert cli_llm("run", query, "--no-answer").code == 1
    llm.script([Reply.structured(weather_plan("Tokyo", "Lima"))])  # planned anew
    retried = cli_llm("run", query, "--json", "--no-answer")
    assert retried.code == 0 and "reusedFrom" not in retried.json()
    assert len(llm.requests) == 5


def test_batch_twice_then_other_values_makes_no_planning_call(
    tmp_path: Path, llm: FakeOpenAIServer
) -> None:
    """bench.reuse's measurement, checked: pass 2 of a query file plans nothing (exact reuse),
    and its re-parametrised copy with parametric reuse plans nothing either, with every output
    right for the new values (not just a succeeded status)."""
    llm.script([ideal_reply] * 30)
    passes = batch_passes(tmp_path, llm.base_url, lambda: len(llm.requests), concurrency=3)
    queries = len(CORPUS)
    assert passes["pass1"]["planningCalls"] == queries and passes["pass1"]["reused"] == 0
    for name, mode in (("pass2", "exact"), ("pass3", "parametric")):
        data = passes[name]
        assert data["succeeded"] == queries, data
        assert data["planningCalls"] == 0 and data["llmCallsReported"] == 0, data
        assert data["reused"] == queries and data["reusedByMode"] == {mode: queries}
        assert data["wrongOutputs"] == {}, data

    first = {line["id"]: line["planId"] for line in _lines(tmp_path / "pass1.results.jsonl")}
    for line in _lines(tmp_path / "pass3.results.jsonl"):
        assert line["reuse"] == "parametric" and line["llmCalls"] == 0
        assert line["reusedFrom"] in {*first.values(), *_plan_ids(tmp_path / "pass2.results.jsonl")}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _plan_ids(path: Path) -> set[str]:
    return {line["planId"] for line in _lines(path)}


def test_batch_summary_shows_reuse_and_no_reuse_turns_it_off(
    cli_llm: Cli, llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text(WEATHER + "\n")
    llm.script([Reply.structured(weather_plan())] * 2)
    assert cli_llm("batch", str(queries), "--execute", "--out", str(tmp_path / "a.jsonl")).code == 0
    second = cli_llm(
        "batch", str(queries), "--execute", "--json", "--out", str(tmp_path / "b.jsonl")
    )
    assert second.code == 0, second.stderr
    summary = second.json()
    assert summary["reused"] == 1 and summary["llmCalls"] == 0
    assert summary["reusedByMode"] == {"exact": 1}
    first_plan = _lines(tmp_path / "a.jsonl")[0]["planId"]
    assert summary["reusedFrom"] == {"1": first_plan}
    assert _lines(tmp_path / "b.jsonl")[0]["reusedFrom"] == first_plan
    assert len(llm.requests) == 1

    human = cli_llm("batch", str(queries), "--execute", "--out", str(tmp_path / "c.jsonl"))
    assert "reused plans" in human.stdout and "exact 1" in human.stdout
    off = cli_llm(
        "batch",
        str(queries),
        "--execute",
        "--json",
        "--no-reuse",
        "--out",
        str(tmp_path / "d.jsonl"),
    )
    assert off.code == 0 and off.json()["reused"] == 0 and len(llm.requests) == 2
