"""What real small models did to the planner, replayed through the scripted OpenAI server.

Each test is one failure seen with Qwen2.5-Coder-1.5B behind llama.cpp (issue 11, failures 1-7),
plus the catalog-typed schema and its fallback. Every request goes through the real ChatOpenAI
client and HTTP; the answers are what the model wrote.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, llm_step
from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.errors import LLMUnavailable
from toolplan.pipeline.planning import create_plan
from toolplan.planning.graph import PlannerContext
from toolplan.planning.planner import PlanningFailed

# These tests are about real models' JSON answers, replayed: the plan format is JSON.
pytestmark = pytest.mark.usefixtures("json_plans")


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
        for name in ("TOOLPLAN_MODEL", "TOOLPLAN_STRUCTURED_METHOD", "TOOLPLAN_TOOLS"):
            monkeypatch.delenv(name, raising=False)
        yield server


def make_context(tmp_path: Path, **kwargs: Any) -> PlannerContext:
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    return Toolplan(settings=settings).planner_context(**kwargs)


def weather_plan(compare_parameters: str) -> dict[str, Any]:
    """What the model wrote for "Compare the weather in Tokyo and London" (generic schema)."""
    return {
        "reasoning": "compare",
        "steps": [
            llm_step("tokyo", "get_weather", {"location": "Tokyo"}),
            llm_step("london", "get_weather", {"location": "London"}),
            {
                "id": "cmp",
                "tool": "compare_data",
                "parameters": compare_parameters,
                "dependsOn": [],
                "confidence": 0.9,
            },
        ],
        "outputSteps": ["cmp"],
    }


def feedback(server: FakeOpenAIServer, call: int = 1) -> str:
    content: str = server.requests[call]["messages"][-1]["content"]
    return content


# -- 1. bare templates inside the parameters string ----------------------------------------------


async def test_bare_whole_value_templates_are_quoted(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    bare = '{"data_a": {{tokyo}}, "data_b": {{ london }}}'
    llm.script([Reply.structured(weather_plan(bare))])
    outcome = await create_plan("Compare the weather in Tokyo and London", make_context(tmp_path))
    assert outcome.llm_calls == 1 and outcome.ref.status == "planned"
    assert outcome.plan["steps"][2]["parameters"] == {
        "data_a": "{{tokyo}}",
        "data_b": "{{ london }}",
    }
    assert outcome.analysis["dependencies"]["cmp"] == ["tokyo", "london"]


async def test_templates_inside_strings_and_lists_are_left_alone(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    plan = weather_plan("{}")
    plan["steps"][2] = {
        "id": "sum",
        "tool": "summarize",
        "parameters": '{"data": [{{tokyo}}, {{london.city}}], "note": "{ {{tokyo.temp}} }"}',
        "dependsOn": [],
        "confidence": 0.9,
    }
    plan["outputSteps"] = ["sum"]
    llm.script([Reply.structured(plan)])
    with pytest.raises(PlanningFailed) as caught:  # "note" is not an argument of summarize
        await create_plan("q", make_context(tmp_path, max_repairs=0))
    # the templates in the list were read (so '{{london.city}}' is checked against the object
    # summarize takes, and the fix is suggested, for the model to make); the one inside the text
    # was left alone: it is no problem
    assert [issue.message for issue in caught.value.issues] == [
        "step 'sum': unknown argument 'note' for tool 'summarize' (it takes: data)",
        "step 'sum' of tool 'summarize': argument 'data[1]' takes an object, but "
        "'{{london.city}}' is a string; did you mean '{{london}}'?",
    ]


# -- 2. every problem of every step in one round --------------------------------------------------


async def test_unreadable_parameters_do_not_hide_other_problems(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    plan = {
        "reasoning": "r",
        "steps": [
            llm_step("a", "get_weather", {"location": "Oslo"}),
            {"id": "b", "tool": "get_weather", "parameters": "{'location': 'Rome'}"},
            llm_step("c", "sendEmail", {"to": "bob"}),
            llm_step("d", "compare_data", {"data_a": "{{a}}", "data_b": "{{londn}}"}),
        ],
        "outputSteps": ["d"],
    }
    llm.script([Reply.structured(plan)])
    with pytest.raises(PlanningFailed) as caught:
        await create_plan("q", make_context(tmp_path, max_repairs=0))
    messages = [issue.message for issue in caught.value.issues]
    assert len(messages) == 3, messages
    assert messages[0].startswith("step 'b': parameters is not valid JSON")
    assert "{⟨here⟩'location': 'Rome'}" in messages[0]  # the fragment, marked
    assert 'use double quotes for keys and strings, e.g. {"location": "Tokyo"}' in messages[0]
    assert "step 'c': unknown tool 'sendEmail'" in messages[1]
    assert messages[2].endswith(
        "template '{{londn}}' references unknown step 'londn' (steps: a, b, c, d)"
    )
    assert "missing required argument" not in " ".join(messages)  # b's unreadable arguments


async def test_repair_feedback_names_the_step_quotes_the_fragment_and_shows_the_fix(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    first = {
        "reasoning": "r",
        "steps": [
            llm_step("cpu", "query_metric", {"name": "cpu_usage"}),
            llm_step("check", "check_threshold", {"metric_name": "cpu_usage", "threshold": "80%"}),
            llm_step("cmp", "compare_data", {"data_a": "weather: {{cpu}}", "data_b": "{{cpu}}"}),
            llm_step("w", "get_weather", {"city": "Oslo"}),
        ],
        "outputSteps": ["check"],
    }
    fixed = {
        **first,
        "steps": [
            first["steps"][0],
            llm_step("check", "check_threshold", {"metric_name": "cpu_usage", "threshold": 80}),
        ],
    }
    llm.script([Reply.structured(first), Reply.structured(fixed)])
    outcome = await create_plan("q", make_context(tmp_path))
    assert outcome.llm_calls == 2
    text = feedback(llm)
    assert (
        "step 'check': argument 'threshold' of tool 'check_threshold' is invalid: '80%' is not "
        "of type 'number'; write 80 (a number, without quotes)" in text
    )
    assert (
        "step 'cmp': argument 'data_a' of tool 'compare_data' takes object, but "
        '"weather: {{cpu}}" is text with a template inside; to pass a step\'s output as the '
        'value, write the template alone: "{{cpu}}"' in text
    )
    assert "step 'w': unknown argument 'city' for tool 'get_weather' (it takes: location)\n" in text
    assert "step 'w': missing required argument 'location'" in text
    assert len(text) < 2500  # the repair prompt stays short


async def test_input_limits_broken_by_the_answer_go_back_to_the_model(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the plan the model writes meets the same input limits as any other plan; breaking one is a
    # problem the model can fix, so it goes back with the others, not out as a crash
    monkeypatch.setenv("TOOLPLAN_MAX_STRING_CHARS", "200")
    long = blog_plan()
    long["steps"][1] = llm_step(
        "blog", "createBlog", {"authorId": "{{author._id}}", "title": "Hello", "content": "w" * 300}
    )
    long["steps"].append(llm_step("c", "sendEmail", {"to": "bob"}))
    llm.script([Reply.structured(long), Reply.structured(blog_plan())])
    outcome = await create_plan(QUERY, make_context(tmp_path))
    assert outcome.llm_calls == 2 and outcome.ref.status == "planned"
    text = feedback(llm)
    assert "steps[1].parameters.content: the string is 300 characters long; the limit is 200" in (
        text
    )
    assert "step 'c': unknown tool 'sendEmail'" in text  # reported in the same round


# -- 3. a plan in message content, fenced ---------------------------------------------------------


@pytest.mark.parametrize("method", ["function_calling", "json_schema"])
async def test_plan_in_a_markdown_fence_is_read(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", method)
    text = "Here is the plan:\n```json\n" + json.dumps(blog_plan(), indent=2) + "\n```\n"
    llm.script([Reply.content(text)])
    outcome = await create_plan(QUERY, make_context(tmp_path))
    assert outcome.llm_calls == 1 and [s["tool"] for s in outcome.plan["steps"]] == [
        "createAuthor",
        "createBlog",
    ]


async def test_plan_in_a_tool_call_tag_is_read(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    text = '<tool_call>\n{"name": "LLMPlan", "arguments": ' + json.dumps(blog_plan()) + "}\n"
    llm.script([Reply.content(text + "</tool_call>")])
    outcome = await create_plan(QUERY, make_context(tmp_path))
    assert outcome.llm_calls == 1 and outcome.ref.status == "planned"


# -- 4. bounded generation -----------------------------------------------------------------------


async def test_max_tokens_is_sent_and_a_length_finish_is_a_clear_failure(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    runaway = Reply.content('{"reasoning": "' + "\\n" * 50).with_(finish_reason="length")
    llm.script([runaway, runaway])
    with pytest.raises(LLMUnavailable) as caught:
        await create_plan("draft Ideas", make_context(tmp_path))
    assert type(caught.value).__name__ == "LLMOutputTruncated"
    # asked once more with twice the limit, then no repair round
    assert caught.value.exit_code == 3 and len(llm.requests) == 2
    assert "output limit of 12800 tokens" in caught.value.message
    assert "first answer cut off at 6400 tokens" in caught.value.message  # 400 + 120 x 50 steps
    assert [r["max_tokens"] for r in llm.requests] == [6400, 12800]

    monkeypatch.setenv("TOOLPLAN_LLM_MAX_TOKENS", "900")
    llm.script([Reply.structured(blog_plan())])
    await create_plan(QUERY, make_context(tmp_path))
    assert llm.requests[2]["max_tokens"] == 900
    monkeypatch.delenv("TOOLPLAN_LLM_MAX_TOKENS")
    monkeypatch.setenv("TOOLPLAN_MAX_STEPS", "10")
    llm.script([Reply.structured(blog_plan())])
    await create_plan(QUERY, make_context(tmp_path))
    assert llm.requests[3]["max_tokens"] == 1600


def test_cli_length_finish_exits_3_without_traceback(cli: Cli, llm: FakeOpenAIServer) -> None:
    cli.env.update({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url})
    cli.env["TOOLPLAN_STRUCTURED_METHOD"] = "json_schema"
    runaway = Reply.content('{"reasoning": "' + "\\n" * 50).with_(finish_reason="length")
    for args in (("plan", "draft Ideas"), ("plan", "draft Ideas", "--json")):
        llm.script([runaway, runaway])  # the second at twice the limit
        done = cli(*args)
        assert done.code == 3, done.stderr
        assert "Traceback" not in done.stderr and "LengthFinishReasonError" not in done.stderr
        shown = done.json()["error"] if "--json" in args else done.stderr
        assert "stopped at the output limit" in shown and "TOOLPLAN_LLM_MAX_TOKENS" in shown


# -- 5. endpoint errors in full -------------------------------------------------------------------


async def test_a_multi_line_endpoint_error_is_shown_in_full_on_one_line(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    monkeypatch.setenv("TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS", "0")  # the generic schema: no fallback
    message = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
    )
    # rejected twice: as sent, and as the plain fallback schema without step-id patterns
    llm.script([Reply.error(500, message, should_retry=False)] * 2)
    with pytest.raises(LLMUnavailable) as caught:
        await create_plan(QUERY, make_context(tmp_path))
    assert "\n" not in caught.value.message
    assert (
        "answered 500: 1 validation error: {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\""
        in caught.value.message
    )


# -- 6. a cache-friendly prompt -------------------------------------------------------------------


def test_system_prompt_is_byte_identical_across_executions(cli: Cli, llm: FakeOpenAIServer) -> None:
    """Statistics change after every execution; the system prompt (and the tool schema) must
    not, or no two planning calls share a long prefix and no prompt cache ever hits."""
    cli.env.update({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url})
    llm.script([Reply.structured(blog_plan())] * 2)
    assert cli("plan", QUERY).code == 0
    for _ in range(3):
        assert cli("run", "--file", str(REPO / "examples" / "blog_chain.json")).code == 0
    assert cli("plan", QUERY).code == 0
    first, second = llm.requests
    assert first["messages"] == second["messages"]  # the tools are fast and never failed
    assert first["tools"] == second["tools"]


def test_observed_statistics_follow_the_static_prompt_in_coarse_buckets(
    cli: Cli, llm: FakeOpenAIServer
) -> None:
    cli.env.update({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url})
    failing = {"steps": [{"id": "x", "tool": "business_error", "parameters": {"message": "no"}}]}
    plan_file = cli.tmp / "fails.json"
    plan_file.write_text(json.dumps(failing))
    llm.script([Reply.structured(blog_plan())] * 3)
    assert cli("plan", QUERY).code == 0
    for _ in range(5):
        assert cli("run", "--file", str(plan_file)).code == 1
    assert cli("plan", QUERY).code == 0
    assert cli("run", "--file", str(plan_file)).code == 1
    assert cli("plan", QUERY).code == 0
    before, after, later = (request["messages"] for request in llm.requests)
    assert after[0] == before[0]  # the system prompt did not move
    assert after[1]["role"] == "user" and after[-1]["content"] == QUERY
    assert "- business_error: fails often (over half of the calls)" in after[1]["content"]
    assert later == after  # one more failure stays in the same bucket: same messages


# -- 7. honest timing ------------------------------------------------------------------------------


async def test_planning_ms_covers_the_llm_call(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    def slow(_request: dict[str, Any]) -> Reply:
        time.sleep(0.3)
        return Reply.structured(blog_plan())

    llm.script([slow])
    outcome = await create_plan(QUERY, make_context(tmp_path))
    assert outcome.planning_ms >= 300
    record = make_context(tmp_path).store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.meta["planningMs"] >= 300


# -- usage ----------------------------------------------------------------------------------------


async def test_cached_input_tokens_are_reported(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    plan = blog_plan()
    plan["steps"][1] = llm_step("blog", "createBlog", {"authorId": "{{writer._id}}"})
    llm.script(
        [
            Reply.structured(plan, usage=(1800, 90)).with_(cached=0),
            Reply.structured(blog_plan(), usage=(2100, 80)).with_(cached=1790),
        ]
    )
    outcome = await create_plan(QUERY, make_context(tmp_path))
    assert outcome.usage == {"inputTokens": 3900, "outputTokens": 170, "cachedInputTokens": 1790}


# -- the catalog-typed schema ---------------------------------------------------------------------


async def test_typed_answer_with_nullable_optionals_is_converted(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    answer = {
        "reasoning": "r",
        "steps": [
            {
                "id": "cpu",
                "tool": "check_threshold",
                "parameters": {
                    "metric_name": "cpu_usage",
                    "threshold": 80,
                    "operator": None,
                    "value": None,
                },
                "dependsOn": [],
                "confidence": 0.9,
            },
            {
                "id": "draft",
                "tool": "createDraft",
                "parameters": {"title": "CPU", "content": "exceeded: {{cpu.exceeded}}"},
                "dependsOn": [],
                "confidence": 0.9,
            },
        ],
        "outputSteps": ["draft"],
    }
    llm.script([Reply.structured(answer)])
    outcome = await create_plan("q", make_context(tmp_path))
    assert outcome.plan["steps"][0]["parameters"] == {"metric_name": "cpu_usage", "threshold": 80}
    record = make_context(tmp_path).store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.meta["planSchema"] == "typed"


async def test_a_server_that_rejects_the_typed_schema_gets_the_generic_one(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    llm.script(
        [
            Reply.error(400, "Unsupported JSON schema: 'anyOf' with 'const' is not supported"),
            Reply.structured(blog_plan()),
            Reply.structured(blog_plan()),
        ]
    )
    ctx = make_context(tmp_path)
    outcome = await create_plan(QUERY, ctx)
    assert outcome.llm_calls == 1 and outcome.ref.status == "planned"
    schemas = [r["response_format"]["json_schema"]["schema"] for r in llm.requests]
    assert "anyOf" in schemas[0]["properties"]["steps"]["items"]
    assert schemas[1]["properties"]["steps"]["items"]["properties"]["parameters"] == {
        "type": "string",
        "description": schemas[1]["properties"]["steps"]["items"]["properties"]["parameters"][
            "description"
        ],
    }
    await create_plan(QUERY, ctx)  # remembered: no second rejected request
    assert len(llm.requests) == 3
    record = ctx.store.get_plan(outcome.ref.plan_id)
    assert record is not None and record.meta["planSchema"] == "generic"


async def test_other_client_errors_are_not_mistaken_for_a_rejected_schema(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm.script([Reply.error(400, "context length exceeded: 9000 > 8192 tokens")])
    with pytest.raises(LLMUnavailable, match="answered 400: context length exceeded"):
        await create_plan(QUERY, make_context(tmp_path))
    assert len(llm.requests) == 1


# -- 8. output shapes the model cannot see; closed sets ------------------------------------------
# After the typed schema, the 1.5B model's remaining failures were references into shapes it had
# to guess ({{metrics[0].name}} where list_metrics returns {"metrics": [...]}), whole outputs passed
# where a number goes, and invented names for closed sets (cpu, p95_latency).


def typed_step(sid: str, tool: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": [], "confidence": 0.9}


def test_a_wrong_shape_goes_back_with_the_path_that_exists_and_the_repair_runs(
    cli: Cli, llm: FakeOpenAIServer
) -> None:
    cli.env.update({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url})
    cli.env["TOOLPLAN_STRUCTURED_METHOD"] = "json_schema"

    def plan(name: str, value: str) -> dict[str, Any]:
        return {
            "reasoning": "r",
            "steps": [
                typed_step("metrics", "list_metrics", {"category": "storage"}),
                typed_step("query", "query_metric", {"name": name}),
                typed_step(
                    "check",
                    "check_threshold",
                    {"metric_name": "disk_io", "threshold": 100, "value": value},
                ),
            ],
            "outputSteps": ["check"],
        }

    llm.script(
        [
            Reply.structured(plan("{{metrics[0].name}}", "{{query}}")),
            Reply.structured(plan("{{metrics.metrics[0].name}}", "{{query.current}}")),
        ]
    )
    done = cli(
        "run",
        "List the storage metrics, query the first, check it is above 100",
        "--json",
        "--no-answer",
    )
    assert done.code == 0, done.stderr
    result = done.json()
    assert result["status"] == "succeeded" and result["llmCalls"] == 2
    text = feedback(llm)
    assert "the list is under 'metrics': {{metrics.metrics[0].name}}" in text
    assert "argument 'value' takes a number, but '{{query}}' is an object" in text
    assert "use a field of it: {{query.current}}" in text


def test_a_plan_with_a_wrong_shape_is_rejected_before_any_tool_runs(cli: Cli) -> None:
    path = cli.write_plan(
        {
            "steps": [
                {
                    "id": "author",
                    "tool": "createAuthor",
                    "parameters": {"name": "Bo", "email": "b@t.io"},
                },
                {
                    "id": "blog",
                    "tool": "createBlog",
                    "parameters": {"authorId": "{{author.id}}", "title": "t", "content": "c"},
                },
            ]
        }
    )
    done = cli("run", "--file", path)
    assert done.code == 2 and "Traceback" not in done.stderr
    assert "did you mean {{author._id}}?" in done.stderr
    with sqlite3.connect(cli.tmp / "toolplan.db") as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        records = (
            db.execute("SELECT COUNT(*) FROM tp_records").fetchone()[0]
            if "tp_records" in tables
            else 0
        )
    assert records == 0  # createAuthor never ran


async def test_closed_sets_reach_the_model_as_enums_that_still_take_templates(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
    llm.script(
        [
            Reply.structured(
                {
                    "reasoning": "r",
                    "steps": [typed_step("m", "list_metrics", {"category": None})],
                    "outputSteps": ["m"],
                }
            )
        ]
    )
    await create_plan("list metrics", make_context(tmp_path))
    schema = llm.requests[0]["response_format"]["json_schema"]["schema"]
    branch = next(
        b
        for b in schema["properties"]["steps"]["items"]["anyOf"]
        if b["properties"]["tool"] == {"const": "query_metric"}
    )
    name = branch["properties"]["parameters"]["properties"]["name"]
    assert {
        "enum": ["cpu_usage", "memory_usage", "disk_io", "error_rate", "latency_p95"],
        "type": "string",
    } in name["anyOf"]
    assert {"$ref": "#/$defs/template"} in name["anyOf"]
    system = llm.requests[0]["messages"][0]["content"]
    assert "Returns: {metrics: [{name: " in system


# -- after issue 11: an id passed by name ---------------------------------------------------------


def test_an_id_passed_by_name_goes_back_to_the_model_before_any_tool_runs(
    cli: Cli, llm: FakeOpenAIServer
) -> None:
    """Held-out h-4 with planner-v4: ``getAuthor(authorId="leo")`` after ``createAuthor(name=
    "Leo")`` is valid by every schema and fails at run time; the planner sends it back."""
    cli.env.update({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url})
    cli.env["TOOLPLAN_STRUCTURED_METHOD"] = "json_schema"

    def plan(author_id: str) -> dict[str, Any]:
        return {
            "reasoning": "r",
            "steps": [
                typed_step("author", "createAuthor", {"name": "Leo", "email": "leo@test.com"}),
                typed_step("leo_id", "getAuthor", {"authorId": author_id}),
            ],
            "outputSteps": ["leo_id"],
        }

    llm.script([Reply.structured(plan("leo")), Reply.structured(plan("{{author._id}}"))])
    done = cli(
        "run",
        "Create author Leo (leo@test.com), then get him back by his id",
        "--json",
        "--no-answer",
    )
    assert done.code == 0, done.stderr
    result = done.json()
    assert result["status"] == "succeeded" and result["llmCalls"] == 2
    assert (
        "step 'leo_id': argument 'authorId' of tool 'getAuthor' is 'leo', the name that step "
        "'author' (createAuthor) is given, not an id; pass the id it returns: \"{{author._id}}\""
    ) in feedback(llm)
