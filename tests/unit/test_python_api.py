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
