"""LangGraph Studio end to end: ``langgraph dev`` serves both graphs from langgraph.json.

Starts ``langgraph dev --no-browser --no-reload --port <free>`` in the repository, with the planner's
model pointed at the local OpenAI-compatible test server, and drives it with ``langgraph_sdk``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from tests.e2e.conftest import REPO
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan
from tests.support.ports import free_port


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as server:
        yield server


@pytest.fixture(scope="module")
def studio(llm: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("studio")
    port = free_port()
    langgraph = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    assert langgraph, "langgraph-cli is part of the dev extras: pip install -e '.[dev]'"
    env = {
        **os.environ,
        "TOOLPLAN_STORE": f"sqlite:///{tmp / 'toolplan.db'}",
        "TOOLPLAN_TOOLS": "blog,metrics,weather",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": llm.base_url,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
    }
    log = (tmp / "langgraph-dev.log").open("w")
    process = subprocess.Popen(
        [langgraph, "dev", "--no-browser", "--no-reload", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            assert process.poll() is None, (tmp / "langgraph-dev.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "langgraph dev did not start in 90 s"
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


async def test_both_graphs_are_served(studio: str) -> None:
    client = get_client(url=studio)
    assistants = await client.assistants.search()
    by_graph = {a["graph_id"]: a["assistant_id"] for a in assistants}
    assert set(by_graph) >= {"planner", "executor", "agent"}
    inputs = {}
    for graph_id, assistant_id in by_graph.items():
        schemas = await client.assistants.get_schemas(assistant_id)
        inputs[graph_id] = schemas["input_schema"]
        assert inputs[graph_id]["properties"], f"{graph_id} must expose a typed input form"
    assert inputs["planner"]["required"] == ["query"]
    assert inputs["executor"]["required"] == ["plan_id"]
    assert inputs["agent"]["required"] == ["query"]


async def test_planner_then_executor_leave_checkpoints(studio: str, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan(), usage=(40, 12))])
    client = get_client(url=studio)

    planning_thread = await client.threads.create()
    planned = await client.runs.wait(
        planning_thread["thread_id"], "planner", input={"query": QUERY}
    )
    assert planned["status"] == "planned" and planned["errors"] == []
    plan_id = planned["plan_id"]
    assert plan_id.startswith("plan_") and planned["request_id"].startswith("req_")
    assert [s["tool"] for s in planned["plan"]["steps"]] == ["createAuthor", "createBlog"]

    thread = await client.threads.create()
    executed = await client.runs.wait(thread["thread_id"], "executor", input={"plan_id": plan_id})
    assert executed["status"] == "succeeded"
    assert [s["status"] for s in executed["steps"]] == ["succeeded", "succeeded"]
    assert executed["outputs"]["blog"]["title"] == "Hello"

    history = await client.threads.get_history(thread["thread_id"])
    assert len(history) >= 3  # input, load_plan, run_steps
    assert history[0]["values"]["status"] == "succeeded"
    nodes_seen = {step for checkpoint in history for step in (checkpoint.get("next") or [])}
    assert "run_steps" in nodes_seen


async def test_executor_without_input_says_what_it_needs(studio: str) -> None:
    client = get_client(url=studio)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "executor", input={})
    joined = await client.runs.join(thread["thread_id"], run["run_id"])
    assert joined["__error__"]["error"] == "InvalidInput", joined
    assert '{"plan_id": "plan_..."}' in joined["__error__"]["message"]


async def test_planner_input_cannot_choose_the_tools_workers_load(
    studio: str, llm: FakeOpenAIServer
) -> None:
    """Whoever can call the served planner graph must not pick the code an operator's workers
    import: ``toolSources`` (and every key toolplan records itself) is refused in ``meta``,
    before the model is asked, and nothing is stored."""
    llm.script([Reply.structured(blog_plan(), usage=(40, 12))])
    calls_before = len(llm.requests)
    client = get_client(url=studio)
    thread = await client.threads.create()
    hostile = {"toolSources": {"modules": ["evil_module"], "mcp": "/tmp/evil.json"}, "x": 1}
    run = await client.runs.create(
        thread["thread_id"], "planner", input={"query": QUERY, "meta": hostile}
    )
    joined = await client.runs.join(thread["thread_id"], run["run_id"])
    assert joined["__error__"]["error"] == "InvalidInput", joined
    assert "'toolSources'" in joined["__error__"]["message"]
    assert len(llm.requests) == calls_before  # refused before any model call

    # A caller's own labels are still stored, beside what toolplan records itself.
    labelled = await client.runs.wait(
        (await client.threads.create())["thread_id"],
        "planner",
        input={"query": QUERY, "meta": {"ticket": "OPS-1"}},
    )
    assert labelled["status"] == "planned", labelled
