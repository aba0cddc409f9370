"""Planning without a model server: ``TOOLPLAN_MODEL=test`` (``--model test``) through the real
CLI (``plan``, ``run`` with its answer, ``--stream``, ``batch --execute``, both plan formats) and
the GraphQL ``runQuery``: the real planner and agent graphs, with the test model answering."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.api_support import ServerFactory, server_factory
from tests.e2e.conftest import Cli

pytestmark = [pytest.mark.e2e]

BLOG = "Create author Alice with email alice@test.com, then a blog by Alice titled Hello"


@pytest.fixture
def offline(cli: Cli) -> Cli:
    """``cli`` with the test model, and no model server configured at all."""
    cli.env["TOOLPLAN_MODEL"] = "test"
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOOLPLAN_PLAN_FORMAT"):
        cli.env.pop(name, None)
    return cli


def test_without_a_model_the_error_says_how_to_plan_offline(cli: Cli) -> None:
    for name in ("TOOLPLAN_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        cli.env.pop(name, None)
    done = cli("run", BLOG)
    assert done.code == 3 and "no model is configured" in done.stderr
    assert "--model test" in done.stderr


def test_plan_and_run_a_query_offline(offline: Cli) -> None:
    planned = offline("plan", BLOG, "--json")
    assert planned.code == 0, planned.stderr
    plan = planned.json()
    assert plan["status"] == "planned" and plan["model"] == "test" and plan["llmCalls"] == 1
    steps = [(s["id"], s["tool"], s["parameters"]) for s in plan["plan"]["steps"]]
    assert steps == [
        ("author", "createAuthor", {"name": "Alice", "email": "alice@test.com"}),
        (
            "blog",
            "createBlog",
            {"authorId": "{{author._id}}", "title": "Hello", "content": "content"},
        ),
    ]

    ran = offline("run", BLOG)  # plan (streamed as it is written), run, answer
    assert ran.code == 0, ran.stderr
    assert "planning with test" in ran.stderr
    assert '+ createAuthor(name="Alice", email="alice@test.com")' in ran.stderr
    assert "execution status: succeeded" in ran.stdout
    assert "answer: The plan succeeded." in ran.stdout

    answered = offline("run", BLOG, "--json", "--no-reuse")  # the plan that ran is not reused
    assert answered.code == 0, answered.stderr
    result = answered.json()
    assert result["status"] == "succeeded" and result["llmCalls"] == 2
    assert [s["status"] for s in result["steps"]] == ["succeeded", "succeeded"]
    assert result["answer"].startswith("The plan succeeded.")
    assert result["outputs"]["blog"]["title"] == "Hello"


def test_a_json_plan_offline(offline: Cli) -> None:
    offline.env["TOOLPLAN_PLAN_FORMAT"] = "json"
    done = offline("run", BLOG, "--json")
    assert done.code == 0, done.stderr
    result = done.json()
    assert result["status"] == "succeeded"
    assert result["plans"][0]["planStatus"] == "planned"
    assert result["plan"]["steps"][1]["parameters"]["authorId"] == "{{author._id}}"


def test_stream_starts_a_read_only_step_while_the_plan_is_written(offline: Cli) -> None:
    # ``lookup`` (tests/support/tools.py) is tagged read-only, ``echo`` is not.
    offline.env["TOOLPLAN_TOOLS"] = "tests.support.tools"
    done = offline(
        "run", "lookup key alpha, then echo value beta", "--stream", "--no-answer", "--json"
    )
    assert done.code == 0, done.stderr
    result = done.json()
    assert [(s["id"], s["status"]) for s in result["steps"]] == [
        ("lookup_1", "succeeded"),
        ("echo_1", "succeeded"),
    ]
    assert result["outputs"]["echo_1"] == "beta"
    assert [(e["step"], e["status"]) for e in result["earlyStarts"]] == [("lookup_1", "adopted")]
    assert [c["step"] for c in offline.calls()] == ["lookup_1", "echo_1"]  # lookup called once


def test_batch_plans_and_runs_every_query_offline(offline: Cli) -> None:
    queries = offline.tmp / "queries.txt"
    queries.write_text("What is the weather in Paris?\n" + BLOG + "\n")
    done = offline("batch", str(queries), "--execute", "--json")
    assert done.code == 0, done.stderr
    summary = done.json()
    assert summary["byStatus"] == {"succeeded": 2} and summary["llmCalls"] == 2
    lines = (offline.tmp / "queries.results.jsonl").read_text().splitlines()
    tools = {json.loads(line)["query"]: json.loads(line)["tools"] for line in lines}
    assert tools == {
        "What is the weather in Paris?": ["get_weather"],
        BLOG: ["createAuthor", "createBlog"],
    }


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerFactory]:
    monkeypatch.setenv("TOOLPLAN_MODEL", "test")  # read when the server starts
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOOLPLAN_PLAN_FORMAT"):
        monkeypatch.delenv(name, raising=False)
    yield from server_factory(tmp_path)


RUN_QUERY = """mutation($query: String!) {
  runQuery(query: $query) { answer llmCalls plans { planId status } }
}"""


def test_graphql_run_query_offline(servers: ServerFactory) -> None:
    client = servers().client()
    try:
        run = client.data(RUN_QUERY, {"query": BLOG})["runQuery"]
    finally:
        client.close()
    assert run["llmCalls"] == 2
    assert [plan["status"] for plan in run["plans"]] == ["succeeded"]
    assert run["answer"].startswith("The plan succeeded.")
