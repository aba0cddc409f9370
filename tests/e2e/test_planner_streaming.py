"""The planner streams the model's answer and tells each step as soon as it is written (issue 28,
no silence), through the real ChatOpenAI client and the local OpenAI-compatible server, which
answers ``stream=true`` with server-sent events.

What is checked is the order of events, never timing: a step is told while its answer is still
streaming (fewer chunks than its answer has), and the plan, usage and requests are exactly the
plain call's. A server that cannot stream is asked plainly, once, and not streamed to again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, broken_blog_plan, llm_step
from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.errors import LLMUnavailable
from toolplan.pipeline.planning import PlanningOutcome, create_plan
from toolplan.planning.context import PlannerContext
from toolplan.planning.llm_errors import LLMOutputRepeating
from toolplan.planning.progress import PlanningEvent

# These tests are about the JSON format's answers, streamed: the plan format is JSON.
pytestmark = pytest.mark.usefixtures("json_plans")

METHODS = ["function_calling", "json_schema"]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.setenv("TOOLPLAN_TOOLS", "blog")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    return monkeypatch


@pytest.fixture
def server(env: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as llm:
        env.setenv("OPENAI_BASE_URL", llm.base_url)
        yield llm


def planner(tmp_path: Path, name: str = "tp", **kwargs: Any) -> PlannerContext:
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / name}.db")
    return Toolplan(settings=settings).planner_context(**kwargs)


def answer(plan: dict[str, Any], usage: tuple[int, int] = (300, 90)) -> Reply:
    """A plan streamed in 40 chunks: a step is complete long before the answer is."""
    return Reply.structured(plan, usage=usage).with_(pieces=40, cached=120)


def without_stream(request: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k not in ("stream", "stream_options")}


@pytest.mark.parametrize("method", METHODS)
async def test_each_step_is_told_while_its_answer_streams(
    server: FakeOpenAIServer, env: pytest.MonkeyPatch, tmp_path: Path, method: str
) -> None:
    env.setenv("TOOLPLAN_STRUCTURED_METHOD", method)
    server.script([answer(broken_blog_plan()), answer(blog_plan())])
    events: list[PlanningEvent] = []
    outcome = await create_plan(QUERY, planner(tmp_path, listener=events.append))
    kinds = [e.kind for e in events]
    assert kinds == [
        "planning",
        "step",
        "step",
        "answered",
        "repairing",
        "step",
        "step",
        "answered",
        "rewritten",
    ]
    first, second = events[5], events[6]
    assert first.step == {
        "id": "author",
        "tool": "createAuthor",
        "parameters": {"name": "Alice", "email": "alice@test.com"},
    }
    assert second.step is not None and second.step["tool"] == "createBlog"
    assert second.step["parameters"]["authorId"] == "{{author._id}}"
    assert (first.steps, second.steps) == (1, 2) and first.attempt == 2
    # told as the chunks came: the first step well before the answer's 40 chunks were in
    assert first.tokens is not None and second.tokens is not None
    assert 0 < first.tokens < second.tokens < 40
    assert events[1].elapsed_ms <= events[3].elapsed_ms  # before its answer was complete
    assert outcome.ref.status == "planned"
    assert all(r["stream"] is True for r in server.requests)
    assert all(r["stream_options"] == {"include_usage": True} for r in server.requests)


@pytest.mark.parametrize("method", METHODS)
async def test_the_streamed_plan_and_usage_are_the_plain_calls(
    server: FakeOpenAIServer, env: pytest.MonkeyPatch, tmp_path: Path, method: str
) -> None:
    env.setenv("TOOLPLAN_STRUCTURED_METHOD", method)
    env.setenv("TOOLPLAN_LLM_MAX_TOKENS", "64")

    async def plan(stream: bool) -> tuple[PlanningOutcome, list[dict[str, Any]]]:
        before = len(server.requests)
        server.script(
            [
                answer(blog_plan(), (900, 64)).with_(finish_reason="length"),  # a larger limit
                answer(broken_blog_plan(), (950, 100)),  # a repair
                answer(blog_plan(), (1000, 110)),
            ]
        )
        ctx = planner(tmp_path, f"stream-{stream}")
        ctx.stream = stream
        return await create_plan(QUERY, ctx), server.requests[before:]

    streamed, streamed_requests = await plan(True)
    plain, plain_requests = await plan(False)
    assert streamed.plan == plain.plan and streamed.analysis == plain.analysis
    assert streamed.llm_calls == plain.llm_calls == 3
    expected = {"inputTokens": 2850, "outputTokens": 274, "cachedInputTokens": 360}
    assert streamed.usage == plain.usage == expected
    assert [r.get("stream") for r in streamed_requests] == [True] * 3
    assert [r.get("stream") for r in plain_requests] == [False] * 3
    # the very same requests, the stream aside (the response_format of json_schema included)
    assert [without_stream(r) for r in streamed_requests] == [
        without_stream(r) for r in plain_requests
    ]


@pytest.mark.parametrize("refusal", ["refuse", "ignore"])
async def test_a_server_that_cannot_stream_is_asked_plainly(
    env: pytest.MonkeyPatch, tmp_path: Path, refusal: str
) -> None:
    with FakeOpenAIServer(api_key="sk-test", streaming=refusal) as llm:
        env.setenv("OPENAI_BASE_URL", llm.base_url)
        replies = [answer(broken_blog_plan(), (100, 20)), answer(blog_plan(), (120, 25))]
        # "ignore" answers the streamed request with a plain body: that reply is spent
        llm.script(([answer(blog_plan())] if refusal == "ignore" else []) + replies)
        events: list[PlanningEvent] = []
        ctx = planner(tmp_path, listener=events.append)
        outcome = await create_plan(QUERY, ctx)
        assert outcome.ref.status == "planned" and outcome.llm_calls == 2
        assert outcome.usage == {"inputTokens": 220, "outputTokens": 45, "cachedInputTokens": 240}
        # streamed once, refused; asked plainly; the repair is not streamed again
        assert [r.get("stream") for r in llm.requests] == [True, False, False]
        assert ctx.stream is False
        kinds = [e.kind for e in events]
        assert kinds == ["planning", "answered", "repairing", "answered", "rewritten"]


async def test_a_client_error_while_streaming_is_the_plain_calls_error(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.script([Reply.error(401, "Incorrect API key provided")])
    with pytest.raises(LLMUnavailable, match=r"rejected the credentials \(401\)"):
        await create_plan(QUERY, planner(tmp_path))
    assert len(server.requests) == 1  # not asked again without a stream


def looping_plan(copies: int) -> dict[str, Any]:
    """An answer that writes the same call again and again (it would end at the output limit)."""
    step = llm_step("author", "createAuthor", {"name": "Alice", "email": "alice@test.com"})
    steps = [{**step, "id": f"author{n}"} for n in range(copies)]
    return {"reasoning": "r", "steps": steps, "outputSteps": ["author0"]}


@pytest.mark.parametrize("method", METHODS)
async def test_identical_calls_are_asked_steps_never_a_runaway(
    server: FakeOpenAIServer, env: pytest.MonkeyPatch, tmp_path: Path, method: str
) -> None:
    """Three identical calls ("create the author three times") are what the request asks: the
    answer is read to its end, never stopped on a count of identical calls."""
    env.setenv("TOOLPLAN_STRUCTURED_METHOD", method)
    server.script([answer(looping_plan(3)).with_(pieces=60)])
    outcome = await create_plan(QUERY, planner(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 1
    assert [s["tool"] for s in outcome.plan["steps"]] == ["createAuthor"] * 3


def string_loop() -> dict[str, Any]:
    """An answer looping inside a string (BFCL's live_simple_147-95-4): no step ever ends."""
    name = "Alice" + ' /FI "IMAGENAME ne opera-stable-dev"' * 80
    step = llm_step("author", "createAuthor", {"name": name, "email": "alice@test.com"})
    return {"reasoning": "r", "steps": [step], "outputSteps": ["author"]}


@pytest.mark.parametrize("method", METHODS)
async def test_an_answer_looping_inside_a_string_is_stopped_and_asked_once_more(
    server: FakeOpenAIServer, env: pytest.MonkeyPatch, tmp_path: Path, method: str
) -> None:
    # BFCL's live_simple_147-95-4: no step ever completes, the argument goes on and on
    env.setenv("TOOLPLAN_STRUCTURED_METHOD", method)
    env.setenv("TOOLPLAN_LLM_MAX_TOKENS", "4000")
    loop = answer(string_loop()).with_(pieces=200, finish_reason="length")
    server.script([loop, loop])
    events: list[PlanningEvent] = []
    with pytest.raises(LLMOutputRepeating, match=r"opera-stable-dev.* times in a row") as raised:
        await create_plan(QUERY, planner(tmp_path, listener=events.append))
    assert len(server.requests) == 2  # asked once more, then given up
    details = raised.value.details
    assert details["steps"] == 0 and details["llmCalls"] == 2
    assert 0 < details["stoppedAfterTokens"] < 100  # of the answer's 200 chunks
    assert [e.kind for e in events] == ["planning", "retrying"]
    note = server.requests[1]["messages"][-1]["content"]
    assert "opera-stable-dev" in note and "times in a row" in note


async def test_a_runaway_answered_right_the_second_time_is_planned(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.script([answer(string_loop()).with_(pieces=200), answer(blog_plan())])
    outcome = await create_plan(QUERY, planner(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 2
    assert [s["tool"] for s in outcome.plan["steps"]] == ["createAuthor", "createBlog"]
    # the second request is the first, plus what the model did (asked as it was, the same
    # model at temperature 0 tends to write the same loop)
    first, second = (request["messages"] for request in server.requests)
    assert second[:-1] == first
    note = second[-1]
    assert note["role"] == "user" and "stopped before it ended" in note["content"]
    assert "times in a row, and would have gone on until the output limit." in note["content"]
    assert "as many times as it asks" in note["content"]
    assert "planner-runaway" not in note["content"]  # the prompt's header is not sent


async def test_an_answer_longer_than_the_step_limit_is_stopped(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    steps = [
        llm_step(f"a{n}", "createAuthor", {"name": f"A{n}", "email": f"a{n}@test.com"})
        for n in range(6)
    ]
    long = answer({"reasoning": "r", "steps": steps, "outputSteps": ["a0"]})
    server.script([long, long])
    ctx = planner(tmp_path)
    ctx.max_steps = 2
    with pytest.raises(LLMOutputRepeating, match="more than 2 steps") as raised:
        await create_plan(QUERY, ctx)
    assert raised.value.details["steps"] == 3 and len(server.requests) == 2
    note = server.requests[1]["messages"][-1]["content"]
    assert "it wrote more than 2 steps, the most a plan may have." in note
    assert "output limit" not in note  # it was stopped at the step limit, not before the other


def test_cli_exit_3_for_an_answer_that_repeats_itself(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    loop = answer(string_loop()).with_(pieces=200)
    llm.script([loop, loop])
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 3, done.stderr
    assert "repeating itself" in done.json()["error"]
    assert cli_llm("list", "--json").json()["plans"] == []  # nothing was stored


def test_cli_prints_a_line_per_step_before_the_answer(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    cli_llm.env["TOOLPLAN_STRUCTURED_METHOD"] = "json_schema"
    llm.script([answer(blog_plan())])
    done = cli_llm("plan", QUERY)
    assert done.code == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "planning with openai:gpt-4o-mini…"
    assert lines[1].startswith('  + createAuthor(name="Alice", email="alice@test.com")  ')
    assert lines[2].startswith(
        '  + createBlog(authorId="{{author._id}}", title="Hello", content="about world")  '
    )
    assert lines[1].endswith(" tokens") and " s, " in lines[1]
    assert lines[3].startswith("answered after ") and "2 step(s)" in lines[3]


def test_cli_json_prints_no_step(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([answer(blog_plan())])
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 0, done.stderr
    assert done.stderr == ""
    assert done.json()["usage"] == {
        "inputTokens": 300,
        "outputTokens": 90,
        "cachedInputTokens": 120,
    }
    assert llm.requests[0]["stream"] is True  # streamed all the same, and silent


def test_cli_exit_3_when_the_stream_is_refused_for_the_credentials(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script([Reply.error(401, "Incorrect API key provided")])
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 3, done.stderr
    assert "rejected the credentials" in done.json()["error"]


async def test_the_agent_graph_streams_the_planning_progress(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    from toolplan.agent.graph import AgentContext, AgentGraphContext, build_agent_graph

    server.script(
        [
            answer(broken_blog_plan(), (100, 20)),
            answer(blog_plan(), (120, 25)),
            Reply.structured({"action": "answer", "answer": "ok"}),
        ]
    )
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'a.db'}")
    client = Toolplan(settings=settings)
    heard: list[PlanningEvent] = []
    ctx = AgentContext(client.planner_context(listener=heard.append), client.execution_context())
    graph = build_agent_graph().compile()
    streamed = [
        chunk
        async for chunk in graph.astream(
            {"query": QUERY}, context=AgentGraphContext(agent=ctx), stream_mode="custom"
        )
    ]
    kinds = ["planning", "step", "step", "answered", "repairing", "step", "step", "answered"]
    kinds.append("rewritten")  # the agent graph's events carry the plan's changes (issue 43)
    assert [(c["event"], c["kind"]) for c in streamed] == [("planning", k) for k in kinds]
    assert streamed[5]["step"]["tool"] == "createAuthor" and streamed[5]["attempt"] == 2
    assert streamed[-2]["llmCalls"] == 2 and streamed[-2]["steps"] == 2
    assert streamed[-1]["changes"] == []
    assert [e.kind for e in heard] == kinds  # the planner's own listener still hears them
    assert ctx.planner.stream is True


async def test_the_llm_timeout_bounds_silence_not_the_length_of_a_streamed_answer(
    server: FakeOpenAIServer, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # TOOLPLAN_LLM_TIMEOUT is the longest the model may stay silent: an answer streamed over
    # about three times the timeout, a chunk every 0.3 s, is planned; a model silent for longer
    # than the timeout before its first token is not (a slow local model: raise the timeout).
    env.setenv("TOOLPLAN_LLM_TIMEOUT", "1")
    server.script([Reply.structured(blog_plan()).with_(pieces=8, gap=0.3)])
    outcome = await create_plan(QUERY, planner(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 1

    env.setenv("TOOLPLAN_LLM_TIMEOUT", "0.5")
    server.script([Reply.structured(blog_plan()).with_(delay=1.5)] * 2)
    with pytest.raises(LLMUnavailable, match=r"timed out.*TOOLPLAN_LLM_TIMEOUT"):
        await create_plan(QUERY, planner(tmp_path, "silent"))


async def test_the_llm_timeout_is_the_one_bound_on_silence_inside_a_stream(
    server: FakeOpenAIServer, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # langchain-openai 1.x ends an async stream silent for 120 s itself (its
    # stream_chunk_timeout): the real model, reading a repair prompt on a busy CPU, was cut off
    # under TOOLPLAN_LLM_TIMEOUT=600. Its default, shrunk here to 0.2 s, must not apply.
    env.setenv("LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S", "0.2")
    env.setenv("TOOLPLAN_LLM_TIMEOUT", "5")
    server.script([Reply.structured(blog_plan()).with_(pieces=3, gap=0.6)])
    outcome = await create_plan(QUERY, planner(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 1

    env.setenv("TOOLPLAN_LLM_TIMEOUT", "0.3")  # silent inside the stream for longer: ours
    server.script([Reply.structured(blog_plan()).with_(pieces=3, gap=1.0)] * 2)
    with pytest.raises(LLMUnavailable, match=r"timed out.*TOOLPLAN_LLM_TIMEOUT"):
        await create_plan(QUERY, planner(tmp_path, "silent"))
