"""LangGraph Studio end to end: ``langgraph dev`` serves both graphs from langgraph.json.

Starts ``langgraph dev --no-browser --no-reload --port <free>`` in the repository, with the planner's
model pointed at the local OpenAI-compatible test server, and drives it with ``langgraph_sdk``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from tests.e2e.conftest import REPO
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan
from tests.support.ports import first_pick_taken, on_a_free_port, wait_until_serving

SERVING_AT = re.compile(r"API: \S*?(http://127\.0\.0\.1:\d+)")
"""The address ``langgraph dev`` prints ("- 🚀 API: http://..."): it moves to another port by
itself when it finds the one asked for taken as it starts."""


@dataclass
class LangGraphDev:
    """``langgraph dev`` in a process of its own, its output in a file."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int
    """The port asked for."""

    @property
    def url(self) -> str:
        """Where it serves: the address it printed, else the port asked for."""
        printed = SERVING_AT.search(self.log.read_text(errors="replace"))
        return printed.group(1) if printed else f"http://127.0.0.1:{self.port}"

    def answering(self) -> bool:
        try:
            return httpx.get(f"{self.url}/ok", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_langgraph_dev(tmp: Path, env: dict[str, str]) -> LangGraphDev:
    """``langgraph dev`` in the repository on a free port (a new one if it exits because another
    process took the first); returns once it answers."""
    langgraph = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    assert langgraph, "langgraph-cli is part of the dev extras: pip install -e '.[dev]'"

    def launch(port: int) -> LangGraphDev:
        log = tmp / f"langgraph-dev-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [langgraph, "dev", "--no-browser", "--no-reload", "--port", str(port)],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        dev = LangGraphDev(process, log, port)
        wait_until_serving(process, dev.answering, log, timeout=90, what="langgraph dev")
        return dev

    return on_a_free_port(launch)


def studio_env(tmp: Path, llm: FakeOpenAIServer) -> dict[str, str]:
    """The environment of ``langgraph dev``: a store in ``tmp``, the test model server."""
    return {
        **os.environ,
        "TOOLPLAN_STORE": f"sqlite:///{tmp / 'toolplan.db'}",
        "TOOLPLAN_TOOLS": "blog,metrics,weather",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": llm.base_url,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
    }


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as server:
        yield server


@pytest.fixture(scope="module")
def studio(llm: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("studio")
    dev = start_langgraph_dev(tmp, studio_env(tmp, llm))
    try:
        yield dev.url
    finally:
        dev.stop()


# -- the helper, on a port another process took between its choice and the server's bind ---------
# (first in this module, so that no other langgraph dev shares the repository's .langgraph_api/)


def test_langgraph_dev_whose_port_was_taken_serves_on_another(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """langgraph dev finds the port taken as it starts, and serves elsewhere: where it says."""
    with first_pick_taken(monkeypatch) as picks:
        dev = start_langgraph_dev(tmp_path, studio_env(tmp_path, llm))
        try:
            assert dev.url != f"http://127.0.0.1:{picks[0]}"
            assert httpx.get(f"{dev.url}/ok", timeout=30).status_code == 200
        finally:
            dev.stop()


def test_langgraph_dev_that_exits_on_a_taken_port_starts_again_on_another(
    llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port taken after langgraph dev's own check makes its server exit ("address already in
    use"). The check is turned off here, so that the first launch meets the taken port."""
    site = tmp_path / "site"
    site.mkdir()
    patch = "import langgraph_api.cli\nlanggraph_api.cli._is_port_available = lambda *_: True\n"
    (site / "sitecustomize.py").write_text(patch)
    env = studio_env(tmp_path, llm)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    with first_pick_taken(monkeypatch) as picks:
        dev = start_langgraph_dev(tmp_path, env)
        try:
            taken, port = picks
            assert dev.url == f"http://127.0.0.1:{port}"
            said = (tmp_path / f"langgraph-dev-{taken}.log").read_text(errors="replace")
            assert "address already in use" in said, "the first launch did not meet the taken port"
        finally:
            dev.stop()


# -- the graphs ------------------------------------------------------------------------------------


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
