"""What small models answer under strict structured output, through the real ChatOpenAI client
and the local OpenAI-compatible server (issue 28): nulls and fillers for optional arguments at
every depth, step ids, answers cut off at the output limit, and what a failure costs.

No network: ``tests.support.fake_openai`` answers with scripted plans and records every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.fake_openai import FakeOpenAIServer, Reply
from toolplan.config import Settings
from toolplan.planning.context import PlannerContext
from toolplan.planning.planner import create_plan
from toolplan.planning.setup import planner_context_from_env
from toolplan.tools.catalog import ToolCatalog


class Address(BaseModel):
    city: str
    zip: str | None = None
    country: str = "DE"


def ship(to: Address, express: bool = False, note: str = "") -> dict[str, Any]:
    """Ship a parcel to an address."""
    return {"to": to.city}


SHIP = ToolCatalog([ship])


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-test") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
        monkeypatch.setenv("TOOLPLAN_STRUCTURED_METHOD", "json_schema")
        monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
        yield server


def make_context(tmp_path: Path, **kwargs: Any) -> PlannerContext:
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    return planner_context_from_env(settings=settings, **kwargs)


def plan(*steps: dict[str, Any], outputs: list[str] | None = None) -> dict[str, Any]:
    return {
        "reasoning": "as asked",
        "steps": list(steps),
        "outputSteps": outputs or [steps[-1]["id"]],
    }


def step(sid: str, tool: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": [], "confidence": 0.9}


def step_schema(request: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = request["response_format"]["json_schema"]["schema"]
    return schema


# -- nulls and fillers --------------------------------------------------------------------------


async def test_strict_nested_nulls_and_fillers_plan_in_one_call(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    # what strict json_schema makes a model write for "ship to Berlin": every optional property
    # at every depth, as null or a filler
    written = {
        "to": {"city": "Berlin", "zip": None, "country": None},
        "express": "null",
        "note": "",
    }
    llm.script([Reply.structured(plan(step("send", "ship", written)))])
    outcome = await create_plan("ship it to Berlin", make_context(tmp_path, catalog=SHIP))
    assert outcome.llm_calls == 1 and len(llm.requests) == 1  # no repair round
    assert outcome.plan["steps"][0]["parameters"] == {"to": {"city": "Berlin", "zip": None}}
    json_schema = llm.requests[0]["response_format"]["json_schema"]
    assert json_schema["strict"] is True
    (branch,) = step_schema(llm.requests[0])["properties"]["steps"]["items"]["anyOf"]
    address = branch["properties"]["parameters"]["properties"]["to"]["anyOf"][0]
    assert address["required"] == ["city", "zip", "country"]  # the nested nulls' cause
