"""What small models answer under strict structured output, through the real ChatOpenAI client
and the local OpenAI-compatible server (issue 28): nulls and fillers for optional arguments at
every depth, step ids, answers cut off at the output limit, and what a failure costs.

No network: ``tests.support.fake_openai`` answers with scripted plans and records every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, broken_blog_plan
from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.pipeline.planning import create_plan
from toolplan.planning.context import PlannerContext
from toolplan.tools.catalog import ToolCatalog, tagged

# These tests are about how the JSON format reads OpenAI servers' answers: the plan format is JSON.
pytestmark = pytest.mark.usefixtures("json_plans")


class Address(BaseModel):
    city: str
    zip: str | None = None
    country: str = "DE"


def ship(to: Address, express: bool = False, note: str = "") -> dict[str, Any]:
    """Ship a parcel to an address."""
    return {"to": to.city}


SHIP = ToolCatalog([ship])


def weigh(compound: str) -> float:
    """The molecular weight of a compound, in grams per mole."""
    return 342.3


WEIGH = ToolCatalog([tagged(weigh, "read-only"), ship])


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
        monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
        monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
        yield server


@pytest.fixture
def all_rewrites(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rewrite rule, the heuristic ones too: what the tests of those rules need (by
    default only the format rules run: issue 43)."""
    monkeypatch.setenv("TOOLPLAN_PLANNER_REWRITES", "all")


def make_context(tmp_path: Path, *, catalog: Any = None, **kwargs: Any) -> PlannerContext:
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    return Toolplan(settings=settings, tools=catalog).planner_context(**kwargs)


def plan(*steps: dict[str, Any], outputs: list[str] | None = None) -> dict[str, Any]:
    return {
        "reasoning": "as asked",
        "steps": list(steps),
        "outputSteps": outputs or [steps[-1]["id"]],
    }


def step(sid: str, tool: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": [], "confidence": 0.9}


def step_schema(request: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = request["response_format"]["json_schema"]["schema"]
    return schema


# -- nulls and fillers --------------------------------------------------------------------------


async def test_strict_nested_nulls_and_fillers_plan_in_one_call(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    # what strict json_schema makes a model write for "ship to Berlin": every optional property
    # at every depth, as null or a filler
    written = {
        "to": {"city": "Berlin", "zip": None, "country": None},
        "express": "null",
        "note": "",
    }
    llm.script([Reply.structured(plan(step("send", "ship", written)))])
    outcome = await create_plan("ship it to Berlin", make_context(tmp_path, catalog=SHIP))
    assert outcome.llm_calls == 1 and len(llm.requests) == 1  # no repair round
    assert outcome.plan["steps"][0]["parameters"] == {"to": {"city": "Berlin"}}
    json_schema = llm.requests[0]["response_format"]["json_schema"]
    assert json_schema["strict"] is True
    (branch,) = step_schema(llm.requests[0])["properties"]["steps"]["items"]["anyOf"]
    address = branch["properties"]["parameters"]["properties"]["to"]["anyOf"][0]
    assert address["required"] == ["city", "zip", "country"]  # the nested nulls' cause


# -- identical duplicates (issue 28: the largest cause of wrong BFCL plans) ---------------------


@pytest.mark.usefixtures("all_rewrites")
async def test_identical_duplicate_steps_are_merged_and_recorded(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    berlin = {"to": {"city": "Berlin"}}
    madrid = {"to": {"city": "Madrid"}}
    llm.script(
        [
            Reply.structured(
                plan(
                    step("a", "ship", berlin),
                    step("b", "ship", madrid),
                    step("c", "ship", berlin),  # the model wrote Berlin twice
                    outputs=["a", "b", "c"],
                )
            )
        ]
    )
    ctx = make_context(tmp_path, catalog=SHIP)
    outcome = await create_plan("ship one parcel to Berlin and one to Madrid", ctx)
    assert [s["id"] for s in outcome.plan["steps"]] == ["a", "b"]
    assert outcome.plan["outputSteps"] == ["a", "b"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.meta["mergedSteps"] == {"c": "a"}


@pytest.mark.usefixtures("all_rewrites")
async def test_a_read_only_repeat_after_its_twin_is_merged_a_side_effect_is_not(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """BFCL parallel_111: a "comparison" step weighed sucrose again after glucose and sucrose.
    Repeated after read-only steps only, nothing can have changed: merged. Repeated after a
    step with a side effect (``ship``), it is kept."""
    sucrose = {"compound": "C12H22O11"}

    def answer(first: dict[str, Any]) -> dict[str, Any]:
        again = {**step("c", "weigh", sucrose), "dependsOn": ["a", "b"]}
        return plan(first, step("b", "weigh", sucrose), again, outputs=["c"])

    ctx = make_context(tmp_path, catalog=WEIGH)
    llm.script([Reply.structured(answer(step("a", "weigh", {"compound": "C6H12O6"})))])
    merged = await create_plan("weigh glucose and sucrose, and compare", ctx)
    assert [s["id"] for s in merged.plan["steps"]] == ["a", "b"]
    assert merged.plan["outputSteps"] == ["b"]

    llm.script([Reply.structured(answer(step("a", "ship", {"to": {"city": "Rome"}})))])
    kept = await create_plan("ship to Rome, and weigh sucrose", ctx)
    assert [s["id"] for s in kept.plan["steps"]] == ["a", "b", "c"]


# -- steps that read themselves (the project's query sets, Qwen2.5-Coder-1.5B) -----------------


@pytest.mark.usefixtures("all_rewrites")
async def test_steps_reading_themselves_are_read_as_their_only_meaning(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Both answers the small model repeated through two repairs each: a condition on the step's
    own result, and a step naming itself where the item of a list is meant."""
    from toolplan.tools import load_tool_modules

    catalog = load_tool_modules(["metrics"])
    check = step("check", "check_threshold", {"metric_name": "memory_usage", "threshold": 60})
    check["parameters"]["operator"] = "lt"
    listed = step("metrics", "list_metrics", {"category": "compute"})
    each = step("metric", "query_metric", {"name": "{{metric.name}}"})
    llm.script(
        [
            Reply.structured(plan({**check, "when": "{{check.exceeded}}"}, outputs=["check"])),
            Reply.structured(plan(listed, each, outputs=["metric"])),
        ]
    )
    ctx = make_context(tmp_path, catalog=catalog)
    below = await create_plan("Is memory usage below 60%?", ctx)
    assert below.llm_calls == 1 and below.ref.status == "planned"  # no repair round
    assert below.plan["steps"][0].get("when") is None
    record = ctx.store.get_plan(below.ref.plan_id)
    assert record is not None and record.meta["droppedConditions"] == ["check"]

    each_metric = await create_plan("Query the current value of each compute metric", ctx)
    assert each_metric.llm_calls == 1 and each_metric.ref.status == "planned"
    mapped = each_metric.plan["steps"][1]
    assert mapped["forEach"] == "{{metrics.metrics}}"
    assert mapped["parameters"] == {"name": "{{$item.name}}"}


# -- certain fixes (issue 28: a small model repeats its plan over "did you mean") ---------------


@pytest.mark.usefixtures("all_rewrites")
async def test_a_fix_the_validator_is_certain_of_is_applied_without_a_repair_round(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    from toolplan.tools import load_tool_modules

    weather = load_tool_modules(["weather"])
    answer = plan(
        step("paris", "get_weather", {"location": "Paris"}),
        step("berlin", "get_weather", {"location": "Berlin"}),
        step("compare", "compare_data", {"data_a": "{{paris.temp}}", "data_b": "{{berlin}}"}),
    )
    llm.script([Reply.structured(answer)])
    ctx = make_context(tmp_path, catalog=weather)
    outcome = await create_plan("compare the weather in Paris and Berlin", ctx)
    assert outcome.llm_calls == 1 and len(llm.requests) == 1
    assert outcome.plan["steps"][2]["parameters"] == {"data_a": "{{paris}}", "data_b": "{{berlin}}"}
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["autoFixed"] == ["compare: {{paris.temp}} -> {{paris}}"]


@pytest.mark.usefixtures("all_rewrites")
async def test_problems_left_after_the_certain_fixes_go_to_the_model(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    from toolplan.tools import load_tool_modules

    weather = load_tool_modules(["weather"])
    fixable = step("compare", "compare_data", {"data_a": "{{paris.temp}}", "data_b": "{{x}}"})
    right = step("compare", "compare_data", {"data_a": "{{paris}}", "data_b": "{{paris}}"})
    paris = step("paris", "get_weather", {"location": "Paris"})
    llm.script([Reply.structured(plan(paris, fixable)), Reply.structured(plan(paris, right))])
    outcome = await create_plan(
        "compare Paris with itself", make_context(tmp_path, catalog=weather)
    )
    assert outcome.llm_calls == 2
    repair = str(llm.requests[1]["messages"][-1]["content"])
    assert "references unknown step 'x'" in repair
    assert "{{paris.temp}}" not in repair.split("Problems:")[1]  # fixed, not reported


PARIS = "What's the weather in Paris?"
AUTHOR = {"name": "John Doe", "email": "john@example.org"}  # neither authors nor John asked for


@pytest.mark.usefixtures("all_rewrites")
async def test_an_unasked_step_nothing_needs_is_dropped_without_a_repair_round(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """BFCL multiple_125/165: told to remove such a step, the model kept it in both repairs."""
    from toolplan.tools import load_tool_modules

    tools = load_tool_modules(["weather", "blog"])
    paris = step("paris", "get_weather", {"location": "Paris"})
    author = step("author", "createAuthor", AUTHOR)
    llm.script([Reply.structured(plan(paris, author))])
    ctx = make_context(tmp_path, catalog=tools)
    outcome = await create_plan(PARIS, ctx)
    assert outcome.llm_calls == 1
    assert [s["id"] for s in outcome.plan["steps"]] == ["paris"]
    assert "outputSteps" not in outcome.plan  # its only output was the dropped step
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.meta["unaskedSteps"] == {"author": "createAuthor"}


@pytest.mark.usefixtures("all_rewrites")
async def test_a_repeat_that_waited_for_an_unasked_step_is_merged_once_it_is_gone(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """BFCL multiple_165: the guitar's price, an unasked colour lookup, and the price again
    "after" both. Before, the repeat kept the colour lookup, and planning failed after two
    repairs that did not remove it."""
    from toolplan.tools import load_tool_modules

    tools = load_tool_modules(["weather", "blog"])
    paris = step("paris", "get_weather", {"location": "Paris"})
    author = step("author", "createAuthor", AUTHOR)
    again = {
        **step("again", "get_weather", {"location": "Paris"}),
        "dependsOn": ["paris", "author"],
    }
    llm.script([Reply.structured(plan(paris, author, again))])
    ctx = make_context(tmp_path, catalog=tools)
    outcome = await create_plan(PARIS, ctx)
    assert outcome.llm_calls == 1
    assert [s["id"] for s in outcome.plan["steps"]] == ["paris"]
    assert outcome.plan["outputSteps"] == ["paris"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["unaskedSteps"] == {"author": "createAuthor"}
    assert record.meta["mergedSteps"] == {"again": "paris"}


@pytest.mark.usefixtures("all_rewrites")
async def test_unasked_steps_go_to_the_model_when_dropping_them_would_lose_something(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    from toolplan.tools import load_tool_modules

    tools = load_tool_modules(["weather", "blog"])
    author = step("author", "createAuthor", AUTHOR)
    blog = step(
        "blog",
        "createBlog",
        {"title": "{{paris.condition}}", "content": "x", "authorId": "{{author._id}}"},
    )
    paris = step("paris", "get_weather", {"location": "Paris"})
    llm.script(
        [
            Reply.structured(plan(author)),  # every step unasked: nothing asked for is left
            Reply.structured(plan(paris, author, blog)),  # a step uses the unasked one
            Reply.structured(plan(paris)),
        ]
    )
    outcome = await create_plan(PARIS, make_context(tmp_path, catalog=tools))
    assert outcome.llm_calls == 3
    first, second = (str(r["messages"][-1]["content"]) for r in llm.requests[1:])
    assert "'John Doe' (name)" in first and "answer with no steps" in first
    assert "'John Doe' (name)" in second and "remove the step" in second
    assert [s["id"] for s in outcome.plan["steps"]] == ["paris"]


# -- step ids -----------------------------------------------------------------------------------

BLOG = {"name": "Ann", "email": "ann@example.org"}


def pattern_of_ids(request: dict[str, Any]) -> str | None:
    schema = step_schema(request)
    return schema.get("$defs", {}).get("id", {}).get("pattern") or (
        schema["properties"]["steps"]["items"].get("properties", {}).get("id", {}).get("pattern")
    )


async def test_step_ids_are_constrained_and_a_duplicate_is_repaired_with_the_hint(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_TOOLS", "blog")
    second = {"name": "Bo", "email": "bo@example.org"}
    duplicate = plan(step("output", "createAuthor", BLOG), step("output", "createAuthor", second))
    fixed = plan(
        step("output", "createAuthor", BLOG),
        step("output_2", "createAuthor", second),
        outputs=["output", "output_2"],
    )
    llm.script([Reply.structured(duplicate), Reply.structured(fixed)])
    outcome = await create_plan("create authors Ann and Bo", make_context(tmp_path))
    assert outcome.llm_calls == 2
    assert pattern_of_ids(llm.requests[0]) == "^[A-Za-z_][A-Za-z0-9_-]*$"
    feedback = llm.requests[1]["messages"][-1]["content"]
    assert "step id 'output' is used more than once (steps 1 and 2)" in feedback
    assert "give step 2 its own id, e.g. 'output_2'" in feedback


@pytest.mark.parametrize("max_tools", ["50", "0"], ids=["typed", "generic"])
async def test_a_server_that_rejects_the_pattern_gets_the_plain_generic_schema(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_tools: str
) -> None:
    monkeypatch.setenv("TOOLPLAN_TOOLS", "blog")
    monkeypatch.setenv("TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS", max_tools)
    generic = plan(
        {
            **step("author", "createAuthor", {}),
            "parameters": '{"name": "Ann", "email": "ann@example.org"}',
        }
    )
    llm.script(
        [
            Reply.error(400, "response_format: 'pattern' is not supported", should_retry=False),
            Reply.structured(generic),
        ]
    )
    outcome = await create_plan("create author Ann", make_context(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 1
    first, second = llm.requests
    assert pattern_of_ids(first) is not None and pattern_of_ids(second) is None
    assert "pattern" not in str(step_schema(second))


# -- what a failure cost ------------------------------------------------------------------------


def cut_off(usage: tuple[int, int]) -> Reply:
    """An answer stopped at the output limit: openai's json_schema parse() raises for it."""
    return Reply.structured(plan(step("a", "createAuthor", BLOG))).with_(
        finish_reason="length", usage=usage
    )


@pytest.mark.parametrize("method", ["function_calling", "json_schema"])
async def test_a_cut_off_plan_is_asked_again_with_twice_the_limit(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.setenv("TOOLPLAN_TOOLS", "blog")
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", method)
    monkeypatch.setenv("TOOLPLAN_LLM_MAX_TOKENS", "64")
    whole = plan(step("a", "createAuthor", BLOG))
    llm.script([cut_off((900, 64)), Reply.structured(whole, usage=(900, 70))])
    outcome = await create_plan("create author Ann", make_context(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 2
    assert outcome.usage == {"inputTokens": 1800, "outputTokens": 134}
    first, second = llm.requests
    # an OpenAI-compatible server reads max_tokens (langchain also sends max_completion_tokens)
    assert (first["max_tokens"], second["max_tokens"]) == (64, 128)
    assert first["messages"] == second["messages"]


def test_cli_json_error_of_a_cut_off_plan_shows_what_it_cost(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    cli_llm.env["TOOLPLAN_STRUCTURED_METHOD"] = "json_schema"
    cli_llm.env["TOOLPLAN_LLM_MAX_TOKENS"] = "64"
    llm.script([cut_off((900, 64)), cut_off((900, 128))])
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 3, done.stderr
    data = done.json()
    assert "stopped at the output limit" in data["error"]
    assert "in a retry after a first answer cut off at 64 tokens" in data["error"]
    assert data["llmCalls"] == 2 == len(llm.requests)
    assert data["usage"] == {"inputTokens": 1800, "outputTokens": 192}


def test_cli_json_error_of_an_unfixable_plan_shows_what_it_cost(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script([Reply.structured(broken_blog_plan(), usage=(100, 20))] * 3)
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 2, done.stderr
    data = done.json()
    assert data["llmCalls"] == 3 and data["usage"] == {"inputTokens": 300, "outputTokens": 60}
    assert data["issues"] and "could not produce a valid plan" in data["error"]


# -- optional values nobody stated ------------------------------------------------------------


def shortest_distance(origin: str, destination: str, unit: str = "kilometers") -> float:
    """The shortest driving distance between two places."""
    return 361.0


DISTANCE = "Find the shortest driving distance between New York City and Washington D.C."


@pytest.mark.usefixtures("all_rewrites")
async def test_an_optional_value_nobody_stated_is_dropped_and_recorded(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """BFCL multiple_104: ``unit: "miles"``, where the tool's default is kilometers and the
    request names no unit. Written twice, once with the unit and once without: dropped, the two
    are the same call, merged."""
    route = {"origin": "New York City", "destination": "Washington D.C."}
    llm.script(
        [
            Reply.structured(
                plan(
                    step("miles", "shortest_distance", {**route, "unit": "miles"}),
                    step("plain", "shortest_distance", route),
                )
            )
        ]
    )
    ctx = make_context(tmp_path, catalog=ToolCatalog([shortest_distance]))
    outcome = await create_plan(DISTANCE, ctx)
    assert outcome.llm_calls == 1
    assert [(s["id"], s["parameters"]) for s in outcome.plan["steps"]] == [("miles", route)]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["unstatedArguments"] == {"miles": {"unit": "miles"}}
    assert record.meta["mergedSteps"] == {"plain": "miles"}


async def test_an_optional_value_the_request_states_is_kept(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    route = {"origin": "New York City", "destination": "Washington D.C.", "unit": "miles"}
    llm.script([Reply.structured(plan(step("d", "shortest_distance", route)))])
    ctx = make_context(tmp_path, catalog=ToolCatalog([shortest_distance]))
    outcome = await create_plan(DISTANCE + ", in miles", ctx)
    assert outcome.plan["steps"][0]["parameters"] == route
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None and "unstatedArguments" not in record.meta


async def test_a_replans_context_states_values_too(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    route = {"origin": "New York City", "destination": "Washington D.C.", "unit": "miles"}
    llm.script([Reply.structured(plan(step("d", "shortest_distance", route)))])
    ctx = make_context(tmp_path, catalog=ToolCatalog([shortest_distance]))
    context = 'The previous plan failed; it called shortest_distance(unit="miles").'
    outcome = await create_plan(DISTANCE, ctx, context=context)
    assert outcome.plan["steps"][0]["parameters"] == route


@pytest.mark.usefixtures("all_rewrites")
async def test_a_value_dropped_from_a_step_merged_away_is_recorded_under_the_kept_one(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    route = {"origin": "New York City", "destination": "Washington D.C."}
    llm.script(
        [
            Reply.structured(
                plan(
                    step("plain", "shortest_distance", route),
                    step("miles", "shortest_distance", {**route, "unit": "miles"}),
                )
            )
        ]
    )
    ctx = make_context(tmp_path, catalog=ToolCatalog([shortest_distance]))
    outcome = await create_plan(DISTANCE, ctx)
    assert [s["id"] for s in outcome.plan["steps"]] == ["plain"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["unstatedArguments"] == {"plain": {"unit": "miles"}}
    assert record.meta["mergedSteps"] == {"miles": "plain"}


# -- one-item calls of a list-taking tool ---------------------------------------------------------


def analyze_structure(building_id: str, floors: list[int], mode: str = "static") -> str:
    """Structural analysis of some floors of a building."""
    return "sound"


@pytest.mark.usefixtures("all_rewrites")
async def test_one_item_calls_are_batched_then_merged_with_the_same_call_and_recorded(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """BFCL multiple_162: the 2nd, 3rd and 4th floors asked for one floor at a time, then all
    three at once. Batched, the first three are the fourth: one call."""

    def floors(sid: str, which: list[int]) -> dict[str, Any]:
        args = {"building_id": "B1004", "floors": which, "mode": "dynamic"}
        return step(sid, "analyze_structure", args)

    llm.script(
        [
            Reply.structured(
                plan(
                    floors("f2", [2]),
                    floors("f3", [3]),
                    floors("f4", [4]),
                    floors("all", [2, 3, 4]),
                )
            )
        ]
    )
    ctx = make_context(tmp_path, catalog=ToolCatalog([analyze_structure]))
    query = "Dynamic structural analysis of building B1004, for its 2nd, 3rd and 4th floors"
    outcome = await create_plan(query, ctx)
    assert outcome.llm_calls == 1
    assert [(s["id"], s["parameters"]["floors"]) for s in outcome.plan["steps"]] == [
        ("f2", [2, 3, 4])
    ]
    assert outcome.plan["outputSteps"] == ["f2"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["batchedSteps"] == {"f3": "f2", "f4": "f2"}
    assert record.meta["mergedSteps"] == {"all": "f2"}


def market_data(indexes: list[str], days: int, region: str = "US") -> dict[str, Any]:
    """Market performance of stock indexes over the past days (region: optional, default US)."""
    return {}


@pytest.mark.usefixtures("all_rewrites")
async def test_a_repeat_of_one_items_call_is_merged_before_the_items_are_batched(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The S&P again "after" the S&P is that call, not a third item; and a value dropped from a
    step batched away is recorded under the step that was kept."""

    def index(sid: str, name: str, **more: Any) -> dict[str, Any]:
        return step(sid, "market_data", {"indexes": [name], "days": 5, **more})

    again = {**index("sp_again", "S&P 500"), "dependsOn": ["sp"]}
    llm.script(
        [
            Reply.structured(
                plan(index("sp", "S&P 500"), index("dow", "Dow Jones", region="Europe"), again)
            )
        ]
    )
    ctx = make_context(tmp_path, catalog=ToolCatalog([market_data]))
    outcome = await create_plan("The S&P 500 and the Dow Jones over the past 5 days", ctx)
    assert [(s["id"], s["parameters"]) for s in outcome.plan["steps"]] == [
        ("sp", {"indexes": ["S&P 500", "Dow Jones"], "days": 5})
    ]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None
    assert record.meta["mergedSteps"] == {"sp_again": "sp"}
    assert record.meta["batchedSteps"] == {"dow": "sp"}
    assert record.meta["unstatedArguments"] == {"sp": {"region": "Europe"}}


async def test_calls_of_a_tool_that_waits_for_approval_are_not_batched(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    def index(sid: str, name: str) -> dict[str, Any]:
        return step(sid, "market_data", {"indexes": [name], "days": 5})

    llm.script([Reply.structured(plan(index("sp", "S&P 500"), index("dow", "Dow Jones")))])
    ctx = make_context(tmp_path, catalog=ToolCatalog([tagged(market_data, "approval")]))
    outcome = await create_plan("The S&P 500 and the Dow Jones over the past 5 days", ctx)
    assert [s["id"] for s in outcome.plan["steps"]] == ["sp", "dow"]
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None and "batchedSteps" not in record.meta


# -- the repair speaks of the model's own answer (issue 43) ----------------------------------------


@pytest.mark.usefixtures("all_rewrites")
async def test_a_repair_names_the_steps_as_the_model_wrote_them_not_as_rewritten(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """``b`` repeats ``a`` and is merged into it, so ``{{b.city}}`` became ``{{a.city}}``; the
    rewritten plan is still invalid, and the model is told of ``{{b.city}}``, which it wrote,
    beside its own answer."""
    sucrose = {"compound": "C12H22O11"}
    first = plan(
        step("a", "weigh", sucrose),
        step("b", "weigh", sucrose),
        step("c", "ship", {"to": {"city": "{{b.city}}"}}),
    )
    fixed = plan(step("a", "weigh", sucrose), step("c", "ship", {"to": {"city": "Berlin"}}))
    llm.script([Reply.structured(first), Reply.structured(fixed)])
    ctx = make_context(tmp_path, catalog=WEIGH)
    outcome = await create_plan("Weigh sucrose, then ship a parcel to Berlin", ctx)
    assert outcome.llm_calls == 2 and outcome.changes == []
    repair = str(llm.requests[1]["messages"][-1]["content"])
    answer, problems = repair.split("Problems:")
    assert '"{{b.city}}"' in answer and '"id": "b"' in answer  # its own text
    assert "'{{b.city}}'" in problems and "step 'b' (weigh)" in problems
    assert "{{a.city}}" not in repair
