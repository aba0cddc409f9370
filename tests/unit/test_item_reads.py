"""Reads that happen once per item do not read the items (issue 42): a backend that runs each
item elsewhere (Temporal: one activity per item) reads the step records for every item, and with
the items of a long map in each read, a map of N items read N items N times.

Checked by what is read, not by time: the store below counts the item records it returns.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from toolplan.engine.effects import earlier_effects
from toolplan.engine.inputs import StoreInputs
from toolplan.plan_format.meta import VERSION_KEY
from toolplan.plan_format.plan import Step
from toolplan.runs.events import watch_step_events
from toolplan.store.protocol import ExecutionRecord, ItemRecord
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules
from toolplan_conformance import new_plan, started_execution


class CountingStore(SqliteStore):
    """A SQLite store that counts the item records its executions are read with."""

    items_read = 0
    reads = 0

    def get_execution(self, plan_id: str, *, items: bool = True) -> ExecutionRecord | None:
        self.reads += 1
        execution = super().get_execution(plan_id, items=items)
        if execution is not None:
            self.items_read += sum(len(step.items or ()) for step in execution.steps)
        return execution


def _mapped(store: SqliteStore, count: int) -> str:
    plan_id = started_execution(store, steps=2).plan_id
    store.update_step(
        plan_id, "s0", {"status": "running", "items": [ItemRecord(i) for i in range(count)]}
    )
    store.update_step(plan_id, "s1", {"status": "succeeded", "attempts": 1, "output": {"value": 1}})
    return plan_id


async def test_store_inputs_read_outputs_without_items(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "toolplan.db")
    plan_id = _mapped(store, 500)
    inputs = StoreInputs(store, plan_id)
    step = Step.model_validate(
        {"id": "s2", "tool": "echo", "forEach": [1, 2], "parameters": {"value": "{{s1.value}}"}}
    )
    for _ in range(3):  # one read per item
        assert await inputs.outputs_for(step) == {"s1": {"value": 1}}
    assert store.items_read == 0
    store.close()


async def test_a_list_mapped_over_is_read_once_for_all_items(tmp_path: Path) -> None:
    """A backend that builds its inputs per item (a Temporal activity each) and shares the
    succeeded outputs between them reads the step records once, not once per item: the list a
    map runs over is decoded once."""
    store = CountingStore(tmp_path / "toolplan.db")
    plan_id = started_execution(store, steps=2).plan_id
    store.update_step(plan_id, "s0", {"status": "succeeded", "output": list(range(1000))})
    step = Step.model_validate(
        {"id": "s1", "tool": "echo", "forEach": "{{s0}}", "parameters": {"value": "{{$item}}"}}
    )
    shared: dict[str, Any] = {}
    store.reads = 0
    for _ in range(5):  # one StoreInputs per item, as each activity builds its own
        outputs = await StoreInputs(store, plan_id, succeeded=shared).outputs_for(step)
        assert outputs == {"s0": list(range(1000))}
    assert store.reads == 1
    store.close()


def test_earlier_effects_read_earlier_versions_without_items(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "toolplan.db")
    first = _mapped(store, 500)
    record = store.get_plan(first)
    assert record is not None
    second = replace(new_plan(record.request_id), meta={VERSION_KEY: 2})
    store.save_plan(second)
    store.items_read = 0
    catalog: Any = load_tool_modules(("blog",))
    for _ in range(3):
        earlier_effects(store, second, catalog)
    assert store.items_read == 0
    store.close()


async def test_following_a_run_from_another_process_polls_without_items(tmp_path: Path) -> None:
    """``stepEvents`` of a run elsewhere polls the step records all along the run: a poll reads
    the steps, not the items of a long map."""
    store = CountingStore(tmp_path / "toolplan.db")
    plan_id = _mapped(store, 500)
    store.items_read = 0
    events = watch_step_events(store, plan_id, poll_seconds=0)
    seen = [await anext(events) for _ in range(2)]  # s1 started, then succeeded
    store.set_execution_status(plan_id, "succeeded")
    seen.extend([event async for event in events])
    assert [(event.kind, event.step_id) for event in seen] == [
        ("started", "s1"),
        ("succeeded", "s1"),
    ]
    assert store.items_read == 0
    store.close()
