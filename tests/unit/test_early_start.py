"""Which statements of a streamed Python plan may start before the plan is complete
(:meth:`toolplan.pipeline.early_start.EarlyStarts.why_not`): only a plain, valid call of a
read-only tool that waits for no approval, whose templates name steps started early."""

from __future__ import annotations

from typing import Any, cast

import pytest
from langchain_core.tools import tool

from toolplan.pipeline.early_start import EarlyStarts
from toolplan.store.protocol import Store
from toolplan.tools import ToolCatalog, tagged


@tool
def read(key: str) -> dict[str, Any]:
    """Read ``key``."""
    return {"key": key}


@tool
def write(key: str) -> dict[str, Any]:
    """Write ``key`` (a side effect)."""
    return {"key": key}


@tool
def read_gated(key: str) -> dict[str, Any]:
    """A read-only tool that still waits for a person."""
    return {"key": key}


tagged(read, "read-only")
tagged(read_gated, "read-only", "approval")


@pytest.fixture
def early() -> EarlyStarts:
    return EarlyStarts(cast(Store, None), ToolCatalog([read, write, read_gated]), "q")


def step(step_id: str, tool: str, **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "tool": tool, "parameters": {"key": "x"}, **extra}


def test_a_plain_valid_read_only_call_may_start(early: EarlyStarts) -> None:
    assert early.why_not(step("a", "read")) is None


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        (step("a", "write"), "not read-only"),
        (step("a", "read_gated"), "waits for approval"),
        (step("a", "read", approval=True), "waits for approval"),
        (step("a", "nope"), "unknown tool"),
        (step("a", "read", forEach=["x", "y"]), "not a plain call"),
        (step("a", "read", when="{{b.ok}}"), "not a plain call"),
        (
            step("a", "read", fallback={"tool": "write", "parameters": {}}),
            "not a plain call",
        ),
    ],
)
def test_side_effects_gates_and_control_flow_never_start_early(
    early: EarlyStarts, written: dict[str, Any], reason: str
) -> None:
    assert early.why_not(written) == reason


def test_arguments_must_fit_the_schema(early: EarlyStarts) -> None:
    wrong = {"id": "a", "tool": "read", "parameters": {"kee": "x"}}
    assert "missing required argument 'key'" in str(early.why_not(wrong))
    typed = {"id": "a", "tool": "read", "parameters": {"key": 5}}
    assert "is invalid" in str(early.why_not(typed))


def test_templates_may_name_only_steps_started_early(early: EarlyStarts) -> None:
    later = {"id": "b", "tool": "read", "parameters": {"key": "{{a.key}}"}}
    assert early.why_not(later) == "its input 'a' did not start early"


def test_a_step_ordered_after_another_waits_for_it(early: EarlyStarts) -> None:
    """``dependsOn`` is an order the plan asks for (a read after a write): a read-only step
    ordered after a step that did not start early does not start early either."""
    after = step("r", "read", dependsOn=["w"])
    assert early.why_not(after) == "its input 'w' did not start early"


def test_the_switch_is_read_from_the_environment_and_a_flag_wins() -> None:
    from toolplan.config import Settings
    from toolplan.errors import InvalidInput

    assert Settings.from_env({}).planner.stream_execution is False
    on = Settings.from_env({"TOOLPLAN_STREAM_EXECUTION": "1"})
    assert on.planner.stream_execution is True
    assert on.with_overrides(stream_execution=False).planner.stream_execution is False
    assert on.with_overrides().planner.stream_execution is True
    with pytest.raises(InvalidInput, match=r"^TOOLPLAN_STREAM_EXECUTION='junk' is not a "):
        Settings.from_env({"TOOLPLAN_STREAM_EXECUTION": "junk"})


def test_the_client_argument_wins_over_the_settings() -> None:
    from toolplan.client import Toolplan
    from toolplan.config import Settings

    on = Settings.from_env({"TOOLPLAN_STREAM_EXECUTION": "1"})
    assert Toolplan(settings=on, stream_execution=False).settings.planner.stream_execution is False
    assert Toolplan(stream_execution=True).settings.planner.stream_execution is True


def test_only_plans_run_in_this_process_start_early() -> None:
    """On Temporal (or any backend that runs steps elsewhere) the execution starts when the plan
    is complete: its activities cannot adopt a call made in the planning process."""
    from toolplan.pipeline.flow import runs_here
    from toolplan.runs.backend import InProcessBackend
    from toolplan.runs.context import ExecutionContext

    class Elsewhere:
        async def run(self, record: Any, ctx: Any) -> Any:  # pragma: no cover - never run
            raise AssertionError

    catalog = ToolCatalog([read])
    store = cast(Store, None)
    assert runs_here(ExecutionContext(store, catalog))
    assert runs_here(ExecutionContext(store, catalog, backend=InProcessBackend()))
    assert not runs_here(ExecutionContext(store, catalog, backend=cast(Any, Elsewhere())))


async def test_records_land_in_the_order_the_states_changed(tmp_path: Any) -> None:
    """A plan stored but not run (an identical replan) settles its adopted calls ``unused``.
    The call's ``succeeded`` record may still be on its way when that happens (a slow store, a
    busy machine: it once failed in CI so); the records still land in order, so the last one
    says ``unused``, and a call whose output is in is never called ``cancelled``."""
    import asyncio
    import threading

    from toolplan.pipeline.early_start import EARLY_COLLECTION
    from toolplan.plan_format.plan import parse_plan
    from toolplan.store.sqlite import SqliteStore

    release = threading.Event()

    class SlowSuccess(SqliteStore):
        def put_record(self, collection: str, record: dict[str, Any], **kw: Any) -> Any:
            if record.get("status") == "succeeded":
                release.wait(10)  # the success is written only once the plan was settled
            return super().put_record(collection, record, **kw)

    store = SlowSuccess(tmp_path / "t.db")
    early = EarlyStarts(store, ToolCatalog([read]), "q")
    assert early.offer(step("a", "read"))
    while early._calls[0].status == "running":  # the call returned; its record waits
        await asyncio.sleep(0.01)
    early.settle(parse_plan({"steps": [step("a", "read")]}))
    closing = asyncio.create_task(early.close(ran=False))
    await asyncio.sleep(0.05)
    release.set()
    await closing
    statuses = [r["status"] for r in store.find_records(EARLY_COLLECTION, {})]
    assert statuses == ["running", "succeeded", "adopted", "unused"]
    store.close()


async def test_an_early_call_is_unused_when_the_final_step_makes_another_call(
    tmp_path: Any,
) -> None:
    """The final plan keeps the step but reads another key, with nothing ordered before it:
    the early output is not the step's, so it is unused and saves nothing (a planted bug that
    adopted it passed the suite: the e2e case has a write before the read, which rules it out
    on its own)."""
    import asyncio

    from toolplan.plan_format.plan import parse_plan
    from toolplan.store.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "t.db")
    early = EarlyStarts(store, ToolCatalog([read]), "q")
    assert early.offer(step("a", "read"))  # key "x"
    while early._calls[0].status == "running":
        await asyncio.sleep(0.01)
    other = {"id": "a", "tool": "read", "parameters": {"key": "y"}}
    (settled,) = early.settle(parse_plan({"steps": [other]}))
    assert (settled["status"], settled["savedMs"]) == ("unused", 0.0)
    same = EarlyStarts(store, ToolCatalog([read]), "q")
    assert same.offer(step("a", "read"))
    while same._calls[0].status == "running":
        await asyncio.sleep(0.01)
    (kept,) = same.settle(parse_plan({"steps": [step("a", "read")]}))
    assert kept["status"] == "adopted"  # the same call: the test can tell the two apart
    await early.close(ran=False)
    await same.close(ran=True)
    store.close()
