"""Conditions, forEach lists and items at run time (pure pieces of toolplan.engine.items)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolplan.engine.items import condition_holds, item_list, map_result, run_items
from toolplan.engine.scheduler import Slots, StepOutcome, schedule
from toolplan.errors import TemplateError
from toolplan.plan_format.plan import Step
from toolplan.store.protocol import ItemRecord


def step(**fields: Any) -> Step:
    return Step.model_validate({"id": "s", "tool": "echo", "parameters": {}, **fields})


# Text is neither (tests/unit/test_conditions_fail_closed.py).
@pytest.mark.parametrize("value", [False, None, 0, 0.0, [], {}])
def test_json_falsy_values_skip(value: Any) -> None:
    holds, message = condition_holds(step(when="{{a.v}}"), {"a": {"v": value}})
    assert not holds and "condition '{{a.v}}' was false" in message
    assert condition_holds(step(when={"not": "{{a.v}}"}), {"a": {"v": value}})[0]


@pytest.mark.parametrize("value", [True, 1, -1, [0], {"a": None}])
def test_anything_else_is_truthy(value: Any) -> None:
    assert condition_holds(step(when="{{a.v}}"), {"a": {"v": value}})[0]
    holds, message = condition_holds(step(when={"not": "{{a.v}}"}), {"a": {"v": value}})
    assert not holds and "condition {\"not\": '{{a.v}}'} was false" in message


def test_a_condition_that_cannot_resolve_raises() -> None:
    with pytest.raises(TemplateError, match="missing key 'v'"):
        condition_holds(step(when="{{a.v}}"), {"a": {}})


def test_item_list_is_checked_before_any_call() -> None:
    assert item_list(step(forEach="{{a}}"), {"a": [1, 2]}, 5) == [1, 2]
    with pytest.raises(TemplateError, match="not a list; no item was run"):
        item_list(step(forEach="{{a}}"), {"a": {"x": 1}}, 5)
    with pytest.raises(TemplateError, match="has 3 items, more than the limit of 2"):
        item_list(step(forEach=[1, 2, 3]), {}, 2)


def test_map_result_lists_failed_indexes_and_keeps_outputs() -> None:
    result = map_result(
        [
            ItemRecord(1, "failed", 3, error="boom"),
            ItemRecord(0, "succeeded", 1, output="x"),
            ItemRecord(2, "succeeded", 2, output="y", used_fallback=True),
        ]
    )
    assert result.status == "failed" and result.output == ["x", None, "y"]
    assert result.error == "item 1 of 3 failed: [1] boom"
    assert result.attempts == 6 and result.used_fallback
    assert map_result([]).status == "succeeded" and map_result([]).output == []


async def test_an_item_counts_as_one_running_step() -> None:
    """Limit 3: a map of 6 items and two plain steps never run more than 3 things at once."""
    slots = Slots(3)
    running: set[str] = set()
    peak = 0
    release = asyncio.Event()

    async def work(name: str) -> None:
        nonlocal peak
        running.add(name)
        peak = max(peak, len(running))
        await release.wait()
        running.discard(name)

    async def run(step_id: str) -> StepOutcome:
        if step_id == "map":
            await run_items(slots, range(6), lambda i: work(f"map[{i}]"))
        else:
            await work(step_id)
        return StepOutcome("succeeded")

    async def skip(step_id: str, message: str, reason: Any) -> None:
        raise AssertionError(step_id)

    task = asyncio.create_task(
        schedule(
            ["map", "a", "b"],
            {"map": [], "a": [], "b": []},
            run,
            skip,
            concurrency=3,
            slots=slots,
        )
    )
    for _ in range(50):
        await asyncio.sleep(0)
    assert len(running) == 3
    release.set()
    outcomes = await asyncio.wait_for(task, 10)
    assert {o.status for o in outcomes.values()} == {"succeeded"}
    assert peak == 3 and not running
    assert slots.try_take() and slots.try_take() and slots.try_take() and not slots.try_take()
