"""LLM client errors of any provider become one-line LLMUnavailable reasons (exit code 3).

The translation reads what an error carries (a status code on itself or on its ``response``, a
timeout or connection failure in its class hierarchy), so providers other than OpenAI are
covered without importing their SDKs: these errors are httpx's own and anthropic-shaped ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_models import ToolCallingFake
from toolplan.errors import LLMUnavailable
from toolplan.pipeline.planning import create_plan
from toolplan.planning.graph import PlannerContext
from toolplan.planning.llm_errors import llm_errors, schema_rejected, status_code
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules


class APIStatusError(Exception):
    """Shaped like anthropic's (and other SDKs') status errors: ``status_code`` and a ``body``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Error code: {status}")
        self.status_code = status
        self.body = {"type": "error", "error": {"type": "api_error", "message": message}}


def translated(error: Exception, spec: str = "anthropic:claude-x") -> str:
    with pytest.raises(LLMUnavailable) as caught, llm_errors(spec, endpoint="https://llm.test"):
        raise error
    assert caught.value.exit_code == 3
    return caught.value.message


def test_status_errors_of_another_sdk_are_translated_by_their_code() -> None:
    assert translated(APIStatusError(401, "invalid x-api-key")) == (
        "model 'anthropic:claude-x': the endpoint https://llm.test rejected the credentials "
        "(401); check the API key of provider 'anthropic'"
    )
    assert "rate limited by https://llm.test (429)" in translated(APIStatusError(429, "slow"))
    assert translated(APIStatusError(529, "Overloaded\n  try later")) == (
        "model 'anthropic:claude-x': the endpoint https://llm.test answered 529: Overloaded try "
        "later"
    )


def test_httpx_errors_are_translated() -> None:
    request = httpx.Request("POST", "https://llm.test/v1/chat")
    response = httpx.Response(503, request=request)
    failed = httpx.HTTPStatusError("Server error '503'", request=request, response=response)
    assert status_code(failed) == 503
    assert "answered 503: Server error '503'" in translated(failed)
    timed_out = translated(httpx.ReadTimeout("slow", request=request))
    assert "the endpoint https://llm.test timed out" in timed_out
    assert "TOOLPLAN_LLM_TIMEOUT" in timed_out  # says which knob to turn
    assert "cannot reach the endpoint https://llm.test (refused)" in translated(
        httpx.ConnectError("refused", request=request)
    )
    assert "cannot reach" in translated(ConnectionRefusedError("refused"))


def test_other_errors_are_bugs_and_propagate_unchanged() -> None:
    with pytest.raises(KeyError), llm_errors("anthropic:claude-x"):
        raise KeyError("content")


def test_a_schema_rejection_is_recognised_whatever_the_sdk() -> None:
    assert schema_rejected(APIStatusError(400, "tools.0.input_schema: unsupported anyOf"))
    assert not schema_rejected(APIStatusError(400, "prompt is too long"))
    assert not schema_rejected(APIStatusError(401, "bad schema key"))
    assert not schema_rejected(ValueError("schema"))


class _Failing(ToolCallingFake):
    error: Any = None

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


async def test_the_planner_exits_3_on_a_non_openai_client_error(tmp_path: Path) -> None:
    model = _Failing(messages=iter([]), error=APIStatusError(403, "this key may not use it"))
    ctx = PlannerContext(
        store=SqliteStore(tmp_path / "t.db"),
        catalog=load_tool_modules(["blog"]),
        model=model,
        model_name="anthropic:claude-x",
        endpoint="https://llm.test",
    )
    with pytest.raises(LLMUnavailable) as caught:
        await create_plan("draft Ideas", ctx)
    assert caught.value.message == (
        "model 'anthropic:claude-x': the endpoint https://llm.test denied access (403)"
    )
