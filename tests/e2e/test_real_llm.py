"""The planner against a real model: only when ``TOOLPLAN_TEST_LLM_BASE_URL`` is set.

    eval "$(REAL_LLM_RUNTIME=llama-server bash ../shared/real-llm/serve.sh)"
    TOOLPLAN_TEST_LLM_BASE_URL=$OPENAI_BASE_URL pytest -m real_llm

Optional: ``TOOLPLAN_TEST_LLM_MODEL`` (``provider:model``, default ``openai:`` + the server's first
model), ``TOOLPLAN_TEST_LLM_METHOD`` (default ``json_schema``; ``function_calling`` for
llama-cpp-python), ``TOOLPLAN_TEST_LLM_API_KEY``. CI never sets them: a planning call on a CPU
takes 5-60 s. The assertions are about the machinery with a real model (a valid plan that runs, a
bounded answer, a prompt-cache hit), not about one model's accuracy, which scripts/eval_real_llm.py
measures on the query files.
"""

from __future__ import annotations

import json
import os
import urllib.request

import pytest

from tests.e2e.conftest import Cli

BASE_URL = os.environ.get("TOOLPLAN_TEST_LLM_BASE_URL", "")

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.skipif(not BASE_URL, reason="set TOOLPLAN_TEST_LLM_BASE_URL to a model server"),
]


def _model() -> str:
    configured = os.environ.get("TOOLPLAN_TEST_LLM_MODEL")
    if configured:
        return configured
    with urllib.request.urlopen(BASE_URL.rstrip("/") + "/models", timeout=10) as answer:
        return "openai:" + json.load(answer)["data"][0]["id"]


@pytest.fixture
def real(cli: Cli) -> Cli:
    cli.env.update(
        {
            "OPENAI_BASE_URL": BASE_URL,
            "OPENAI_API_KEY": os.environ.get("TOOLPLAN_TEST_LLM_API_KEY", "unused"),
            "TOOLPLAN_MODEL": _model(),
            "TOOLPLAN_STRUCTURED_METHOD": os.environ.get("TOOLPLAN_TEST_LLM_METHOD", "json_schema"),
            "TOOLPLAN_TOOLS": "blog,metrics,weather",
            "TOOLPLAN_LLM_TIMEOUT": "600",
            "TOOLPLAN_MAX_STEPS": "12",
        }
    )
    return cli


@pytest.mark.parametrize(
    ("query", "tools"),
    [
        ("What's the weather in Oslo?", {"get_weather"}),
        ("Compare the weather in Tokyo and London", {"get_weather", "compare_data"}),
        (
            "Create author Bob (bob@test.com), write a blog post by him titled 'Tips' about "
            "testing, then comment 'Nice!' on it",
            {"createAuthor", "createBlog", "createComment"},
        ),
    ],
)
def test_a_real_model_plans_a_plan_that_runs(real: Cli, query: str, tools: set[str]) -> None:
    done = real("run", query, "--json", timeout=900)
    assert "Traceback" not in done.stderr
    assert done.code == 0, done.stdout + done.stderr
    data = done.json()
    assert data["status"] == "succeeded"
    assert {step["tool"] for step in data["plan"]["steps"]} == tools


def test_a_second_identical_call_reads_the_prompt_cache(real: Cli) -> None:
    first = real("plan", "Which application metrics exist?", "--json", timeout=900)
    second = real("plan", "Which application metrics exist?", "--json", timeout=900)
    assert first.code == 0 and second.code == 0, first.stderr + second.stderr
    cached = second.json()["usage"].get("cachedInputTokens")
    if cached is None:
        pytest.skip("the server does not report cached prompt tokens")
    assert cached >= 0.8 * second.json()["usage"]["inputTokens"]


def test_an_answer_cut_off_at_the_limit_is_a_clear_failure(real: Cli) -> None:
    real.env["TOOLPLAN_LLM_MAX_TOKENS"] = "16"
    done = real("plan", "Compare the weather in Tokyo and London", timeout=900)
    assert done.code == 3 and "Traceback" not in done.stderr
    assert "stopped at the output limit of 16 tokens" in done.stderr
