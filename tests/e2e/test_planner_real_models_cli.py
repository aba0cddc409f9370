"""Issue 11's failures 1-7 where the tests of test_planner_real_models.py left a fix unguarded,
replayed through the scripted OpenAI server and the real ``toolplan`` CLI.

Each test here was checked to fail with its fix taken out (the mutation is named in the test):
a test that cannot fail guards nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, llm_step

# These tests are about real models' JSON answers, replayed through the CLI: the plan format is JSON.
pytestmark = pytest.mark.usefixtures("json_plans")


@pytest.fixture
def llm(cli: Cli) -> Iterator[FakeOpenAIServer]:
    """The scripted server, wired into the CLI's environment (no retries: errors fail fast)."""
    with FakeOpenAIServer(api_key="sk-test") as server:
        cli.env.update(
            {
                "OPENAI_API_KEY": "sk-test",
                "OPENAI_BASE_URL": server.base_url,
                "TOOLPLAN_LLM_RETRIES": "0",
            }
        )
        for name in ("TOOLPLAN_MODEL", "TOOLPLAN_STRUCTURED_METHOD", "TOOLPLAN_LLM_MAX_TOKENS"):
            cli.env.pop(name, None)
        yield server


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


# -- 2. every problem of every step in one round ---------------------------------------------------


def test_parameters_that_are_not_an_object_do_not_hide_other_problems(
    cli: Cli, llm: FakeOpenAIServer
) -> None:
    # small models write the argument alone ("Rome", ["Rome"]) where an object of arguments goes;
    # that step is reported, and so is every problem of the other steps, in the same round
    # (mutation: read_plan returns at the first non-object parameters -> only one issue)
    plan = {
        "reasoning": "r",
        "steps": [
            {"id": "a", "tool": "get_weather", "parameters": '["Rome"]'},
            llm_step("b", "sendEmail", {"to": "bob"}),
            llm_step("c", "compare_data", {"data_a": "{{a}}", "data_b": "{{londn}}"}),
        ],
        "outputSteps": ["c"],
    }
    llm.script([Reply.structured(plan)])
    done = cli("plan", "Compare Rome with London", "--max-repairs", "0")
    assert done.code == 2, done.stderr
    no_traceback(done.stderr)
    assert "step 'a': parameters must be a JSON object of arguments, got [\"Rome\"]" in done.stderr
    assert "step 'b': unknown tool 'sendEmail'" in done.stderr
    assert "template '{{londn}}' references unknown step 'londn'" in done.stderr
    assert "missing required argument 'location'" not in done.stderr  # a's arguments: unread
    assert len(llm.requests) == 1


# -- 3. a plan in message content, fenced ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Here is the plan:\n```json\n{plan}\n```\nThe blog step passes {{author._id}}, the id the "
        "first step returns.",
        "<tool_call>\n{call}\n</tool_call>\nI used {{author._id}} for the author.",
    ],
    ids=["fence", "tool_call_tag"],
)
def test_a_wrapped_plan_followed_by_prose_with_braces_is_read(
    cli: Cli, llm: FakeOpenAIServer, text: str
) -> None:
    # models explain the plan after it, templates included: the text from the first "{" to the
    # last "}" is then no JSON, and only the fence (or the tag) delimits the plan
    # (mutation: no fence / no tag pattern in parsing._candidates -> the answer is "not a JSON
    # plan", a repair round is asked for and the scripted server has none)
    plan = json.dumps(blog_plan(), indent=2)
    call = json.dumps({"name": "LLMPlan", "arguments": blog_plan()})
    llm.script([Reply.content(text.replace("{plan}", plan).replace("{call}", call))])
    done = cli("plan", QUERY, "--json")
    assert done.code == 0, done.stderr
    planned = done.json()
    assert planned["llmCalls"] == 1
    assert [step["tool"] for step in planned["plan"]["steps"]] == ["createAuthor", "createBlog"]


# -- 4. bounded generation, function calling ---------------------------------------------------------


def runaway_tool_call(request: dict[str, Any]) -> Reply:
    """A tool call whose arguments loop until max_tokens cuts them off."""
    choice = request.get("tool_choice")
    name = choice["function"]["name"] if isinstance(choice, dict) else "plan"
    return Reply.tool_call(name, '{"reasoning": "' + "\\n" * 50).with_(finish_reason="length")


def test_cli_length_finish_of_a_tool_call_exits_3_without_a_repair_round(
    cli: Cli, llm: FakeOpenAIServer
) -> None:
    # function calling is the default method; its answer does not go through openai's parse(),
    # so no LengthFinishReasonError is raised and only the finish reason tells a runaway apart
    # (mutation: call_model ignores finish_reason 'length' -> the cut-off arguments go to a
    # repair round, which costs the whole limit again)
    runs = [
        (("plan", "draft Ideas", "--max-steps", "10"), 1600),
        (("plan", "draft Ideas", "--json"), 6400),
    ]
    for args, limit in runs:
        llm.script([runaway_tool_call] * 2)
        before = len(llm.requests)
        done = cli(*args)
        assert done.code == 3, done.stderr
        no_traceback(done.stderr)
        shown = done.json()["error"] if "--json" in args else done.stderr
        assert f"stopped at the output limit of {2 * limit} tokens" in shown
        assert f"first answer cut off at {limit} tokens" in shown
        assert "TOOLPLAN_LLM_MAX_TOKENS" in shown
        assert len(llm.requests) == before + 2  # asked once more at twice the limit, not repaired
        # a llama.cpp server reads the literal max_tokens (llama-cpp-python ignores
        # max_completion_tokens, which is all ChatOpenAI sends by itself): 400 + 120 x max steps
        assert [r["max_tokens"] for r in llm.requests[-2:]] == [limit, 2 * limit]


def test_toolplan_llm_max_tokens_reaches_the_server_as_max_tokens(
    cli: Cli, llm: FakeOpenAIServer
) -> None:
    # (mutation: no extra_body={"max_tokens": ...} in create_chat_model -> only
    # max_completion_tokens is sent)
    cli.env["TOOLPLAN_LLM_MAX_TOKENS"] = "900"
    llm.script([Reply.structured(blog_plan())])
    assert cli("plan", QUERY).code == 0
    assert llm.requests[0]["max_tokens"] == 900


# -- 5. endpoint errors in full --------------------------------------------------------------------


def test_cli_shows_a_multi_line_endpoint_error_in_full_on_one_line(
    cli: Cli, llm: FakeOpenAIServer
) -> None:
    # (mutation: error_text keeps the first line -> "answered 500: 1 validation error:" only)
    cli.env["TOOLPLAN_STRUCTURED_METHOD"] = "json_schema"
    cli.env["TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS"] = "0"  # the generic schema: no fallback
    message = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
    )
    for args in (("plan", QUERY), ("plan", QUERY, "--json")):
        # rejected twice: as sent, and as the plain fallback schema without step-id patterns
        llm.script([Reply.error(500, message, should_retry=False)] * 2)
        done = cli(*args)
        assert done.code == 3, done.stderr
        no_traceback(done.stderr)
        # the error is the last line (the progress line "planning with ..." comes first)
        shown = done.json()["error"] if "--json" in args else done.stderr.strip().splitlines()[-1]
        assert "\n" not in shown
        assert (
            "answered 500: 1 validation error: {'type': 'literal_error', 'loc': ('body', "
            "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
            "'input': 'json_schema'}" in shown
        )


# -- 7. honest timing ------------------------------------------------------------------------------


def test_planning_ms_covers_every_round_of_repairs(cli: Cli, llm: FakeOpenAIServer) -> None:
    # the first, slow answer is invalid and the repaired one fast: planningMs covers both
    # (mutation: select_tools restarts the clock at every round -> only the last call is counted)
    invalid = blog_plan()
    invalid["steps"][1] = llm_step("blog", "createBlog", {"authorId": "{{writer._id}}"})

    def slow(_request: dict[str, Any]) -> Reply:
        time.sleep(0.4)
        return Reply.structured(invalid)

    llm.script([slow, Reply.structured(blog_plan())])
    done = cli("plan", QUERY, "--json")
    assert done.code == 0, done.stderr
    planned = done.json()
    assert planned["llmCalls"] == 2
    assert planned["planningMs"] >= 400
