"""Regressions a mutation spot-check found the suite could not see (issue 42), the pure ones.

Each test here pins one behaviour that a small, realistic bug planted in the code passed every
other test of its module with. The bug each one stands guard against is named in its docstring;
``bench/mutation.py`` plants it (and others like it) to check the guard still fails. The cases
that need a store, a restart or a cancel are in tests/e2e/test_regressions_issue42.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolplan.config.policies import ExecutionOptions
from toolplan.engine.foreach import ForEachRunner
from toolplan.engine.items import unfinished_items
from toolplan.engine.scheduler import Slots, StepOutcome, schedule
from toolplan.plan_format.plan import Plan, Step, parse_plan
from toolplan.store.protocol import ItemRecord
from toolplan.tools import ToolCatalog

# -- a gate after a restart -------------------------------------------------------------------


async def test_a_dependency_still_waiting_after_a_restart_holds_its_dependents() -> None:
    """The schedule restarts (a person decided on one step while the rest ran) with a step that
    still waits for approval among the finished outcomes. Its ``dependsOn``-only dependent has no
    template to fail on, so only the scheduler holds it: it must neither run nor be skipped.

    Planted bug: a ``waiting`` outcome counted as done when the dependencies left are counted."""
    ran: list[str] = []
    skipped: list[str] = []

    async def run(step: str) -> StepOutcome:
        ran.append(step)
        return StepOutcome("succeeded", output=step)

    async def skip(step: str, message: str, reason: object = None) -> None:
        skipped.append(step)

    outcomes = await asyncio.wait_for(
        schedule(
            ["pay", "receipt", "other"],
            {"pay": [], "receipt": ["pay"], "other": []},
            run,
            skip,
            concurrency=2,
            finished={"pay": StepOutcome("waiting")},
        ),
        timeout=30,
    )
    assert ran == ["other"]
    assert skipped == []
    assert "receipt" not in outcomes
    assert outcomes["pay"].status == "waiting"


# -- items on resume --------------------------------------------------------------------------


def test_items_that_failed_for_good_are_not_run_again_on_resume() -> None:
    """Planted bug: every item that did not succeed is run again (a failed item's tool, and its
    side effect, called a second time)."""
    prior = [
        ItemRecord(0, "succeeded", 1, output="a"),
        ItemRecord(1, "failed", 3, error="gave up"),
        ItemRecord(2, "running", 1),
        ItemRecord(3),
    ]
    records, todo = unfinished_items(4, prior)
    assert todo == [2, 3]
    assert records[1].status == "failed" and records[1].error == "gave up"


# -- an item cancelled while its success is recorded ------------------------------------------


class _SlowRecorder:
    """Records item transitions; an item's final record waits for ``release`` (the store is
    slow), so the test can cancel the run right while it is being written."""

    def __init__(self) -> None:
        self.writing = asyncio.Event()
        self.release = asyncio.Event()
        self.stored: list[ItemRecord] = []

    async def item_started(self, step_id: str, tool: str, index: int, attempt: int) -> None:
        return None

    def retrying(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def item_finished(
        self, step_id: str, tool: str, record: ItemRecord, *, duration_ms: float
    ) -> ItemRecord:
        self.writing.set()
        await self.release.wait()
        self.stored.append(record)
        return record


async def test_an_item_cancelled_while_its_success_is_recorded_is_kept() -> None:
    """The item's tool has returned (its side effect happened) and its success is being
    written when the run is cancelled (Ctrl-C, a cancel request, --fail-fast). The record must
    still be written and returned: a lost success makes a resume call the tool again.

    Planted bug: the item's final write is not shielded from the cancellation."""
    from langchain_core.tools import tool

    from toolplan.engine.attempts import Caller

    @tool
    async def echo(value: Any) -> dict[str, Any]:
        """Echo the value."""
        return {"echo": value}

    step = Step(id="each", tool="echo", parameters={"value": "{{$item}}"}, for_each=["x"])
    recorder = _SlowRecorder()
    runner = ForEachRunner(
        Caller(
            Plan(steps=[step]),
            ToolCatalog([echo]),
            recorder,  # type: ignore[arg-type]
            ExecutionOptions(),
            request_id="req_x",
            plan_id="plan_x",
            store=None,  # type: ignore[arg-type]
            inputs=None,  # type: ignore[arg-type]
            slots=Slots(1),
        )
    )
    task = asyncio.ensure_future(runner.run_item(step, 0, "x", {}, 0))
    await asyncio.wait_for(recorder.writing.wait(), timeout=30)
    task.cancel()
    await asyncio.sleep(0)  # let the cancellation reach the item before the write completes
    recorder.release.set()
    record = await asyncio.wait_for(task, timeout=30)
    assert (record.index, record.status, record.output) == (0, "succeeded", {"echo": "x"})
    assert [r.status for r in recorder.stored] == ["succeeded"]


# -- analysis: an object output that allows more keys than it declares ------------------------


def _catalog(*, other_keys: bool) -> ToolCatalog:
    """``profile`` declares the key ``name``; with ``other_keys``, it allows any other too."""
    from langchain_core.tools import tool

    from toolplan.tools import tagged

    @tool
    def profile(user: str) -> dict[str, Any]:
        """A user's profile: its declared keys, and any others the service adds."""
        return {"name": user}

    @tool
    def show(value: Any) -> Any:
        """Return ``value``."""
        return value

    returns: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
    if other_keys:
        returns["additionalProperties"] = True
    tagged(profile, returns=returns)
    catalog = ToolCatalog()
    catalog.add([profile, show])
    return catalog


def _reading(key: str) -> Any:
    return parse_plan(
        {
            "steps": [
                {"id": "p", "tool": "profile", "parameters": {"user": "ada"}},
                {"id": "s", "tool": "show", "parameters": {"value": f"{{{{p.{key}}}}}"}},
            ]
        }
    )


def test_an_object_output_that_allows_other_keys_is_not_treated_as_closed() -> None:
    """``additionalProperties: true`` next to declared ``properties``: a key not declared may be
    there, so a template reading it is not a definite mismatch.

    Planted bug: any object with declared keys treated as closed (the plan refused)."""
    from toolplan.validation.types import check_template_types

    assert check_template_types(_reading("email"), _catalog(other_keys=True)) == []


def test_an_object_output_without_other_keys_is_still_checked() -> None:
    """The counterpart: a closed object still reports a key it does not declare, with the
    close one (so the test above cannot pass by checking nothing)."""
    from toolplan.validation.types import check_template_types

    [issue] = check_template_types(_reading("nam"), _catalog(other_keys=False))
    assert "'nam'" in issue.message and "{{p.name}}" in issue.message


# -- found by bench/mutation.py ---------------------------------------------------------------


async def test_a_step_skipped_earlier_traces_its_cause_back_to_a_denial() -> None:
    """An earlier run skipped ``receipt`` because ``pay`` was denied, and stopped before
    ``notify`` (stored skips carry no cause). The resumed schedule skips ``notify`` naming the
    denial at the root, not ``receipt`` as a failure.

    Planted bug: a denial is not among the outcomes that stop dependents (``_STOPPED``)."""
    skipped: dict[str, str] = {}

    async def run(step: str) -> StepOutcome:
        raise AssertionError(f"{step} must not run")

    async def skip(step: str, message: str, reason: object = None) -> None:
        skipped[step] = message

    await asyncio.wait_for(
        schedule(
            ["pay", "receipt", "notify"],
            {"pay": [], "receipt": ["pay"], "notify": ["receipt"]},
            run,
            skip,
            concurrency=1,
            finished={
                "pay": StepOutcome("denied", error="denied by bob: wrong account"),
                "receipt": StepOutcome("skipped", error="skipped because 'pay' was denied"),
            },
        ),
        timeout=30,
    )
    assert skipped == {"notify": "skipped because dependency 'pay' was denied"}


def test_item_records_of_a_list_of_another_length_are_not_reused() -> None:
    """The list a ``forEach`` step maps over resolved to another length than the records an
    earlier run left: every item starts over, pending.

    Planted bug: the earlier records are kept whatever the list's length."""
    prior = [ItemRecord(0, "succeeded", 1, output="a"), ItemRecord(1, "failed", 1, error="x")]
    records, todo = unfinished_items(3, prior)
    assert records == [ItemRecord(0), ItemRecord(1), ItemRecord(2)]
    assert todo == [0, 1, 2]


@pytest.mark.parametrize("status", ["cancelled", "pending", "running"])
def test_a_map_with_an_item_that_did_not_finish_has_not_succeeded(status: str) -> None:
    """Every item must have succeeded for the map to succeed: one cancelled, pending or still
    running fails it, named by its index.

    Planted bug: only items recorded ``failed`` count against the map."""
    from toolplan.engine.items import map_result

    result = map_result([ItemRecord(0, "succeeded", 1, output=1), ItemRecord(1, status, 1)])  # type: ignore[arg-type]
    assert result.status == "failed"
    assert result.output == [1, None]
    assert result.error is not None and result.error.startswith("item 1 of 2 failed")


class _Leases:
    """A store's lease calls: every renewal granted; ``renewed`` is set after the second."""

    def __init__(self) -> None:
        self.renewals = 0
        self.renewed = asyncio.Event()

    def renew_lease(self, plan_id: str, worker_id: str, lease_seconds: float) -> bool:
        self.renewals += 1
        if self.renewals == 2:
            self.renewed.set()
        return True


async def test_a_lease_is_renewed_well_before_it_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    """The holder renews its 30 s lease at most every 15 s (every third of it, by design), so
    a live run is never taken over by another worker between two renewals. Logical time: the
    heartbeat's sleeps are recorded and return at once.

    Planted bug: the lease is renewed only as it expires."""
    from toolplan.runs import lease

    asked: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, result: object = None) -> object:
        asked.append(delay)
        await real_sleep(0)
        return result

    monkeypatch.setattr(lease.asyncio, "sleep", sleep)
    store = _Leases()
    await asyncio.wait_for(
        lease.while_holding(store, "plan_x", "w1", 30.0, store.renewed.wait()),  # type: ignore[arg-type]
        timeout=30,
    )
    assert store.renewals >= 2
    assert asked and max(asked) <= 15.0
