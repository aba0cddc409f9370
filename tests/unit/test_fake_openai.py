"""The two properties of the fake OpenAI server (tests/support/fake_openai.py) that make tests of
toolplan able to fail. Everything else it does (reply shapes, streaming, usage, errors) is proven
by the planner, agent and API tests that use it: a wrong reply fails them."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from langchain_openai import ChatOpenAI

from tests.support.fake_openai import FakeOpenAIServer, Reply


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as server:
        yield server


def test_a_wrong_api_key_is_refused_before_a_reply_is_used(srv: FakeOpenAIServer) -> None:
    """Every test on the ``llm`` fixture passes only if toolplan sends the ``OPENAI_API_KEY`` it
    was given: a fake that answered any key would let a CLI that drops or mangles it pass."""
    srv.script([Reply.content("never sent")])
    llm = ChatOpenAI(base_url=srv.base_url, api_key="sk-wrong", model="gpt-4o-mini")
    with pytest.raises(openai.AuthenticationError):
        llm.invoke("hi")  # 401 is not retried, even with default max_retries
    assert srv.remaining == 1  # rejected before consuming the script
    assert srv.request_headers[0]["authorization"] == "Bearer sk-wrong"


def test_an_unscripted_request_fails_at_once_and_is_recorded(srv: FakeOpenAIServer) -> None:
    """Tests count model calls by the requests the fake records and by scripts that run dry:
    plan reuse proves "no model call" with ``len(llm.requests)``, the agent tests the number of
    calls. A fake that answered an unscripted request, or missed one in ``requests``, would let
    an extra or unwanted model call pass unseen."""
    llm = ChatOpenAI(base_url=srv.base_url, api_key="sk-test", model="gpt-4o-mini", max_retries=2)
    with pytest.raises(openai.InternalServerError, match="no scripted reply left"):
        llm.invoke("hi")
    assert len(srv.requests) == 1  # recorded, and x-should-retry: false stopped client retries
