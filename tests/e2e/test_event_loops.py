"""A client used from more than one event loop in one process: scripts and notebooks call
``asyncio.run`` once per call. The model's HTTP connections belong to the loop that opened them:
a later loop opens its own instead of reusing a kept-alive connection of a closed loop
(langchain-openai's process-wide cached client did, and failed with ``Event loop is closed``).

Against the scripted OpenAI-compatible server, which keeps connections alive (HTTP/1.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAIServer, Reply
from toolplan.client import AsyncToolplan, Toolplan

pytestmark = [pytest.mark.e2e]

QUERY = "Create author Bob with email bob@test.com"
ANSWER = 'author = createAuthor(name="Bob", email="bob@test.com")\n'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "python")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    with FakeOpenAIServer(api_key="sk-test") as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        yield llm


def test_asyncio_run_twice_in_one_process(server: FakeOpenAIServer, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'tp.db'}"
    server.script([Reply.content(ANSWER)] * 3)

    async def twice() -> None:
        async with AsyncToolplan.from_env(tools=["blog"], store=store) as tp:
            await tp.plan(QUERY)
            await tp.plan(QUERY)

    asyncio.run(twice())
    assert server.connections == 1  # within one loop, the connection is kept alive and reused

    outcome = asyncio.run(AsyncToolplan.from_env(tools=["blog"], store=store).plan(QUERY))
    assert outcome.ref.status == "planned"
    assert server.connections == 2  # the new loop opened its own
    assert server.remaining == 0


def test_the_sync_client_plans_again_in_a_loop_of_its_own(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    # Each call of the sync client runs in an event loop of its own: one client, two loops.
    server.script([Reply.content(ANSWER)] * 2)
    with Toolplan.from_env(tools=["blog"], store=f"sqlite:///{tmp_path / 'tp.db'}") as tp:
        first, second = tp.plan(QUERY), tp.plan(QUERY)
    assert (first.status, second.status) == ("planned", "planned")
    assert first.plan_id != second.plan_id
    assert server.connections == 2 and server.remaining == 0
