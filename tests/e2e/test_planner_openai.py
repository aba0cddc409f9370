"""The planner through the real ChatOpenAI client against a local OpenAI-compatible server.

No network: ``tests.support.fake_openai`` answers ``/v1/chat/completions`` with scripted plans in
tool-call and json_schema forms, streamed and not, and records every request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli, as_model_endpoint, planner_context
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import ATTEMPTS, QUERY, blog_plan, broken_blog_plan, llm_step
from tests.support.ports import free_port
from toolplan.errors import LLMUnavailable
from toolplan.pipeline.planning import build_planner_graph, create_plan
from toolplan.planning.graph import PlanningGraphContext
from toolplan.planning.planner import PlanningFailed
from toolplan.tools import load_tool_modules

# These tests are about the JSON format's requests to an OpenAI server (tool calls, JSON schema): the plan format is JSON.
pytestmark = pytest.mark.usefixtures("json_plans")


@pytest.fixture
def llm(llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    return as_model_endpoint(llm, monkeypatch)


def typed(plan: dict[str, Any]) -> dict[str, Any]:
    """``plan`` as the typed schema has the model write it: parameters as objects."""
    return {
        **plan,
        "steps": [{**s, "parameters": json.loads(s["parameters"])} for s in plan["steps"]],
    }


def system_prompt(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "system")


async def test_tool_selection_by_function_calling(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    llm.script([Reply.structured(blog_plan(), usage=(812, 96))])
    outcome = await create_plan(QUERY, planner_context(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 1
    assert outcome.usage == {"inputTokens": 812, "outputTokens": 96}
    assert [s["tool"] for s in outcome.plan["steps"]] == ["createAuthor", "createBlog"]
    (request,) = llm.requests
    assert request["model"] == "gpt-4o-mini"
    assert request["tools"][0]["function"]["name"] == "LLMPlan"
    assert request["tool_choice"]["function"]["name"] == "LLMPlan"
    assert next(m["content"] for m in request["messages"] if m["role"] == "user") == QUERY


async def test_request_carries_every_tools_name_description_and_schema(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm.script([Reply.structured(blog_plan())])
    ctx = planner_context(tmp_path)
    await create_plan(QUERY, ctx)
    prompt = system_prompt(llm.requests[0])
    for info in ctx.catalog.infos():
        assert f"## {info.name}\n{info.description}" in prompt
        assert json.dumps(info.parameters, ensure_ascii=False) in prompt


async def test_json_schema_method_sends_the_catalog_typed_schema(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    llm.script([Reply.structured(typed(blog_plan()), usage=(50, 10))])
    outcome = await create_plan(QUERY, planner_context(tmp_path))
    assert outcome.ref.status == "planned" and outcome.usage == {
        "inputTokens": 50,
        "outputTokens": 10,
    }
    response_format = llm.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    # compare_data takes free-form objects, which strict mode cannot express
    assert response_format["json_schema"]["strict"] is False
    branches = response_format["json_schema"]["schema"]["properties"]["steps"]["items"]["anyOf"]
    assert [b["properties"]["tool"]["const"] for b in branches] == planner_context(
        tmp_path
    ).catalog.names
    assert "encoded as a string" not in system_prompt(llm.requests[0])


async def test_json_schema_is_strict_when_the_catalog_allows_it(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    monkeypatch.setenv("TOOLPLAN_TOOLS", "blog")
    llm.script([Reply.structured(typed(blog_plan()))])
    await create_plan(QUERY, planner_context(tmp_path))
    json_schema = llm.requests[0]["response_format"]["json_schema"]
    assert json_schema["strict"] is True
    for branch in json_schema["schema"]["properties"]["steps"]["items"]["anyOf"]:
        parameters = branch["properties"]["parameters"]
        assert parameters["additionalProperties"] is False
        assert parameters["required"] == list(parameters["properties"])  # optional: nullable


async def test_generic_schema_above_the_typed_schema_limit(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    monkeypatch.setenv("TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS", "5")  # the catalog has 12
    llm.script([Reply.structured(blog_plan())])
    outcome = await create_plan(QUERY, planner_context(tmp_path))
    assert outcome.ref.status == "planned"
    json_schema = llm.requests[0]["response_format"]["json_schema"]
    assert json_schema["strict"] is True
    step_schema = json_schema["schema"]["properties"]["steps"]["items"]
    assert step_schema["properties"]["parameters"]["type"] == "string"  # no free-form object
    assert step_schema["additionalProperties"] is False
    assert "encoded as a string" in system_prompt(llm.requests[0])


@pytest.mark.parametrize("method", ["function_calling", "json_schema"])
async def test_streamed_planning_counts_usage(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """LangGraph Studio streams with stream_mode="messages": the model then streams, and usage
    is only reported because ChatOpenAI is built with stream_usage=True."""
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", method)
    llm.script([Reply.structured(blog_plan(), usage=(70, 30))])
    ctx = planner_context(tmp_path)
    graph = build_planner_graph().compile()
    final: dict[str, Any] = {}
    async for mode, chunk in graph.astream(
        {"query": QUERY},
        context=PlanningGraphContext(planner=ctx),
        stream_mode=["messages", "values"],
    ):
        if mode == "values":
            final = chunk
    request = llm.requests[0]
    assert request["stream"] is True and request["stream_options"]["include_usage"] is True
    assert final["status"] == "planned" and final["plan_id"].startswith("plan_")
    assert final["usage"] == {"inputTokens": 70, "outputTokens": 30}


async def test_repair_loop_over_http(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    llm.script([Reply.structured(broken_blog_plan()), Reply.structured(blog_plan())])
    outcome = await create_plan(QUERY, planner_context(tmp_path))
    assert outcome.llm_calls == 2
    feedback = llm.requests[1]["messages"][-1]["content"]
    assert "unknown tool 'createAuthr'" in feedback and "unknown step 'writer'" in feedback


async def test_unfixable_plan(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    llm.script([Reply.structured(broken_blog_plan())] * ATTEMPTS)
    with pytest.raises(PlanningFailed) as caught:
        await create_plan(QUERY, planner_context(tmp_path))
    assert caught.value.llm_calls == ATTEMPTS and len(llm.requests) == ATTEMPTS


async def test_rate_limit_then_success(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    llm.script([Reply.error(429, "slow down", retry_after=0.01), Reply.structured(blog_plan())])
    outcome = await create_plan(QUERY, planner_context(tmp_path))
    assert outcome.ref.status == "planned" and len(llm.requests) == 2
    assert llm.request_headers[1]["x-stainless-retry-count"] == "1"


async def test_server_errors_exhaust_retries_into_llm_unavailable(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "1")
    llm.script([Reply.error(503, "overloaded", retry_after=0.01)] * 2)
    with pytest.raises(LLMUnavailable, match="answered 503"):
        await create_plan(QUERY, planner_context(tmp_path))


async def test_unreachable_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()  # nobody listens there
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    with pytest.raises(LLMUnavailable, match="cannot reach the endpoint") as caught:
        await create_plan(QUERY, planner_context(tmp_path))
    assert caught.value.exit_code == 3


async def test_wrong_key_is_reported(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with pytest.raises(LLMUnavailable, match="rejected the credentials"):
        await create_plan(QUERY, planner_context(tmp_path))


# -- through the CLI, in subprocesses -----------------------------------------------------------


def test_cli_plan_json(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan(), usage=(10, 5))])
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert set(data) >= {"requestId", "planId", "status", "plan", "llmCalls", "usage"}
    assert data["status"] == "planned" and data["llmCalls"] == 1
    assert data["usage"] == {"inputTokens": 10, "outputTokens": 5}
    shown = cli_llm("show", data["requestId"], "--json").json()
    assert shown["plans"][0]["meta"]["promptVersion"] == "planner-v9"

    llm.script([Reply.structured(blog_plan())])
    again = cli_llm(
        "plan", "--request-id", data["requestId"], "the same for author Alice", "--json"
    )
    assert again.code == 0, again.stderr
    assert again.json()["requestId"] == data["requestId"]
    assert len(cli_llm("show", data["requestId"], "--json").json()["plans"]) == 2


def test_cli_run_query_plans_and_executes(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan())])
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert data["status"] == "succeeded" and data["llmCalls"] == 1
    assert data["outputs"]["blog"]["title"] == "Hello"
    assert data["steps"][1]["resolvedParameters"]["authorId"] == data["steps"][0]["output"]["_id"]


def test_cli_low_confidence_is_not_run_without_yes(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan(confidence=0.2))])
    done = cli_llm("run", QUERY)
    assert done.code == 2
    assert (
        "needs_review" in done.stderr and "NOT executed" in done.stderr and "--yes" in done.stderr
    )
    plan_id = done.stderr.split("plan ", 1)[1].split()[0]
    assert cli_llm("show", plan_id, "--json").json()["execution"] is None
    refused = cli_llm("execute", plan_id)
    assert refused.code == 2 and "needs review" in refused.stderr
    approved = cli_llm("execute", plan_id, "--yes", "--json")
    assert approved.code == 0 and approved.json()["status"] == "succeeded"

    llm.script([Reply.structured(blog_plan(confidence=0.2))])
    assert cli_llm("run", QUERY, "--yes", "--no-answer", "--json").json()["status"] == "succeeded"


def test_cli_unfixable_plan_exit_2(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(broken_blog_plan())] * ATTEMPTS)
    done = cli_llm("run", QUERY)
    failed = f"could not produce a valid plan after {ATTEMPTS} LLM call(s)"
    assert done.code == 2 and failed in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_llm_unavailable_and_unconfigured_exit_3(cli: Cli) -> None:
    port = free_port()  # nobody listens there
    cli.env.update(
        {
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "TOOLPLAN_LLM_RETRIES": "0",
        }
    )
    done = cli("plan", QUERY)
    assert (
        done.code == 3
        and "cannot reach the endpoint" in done.stderr
        and "Traceback" not in done.stderr
    )
    assert len(done.stderr.strip().splitlines()) <= 2
    cli.env.pop("OPENAI_API_KEY")
    missing = cli("run", QUERY)
    assert (
        missing.code == 3
        and "OPENAI_API_KEY" in missing.stderr
        and "toolplan run --file" in missing.stderr
    )


def test_planner_catalog_matches_cli_tools() -> None:
    assert len(load_tool_modules(["blog", "metrics", "weather"]).infos()) == 12


async def test_made_up_data_is_repaired_into_templates(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The new-user trial: literal weather reports for compare_data, refused with the template
    to write; the repaired plan is the one stored."""
    query = "What's the weather in Berlin and Madrid, and which one is warmer?"
    fetch = [
        llm_step("berlin", "get_weather", {"location": "Berlin"}),
        llm_step("madrid", "get_weather", {"location": "Madrid"}),
    ]
    made_up = {"city": "Berlin", "temp": 12.5, "condition": "cloudy"}
    invented = {
        "reasoning": "compare the two reports",
        "steps": [
            *fetch,
            llm_step(
                "compare",
                "compare_data",
                {"data_a": made_up, "data_b": {"city": "Madrid", "temp": 24.1}},
                depends_on=["berlin", "madrid"],
            ),
        ],
        "outputSteps": ["compare"],
    }
    grounded = {
        **invented,
        "steps": [
            *fetch,
            llm_step("compare", "compare_data", {"data_a": "{{berlin}}", "data_b": "{{madrid}}"}),
        ],
    }
    llm.script([Reply.structured(invented), Reply.structured(grounded)])
    outcome = await create_plan(query, planner_context(tmp_path))
    assert outcome.llm_calls == 2 and outcome.ref.status == "planned"
    feedback = llm.requests[1]["messages"][-1]["content"]
    assert "argument 'data_a' of tool 'compare_data' is a literal object" in feedback
    assert '"{{berlin}}"' in feedback and '"{{madrid}}"' in feedback
    stored = planner_context(tmp_path).store.get_plan(outcome.ref.plan_id)
    assert stored is not None
    assert stored.plan["steps"][2]["parameters"] == {
        "data_a": "{{berlin}}",
        "data_b": "{{madrid}}",
    }
