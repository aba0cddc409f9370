"""Tests for the local fake OpenAI server used by the rest of the suite."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from tests.support.fake_openai import FakeOpenAIServer, Reply


class City(BaseModel):
    """A city and its country."""

    name: str = Field(description="City name")
    country: str


PARIS = {"name": "Paris", "country": "France"}


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as server:
        yield server


def make_llm(srv: FakeOpenAIServer, **kwargs: Any) -> ChatOpenAI:
    kwargs.setdefault("max_retries", 0)
    return ChatOpenAI(base_url=srv.base_url, api_key="sk-test", model="gpt-4o-mini", **kwargs)


# -- structured output -------------------------------------------------------


def test_function_calling_structured_output(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.structured(PARIS)])
    out = make_llm(srv).with_structured_output(City, method="function_calling").invoke("q")
    assert out == City(**PARIS)
    req = srv.requests[0]
    assert req["model"] == "gpt-4o-mini"
    assert "response_format" not in req and req["stream"] is False
    assert req["tool_choice"] == {"type": "function", "function": {"name": "City"}}
    (fn,) = [t["function"] for t in req["tools"]]
    assert fn["name"] == "City"
    assert fn["description"] == "A city and its country."
    assert set(fn["parameters"]["properties"]) == {"name", "country"}
    assert srv.remaining == 0


def test_function_calling_structured_output_streamed(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.structured(PARIS), Reply.structured(PARIS)])
    structured = make_llm(srv).with_structured_output(City, method="function_calling")
    chunks = list(structured.stream("q"))
    assert chunks[-1] == City(**PARIS)
    assert srv.requests[0]["stream"] is True

    streaming = make_llm(srv, streaming=True).with_structured_output(
        City, method="function_calling"
    )
    assert streaming.invoke("q") == City(**PARIS)
    assert srv.requests[1]["stream"] is True


# Streaming json_schema: langchain-openai model_dump()s the SDK's ParsedChatCompletion, whose
# `parsed` field is typed None -> harmless pydantic warning (langchain-ai/langchain#35538).
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_json_schema_structured_output(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.structured(PARIS), Reply.structured(PARIS)])
    structured = make_llm(srv).with_structured_output(City, method="json_schema")
    assert structured.invoke("q") == City(**PARIS)
    req = srv.requests[0]
    assert "tools" not in req
    rf = req["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["name"] == "City"
    assert rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"]["additionalProperties"] is False
    # streamed json_schema goes through client.beta.chat.completions.stream
    assert list(structured.stream("q"))[-1] == City(**PARIS)
    assert srv.requests[1]["stream"] is True


def test_json_mode_gets_json_content(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.structured(PARIS)])
    out = make_llm(srv).with_structured_output(City, method="json_mode").invoke("q (json)")
    assert out == City(**PARIS)
    assert srv.requests[0]["response_format"] == {"type": "json_object"}


# -- tool calls, content, usage ----------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case some text."""
    return text.upper()


def test_tool_call_and_tools_recorded(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.tool_call("add", {"a": 1, "b": 2}), Reply.tool_call("add", '{"a": 3}')])
    llm = make_llm(srv).bind_tools([add, shout])
    msg = llm.invoke("q")
    assert msg.tool_calls == [
        {"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1", "type": "tool_call"}
    ]
    assert msg.response_metadata["finish_reason"] == "tool_calls"
    fns = {t["function"]["name"]: t["function"] for t in srv.requests[0]["tools"]}
    assert fns["add"]["description"] == "Add two integers."
    assert set(fns["add"]["parameters"]["properties"]) == {"a", "b"}
    assert fns["shout"]["description"] == "Upper-case some text."

    chunks = list(llm.stream("q"))
    full = chunks[0]
    for c in chunks[1:]:
        full += c
    assert isinstance(full, AIMessageChunk)
    assert len(chunks) > 3  # arguments arrive in pieces
    assert full.tool_calls == [
        {"name": "add", "args": {"a": 3}, "id": "call_2", "type": "tool_call"}
    ]


def test_usage_metadata(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.content("hello there", usage=(7, 3))])
    msg = make_llm(srv).invoke("hi")
    assert msg.content == "hello there"
    assert msg.usage_metadata is not None
    assert msg.usage_metadata["input_tokens"] == 7
    assert msg.usage_metadata["output_tokens"] == 3
    assert msg.usage_metadata["total_tokens"] == 10
    assert msg.response_metadata["model_name"] == "gpt-4o-mini"


def test_streamed_usage_metadata(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.content("hello there, world", usage=(11, 4))])
    chunks = list(make_llm(srv, stream_usage=True).stream("hi"))
    full = chunks[0]
    for c in chunks[1:]:
        full += c
    assert full.content == "hello there, world"
    assert full.usage_metadata is not None
    assert full.usage_metadata["input_tokens"] == 11
    assert full.usage_metadata["output_tokens"] == 4
    assert srv.requests[0]["stream_options"] == {"include_usage": True}


async def test_async_invoke(srv: FakeOpenAIServer) -> None:
    srv.script([lambda req: Reply.content(f"model={req['model']}")])  # dynamic reply
    msg = await make_llm(srv).ainvoke("hi")
    assert msg.content == "model=gpt-4o-mini"


# -- errors, retries, auth ---------------------------------------------------


def test_429_then_success_is_retried_quickly(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.error(429, "Rate limit reached", retry_after=0.01), Reply.content("ok")])
    start = time.monotonic()
    msg = make_llm(srv, max_retries=2).invoke("hi")
    assert msg.content == "ok"
    assert time.monotonic() - start < 1.0
    assert len(srv.requests) == 2
    assert srv.request_headers[1]["x-stainless-retry-count"] == "1"


def test_429_without_retries_raises_rate_limit(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.error(429, "Rate limit reached")])
    with pytest.raises(openai.RateLimitError) as info:
        make_llm(srv).invoke("hi")
    assert info.value.code == "rate_limit_exceeded"


def test_wrong_api_key_raises_authentication_error(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.content("never sent")])
    llm = ChatOpenAI(base_url=srv.base_url, api_key="sk-wrong", model="gpt-4o-mini")
    with pytest.raises(openai.AuthenticationError):
        llm.invoke("hi")  # 401 is not retried, even with default max_retries
    assert srv.remaining == 1  # rejected before consuming the script
    assert srv.request_headers[0]["authorization"] == "Bearer sk-wrong"


def test_scripted_401_raises_authentication_error(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.error(401, "bad key")])
    with pytest.raises(openai.AuthenticationError, match="bad key"):
        make_llm(srv, max_retries=2).invoke("hi")


def test_empty_script_fails_fast_with_clear_message(srv: FakeOpenAIServer) -> None:
    with pytest.raises(openai.InternalServerError, match="no scripted reply left"):
        make_llm(srv, max_retries=2).invoke("hi")
    assert len(srv.requests) == 1  # x-should-retry: false stops client retries


# -- raw protocol --------------------------------------------------------------


def test_models_endpoint(srv: FakeOpenAIServer) -> None:
    client = openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
    assert [m.id for m in client.models.list()] == ["gpt-4o-mini"]


def test_raw_sse_format(srv: FakeOpenAIServer) -> None:
    srv.script([Reply.content("abcdef", usage=(2, 1))])
    body = {
        "model": "m",
        "messages": [],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    req = urllib.request.Request(
        srv.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer sk-test", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert resp.headers["Content-Type"] == "text/event-stream"
        lines = [ln for ln in resp.read().decode().splitlines() if ln]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(ln.removeprefix("data: ")) for ln in lines[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "m" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "abcdef"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}


def test_stop_releases_port() -> None:
    server = FakeOpenAIServer().start()
    url = server.base_url
    server.stop()
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/models", timeout=1)
