"""The public Python API honours the same settings as the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolplan


def weather_plan(steps: int) -> dict[str, Any]:
    return {
        "steps": [
            {"id": f"w{i}", "tool": "get_weather", "parameters": {"location": f"city {i}"}}
            for i in range(steps)
        ]
    }


async def test_toolplan_max_steps_applies_to_validate_and_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path / 'tp.db'}"
    monkeypatch.setenv("TOOLPLAN_MAX_STEPS", "2")
    with pytest.raises(toolplan.PlanInvalid, match="more than the limit of 2"):
        toolplan.validate_plan(weather_plan(3), tools=["weather"])
    with pytest.raises(toolplan.PlanInvalid, match="more than the limit of 2"):
        await toolplan.submit_plan(weather_plan(3), tools=["weather"], store=store)

    monkeypatch.setenv("TOOLPLAN_MAX_STEPS", "60")
    assert len(toolplan.validate_plan(weather_plan(55), tools=["weather"]).order) == 55
    ref = await toolplan.submit_plan(weather_plan(55), tools=["weather"], store=store)
    assert ref.status == "planned"

    # an explicit argument still wins over the setting
    with pytest.raises(toolplan.PlanInvalid, match="more than the limit of 5"):
        toolplan.validate_plan(weather_plan(6), tools=["weather"], max_steps=5)


async def test_module_functions_honour_the_planner_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # create_plan and answer_query used to pass max_repairs=2 and confidence_threshold=0.5,
    # which overrode TOOLPLAN_MAX_REPAIRS and TOOLPLAN_CONFIDENCE_THRESHOLD.
    from tests.support.plans import QUERY, blog_plan, broken_blog_plan

    def answering(plan: dict[str, Any]) -> toolplan.FunctionModel:
        return toolplan.FunctionModel(lambda messages, request: plan)

    store = f"sqlite:///{tmp_path / 'tp.db'}"
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "json")
    monkeypatch.setenv("TOOLPLAN_MAX_REPAIRS", "0")
    for call in (toolplan.create_plan, toolplan.answer_query):
        with pytest.raises(toolplan.PlanningFailed) as failed:
            await call(QUERY, tools=["blog"], model=answering(broken_blog_plan()), store=store)
        assert failed.value.llm_calls == 1, call.__name__  # no repair round

    monkeypatch.setenv("TOOLPLAN_CONFIDENCE_THRESHOLD", "0.95")
    model = answering(blog_plan(confidence=0.9))
    outcome = await toolplan.create_plan(QUERY, tools=["blog"], model=model, store=store)
    assert outcome.status == "needs_review"  # 0.9 is below the configured 0.95

    # an explicit argument still wins over the setting
    outcome = await toolplan.create_plan(
        QUERY, tools=["blog"], model=model, store=store, confidence_threshold=0.5
    )
    assert outcome.status == "planned"
