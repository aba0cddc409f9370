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
from tests.support.plans import ATTEMPTS, QUERY, broken_blog_plan
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


def test_an_answer_the_server_ends_short_of_the_limit_is_not_asked_again(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """finish_reason 'length' after 300 of 6,400 tokens: the server's context window filled. A
    retry with twice the limit would fill it at the same place, and raising the limit is not
    the advice."""
    cli_llm.env["TOOLPLAN_STRUCTURED_METHOD"] = "json_schema"
    llm.script([cut_off((7892, 300)).with_(context_full=True), cut_off((7892, 300))])
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 3, done.stderr
    data = done.json()
    assert "stopped after 300 output tokens" in data["error"]
    assert "short of its output limit of 6400" in data["error"]
    assert "context window" in data["error"] and "TOOLPLAN_LLM_MAX_TOKENS" not in data["error"]
    assert data["llmCalls"] == 1 == len(llm.requests)
    assert data["usage"] == {"inputTokens": 7892, "outputTokens": 300}


def test_cli_json_error_of_an_unfixable_plan_shows_what_it_cost(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script([Reply.structured(broken_blog_plan(), usage=(100, 20))] * ATTEMPTS)
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 2, done.stderr
    data = done.json()
    cost = {"inputTokens": 100 * ATTEMPTS, "outputTokens": 20 * ATTEMPTS}
    assert data["llmCalls"] == ATTEMPTS and data["usage"] == cost
    assert data["issues"] and "could not produce a valid plan" in data["error"]


# -- the repair speaks of the model's own answer (issue 43) ----------------------------------------


async def test_a_repair_names_the_steps_as_the_model_wrote_them(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """``b`` repeats ``a``; the ``duplicates`` rule once merged it, so ``{{b.city}}`` became
    ``{{a.city}}``. Nothing merges it now (issue 53): the plan is invalid as written, and the
    model is told of ``{{b.city}}``, which it wrote, beside its own answer."""
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
