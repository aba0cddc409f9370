"""Regressions a mutation spot-check found the suite could not see (issue 42), through a store.

Each test pins one behaviour that a small, realistic bug planted in the engine passed every
other test of its module with; the bug is named in its docstring, and ``bench/mutation.py``
plants it (and others like it) to check the guard still fails. Every case runs on SQLite and
MongoDB: the step records the engine writes (or fails to write) are the subject. The pure cases
are in tests/unit/test_regressions_issue42.py.

The last three check that an *unexpected* exception inside a step, an item or a fallback (a bug,
not a tool's failure) still ends the step with a recorded error: before issue 42 it became an
internal outcome the scheduler never wrote to the store, and the step stayed ``pending`` or
``running``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import ServerFactory, server_factory
from tests.e2e.conftest import ON_BOTH_STORES, Cli
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.recorder import StepEvent
from toolplan.errors import NotWaiting
from toolplan.runs.approvals import approve_steps, deny_step
from toolplan.runs.cancel import request_cancel
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store import open_store
from toolplan.store.protocol import ItemRecord, Store
from toolplan.tools import ToolCatalog, load_tool_modules

pytestmark = [pytest.mark.e2e]

FAST = ExecutionOptions(
    retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=30, cancel_poll=0.05
)

HUNG = 120.0
"""Seconds after which a run that has not reached the awaited event counts as hung (a guard
against deadlocks, never a timing assertion)."""


@pytest.fixture(params=["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An empty store: SQLite, or a fresh MongoDB database."""
    if request.param == "sqlite":
        uri = f"sqlite:///{tmp_path / 'toolplan.db'}"
    else:
        uri = request.getfixturevalue("mongodb_uri")
    opened = open_store(uri)
    yield opened
    opened.close()


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file whose creation lets the ``held`` test tool return."""
    path = tmp_path / "gate.open"
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(path))
    return path


def calls(log: Path, step: str | None = None) -> list[dict[str, Any]]:
    lines = log.read_text().splitlines() if log.exists() else []
    found = [json.loads(line) for line in lines]
    return [c for c in found if step is None or c["step"] == step]


def catalog() -> ToolCatalog:
    return load_tool_modules(["tests.support.tools"])


def submit(store: Store, plan: dict[str, Any]) -> str:
    return submit_plan(plan, store=store, catalog=catalog(), max_steps=50).plan_id


async def execute(
    store: Store,
    plan_id: str,
    *,
    listener: Any = None,
    resume: bool = False,
    options: ExecutionOptions = FAST,
) -> Any:
    ctx = ExecutionContext(store=store, catalog=catalog(), options=options, listener=listener)
    return await asyncio.wait_for(execute_stored_plan(plan_id, ctx, resume=resume), timeout=HUNG)


def stored(store: Store, plan_id: str) -> dict[str, Any]:
    """The step records as the store holds them: ``{step id: (status, error)}``."""
    execution = store.get_execution(plan_id)
    assert execution is not None
    return {step.step_id: (step.status, step.error) for step in execution.steps}


class Events:
    """Step events of a run, each kind awaitable: ``await events.seen("waiting", "pay")``."""

    def __init__(self) -> None:
        self.log: list[StepEvent] = []
        self._flags: dict[tuple[str, str], asyncio.Event] = {}

    def _flag(self, kind: str, step: str) -> asyncio.Event:
        return self._flags.setdefault((kind, step), asyncio.Event())

    def __call__(self, event: StepEvent) -> None:
        self.log.append(event)
        self._flag(event.kind, event.step_id).set()

    async def seen(self, kind: str, step: str) -> None:
        await asyncio.wait_for(self._flag(kind, step).wait(), timeout=HUNG)


# -- a gate after a restart -------------------------------------------------------------------

RESTART_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "pay", "tool": "wire_money", "parameters": {"to": "NO12", "amount": 50}},
        {"id": "refund", "tool": "wire_money", "parameters": {"to": "SE34", "amount": 5}},
        {"id": "after", "tool": "echo", "parameters": {"value": "paid"}, "dependsOn": ["pay"]},
        {"id": "slow", "tool": "held", "parameters": {"label": "slow"}},
    ]
}
"""``pay`` and ``refund`` wait for approval while ``slow`` holds the run open; ``after`` waits
for ``pay`` by ``dependsOn`` only (no template of it would fail to resolve)."""


async def test_a_dependsOn_only_dependent_waits_for_its_approval_when_the_schedule_restarts(
    store: Store, log: Path, gate: Path
) -> None:
    """``refund`` is approved while ``slow`` still runs, so the schedule restarts once
    ``slow`` ends; ``pay`` still waits. ``after`` must not run before ``pay`` is approved.

    Planted bug: on the restart, a dependency still waiting counts as done."""
    plan_id = submit(store, RESTART_PLAN)
    events = Events()
    run = asyncio.ensure_future(execute(store, plan_id, listener=events))
    await events.seen("waiting", "pay")
    await events.seen("waiting", "refund")
    await events.seen("started", "slow")
    await asyncio.to_thread(approve_steps, store, plan_id, ["refund"], by="ada")
    gate.touch()
    result = await run
    assert result.status == "waiting"
    steps = stored(store, plan_id)
    assert steps["refund"][0] == "succeeded"  # run on the restart
    assert steps["pay"][0] == "waiting_approval"
    assert steps["after"][0] == "pending"
    assert calls(log, "after") == [] and len(calls(log, "refund")) == 1


# -- errors that are recorded ------------------------------------------------------------------


async def test_a_fallback_whose_template_cannot_resolve_fails_the_step_on_record(
    store: Store, log: Path
) -> None:
    """The tool fails for good, and its fallback's parameters name a key the dependency's
    output lacks: the step ends ``failed`` in the store, saying both failures.

    Planted bug: a fallback's template error escapes as an unexpected exception (the step
    stays ``running``)."""
    plan_id = submit(
        store,
        {
            "steps": [
                {"id": "account", "tool": "echo", "parameters": {"value": {"iban": "NO12"}}},
                {
                    "id": "charge",
                    "tool": "business_error",
                    "parameters": {"message": "card declined"},
                    "dependsOn": ["account"],
                    "fallback": {"tool": "echo", "parameters": {"value": "{{account.bic}}"}},
                },
            ]
        },
    )
    result = await execute(store, plan_id)
    status, error = stored(store, plan_id)["charge"]
    assert status == "failed"
    assert error is not None and "card declined" in error
    assert "fallback 'echo' failed too" in error and "'bic'" in error
    assert result.status == "partial"


@pytest.mark.parametrize("mapped", [False, True], ids=["step", "forEach item"])
async def test_an_index_one_past_the_end_fails_the_step_on_record(
    store: Store, log: Path, mapped: bool
) -> None:
    """``{{numbers[3]}}`` on a list of three: the step (or the item) ends ``failed`` in the
    store, naming the index, never left ``pending`` without an error.

    Planted bug: the bounds check is off by one (Python's ``IndexError`` escapes)."""
    reader: dict[str, Any] = {
        "id": "fourth",
        "tool": "echo",
        "parameters": {"value": "{{numbers[3]}}"},
    }
    if mapped:
        reader["forEach"] = ["x"]
    plan_id = submit(
        store,
        {
            "steps": [
                {"id": "numbers", "tool": "echo", "parameters": {"value": [1, 2, 3]}},
                reader,
            ]
        },
    )
    result = await execute(store, plan_id)
    status, error = stored(store, plan_id)["fourth"]
    assert status == "failed"
    assert error is not None and "index [3] is out of range" in error
    assert result.status == "partial" and calls(log, "fourth") == []


# -- items on resume ---------------------------------------------------------------------------


async def test_a_resume_does_not_run_items_that_failed_for_good(store: Store, log: Path) -> None:
    """An earlier run left item 0 failed (its attempts used up), item 1 succeeded and item 2
    not run. The resume calls the tool for item 2 only; the step then fails for item 0.

    Planted bug: a resume runs every item that did not succeed."""
    plan_id = submit(
        store,
        {
            "steps": [
                {
                    "id": "each",
                    "tool": "echo",
                    "forEach": ["a", "b", "c"],
                    "parameters": {"value": "{{$item}}"},
                }
            ]
        },
    )
    store.create_execution(plan_id, [("each", "echo")], status="running")
    left = [
        ItemRecord(0, "failed", 3, error="gave up after 3 attempts"),
        ItemRecord(1, "succeeded", 1, output="b"),
        ItemRecord(2),
    ]
    store.update_steps(plan_id, [("each", {"status": "running", "items": left, "attempts": 4})])
    result = await execute(store, plan_id, resume=True)
    assert [c["item"] for c in calls(log, "each")] == [2]
    step = result.step("each")
    assert step.status == "failed" and step.output == [None, "b", "c"]
    assert step.error is not None and "gave up after 3 attempts" in step.error


# -- cancel ------------------------------------------------------------------------------------


async def test_cancel_marks_a_step_waiting_for_approval_cancelled(
    store: Store, log: Path, gate: Path
) -> None:
    """A run is cancelled while ``pay`` waits for approval and ``slow`` runs: both end
    ``cancelled``, and so does the execution (no approval can start ``pay`` any more).

    Planted bug: only running and pending steps are marked cancelled."""
    plan_id = submit(store, RESTART_PLAN)
    events = Events()
    run = asyncio.ensure_future(execute(store, plan_id, listener=events))
    await events.seen("waiting", "pay")
    await events.seen("started", "slow")
    cancelled = await request_cancel(store, plan_id, wait=HUNG)
    result = await run
    assert cancelled.status == result.status == "cancelled"
    steps = stored(store, plan_id)
    assert {step: steps[step][0] for step in ("pay", "refund", "slow", "after")} == {
        "pay": "cancelled",
        "refund": "cancelled",
        "slow": "cancelled",
        "after": "cancelled",
    }
    assert calls(log, "pay") == []


def _abandoned(store: Store, cli: Cli) -> str:
    """A plan whose run stopped renewing its lease (a hung or partitioned process) without
    dying: the lease has expired, its holder is a live process on this host (this one), one
    step was running and one waits for approval."""
    done = cli("submit", "--file", cli.write_plan(RESTART_PLAN), "--json")
    assert done.code == 0, done.stderr
    plan_id: str = done.json()["planId"]
    pairs = [(step["id"], step["tool"]) for step in RESTART_PLAN["steps"]]
    store.create_execution(plan_id, pairs, status="running")
    assert store.acquire(plan_id, "hung-worker", -60.0, expected_owner=None)
    store.update_steps(
        plan_id,
        [
            ("slow", {"status": "running", "attempts": 1}),
            (
                "pay",
                {"status": "waiting_approval", "resolved_parameters": {"to": "NO12", "amount": 50}},
            ),
        ],
    )
    return plan_id


def _assert_ended(store: Store, plan_id: str) -> None:
    execution = store.get_execution(plan_id)
    assert execution is not None
    assert execution.status == "cancelled" and execution.finished_at is not None
    assert {step.step_id: step.status for step in execution.steps} == {
        "pay": "cancelled",
        "refund": "cancelled",
        "after": "cancelled",
        "slow": "cancelled",
    }


@ON_BOTH_STORES
def test_cancelling_a_run_whose_lease_expired_ends_it_through_the_cli(cli: Cli) -> None:
    """Nobody renews the lease any more, so nobody would notice the request: ``toolplan
    cancel`` ends the execution itself, the waiting step with it.

    Planted bug: only a dead holder's run is ended, not an expired lease's."""
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as store:
        plan_id = _abandoned(store, cli)
        done = cli("cancel", plan_id, "--wait", "5", "--json")
        assert done.code == 0, done.stderr
        assert done.json()["status"] == "cancelled"
        _assert_ended(store, plan_id)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[ServerFactory]:
    yield from server_factory(tmp_path)


@ON_BOTH_STORES
def test_cancelling_a_run_whose_lease_expired_ends_it_through_the_api(
    cli: Cli, servers: ServerFactory
) -> None:
    """The same through GraphQL's ``cancelExecution``."""
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as store:
        plan_id = _abandoned(store, cli)
        client = servers(store=store).client()
        cancel = "mutation($p: String!) { cancelExecution(planId: $p) { planId status } }"
        result = client.data(cancel, {"p": plan_id})["cancelExecution"]
        assert result["status"] == "cancelled"
        _assert_ended(store, plan_id)


# -- an unexpected exception in a step ends it with a recorded error --------------------------

"""Only the assertion is expected to fail (``raises=AssertionError``): if the code a test
patches moves, the test errors instead of passing as an expected failure."""


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom: a bug inside the engine")


async def test_an_unexpected_exception_in_a_step_is_recorded(
    store: Store, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug while a step resolves its arguments (not a template error): the step ends
    ``failed`` in the store with the exception named, not ``pending`` with no error."""
    plan_id = submit(store, {"steps": [{"id": "a", "tool": "echo", "parameters": {"value": 1}}]})
    monkeypatch.setattr("toolplan.engine.attempts.resolve", _boom)
    await execute(store, plan_id)
    status, error = stored(store, plan_id)["a"]
    assert status == "failed" and error is not None and "boom" in error


async def test_an_unexpected_exception_in_an_item_is_recorded(
    store: Store, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug while an item resolves its arguments: the step ends ``failed`` in the store with
    the exception named, not ``running`` forever."""
    plan_id = submit(
        store,
        {
            "steps": [
                {
                    "id": "each",
                    "tool": "echo",
                    "forEach": [1, 2],
                    "parameters": {"value": "{{$item}}"},
                }
            ]
        },
    )
    monkeypatch.setattr("toolplan.engine.attempts.resolve", _boom)
    await execute(store, plan_id)
    status, error = stored(store, plan_id)["each"]
    assert status == "failed" and error is not None and "boom" in error


async def test_an_unexpected_exception_in_a_fallback_is_recorded(
    store: Store, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug while the fallback resolves its arguments: the step ends ``failed`` in the store
    with both the tool's failure and the exception named, not ``running`` forever."""
    from toolplan.plan_format import templates

    fallback_parameters = {"value": "fallback"}

    def resolve(value: Any, outputs: Any, schema: Any = None) -> Any:
        if value == fallback_parameters:
            _boom()
        return templates.resolve(value, outputs, schema)

    plan_id = submit(
        store,
        {
            "steps": [
                {
                    "id": "charge",
                    "tool": "business_error",
                    "parameters": {"message": "card declined"},
                    "fallback": {"tool": "echo", "parameters": fallback_parameters},
                }
            ]
        },
    )
    monkeypatch.setattr("toolplan.engine.attempts.resolve", resolve)
    await execute(store, plan_id)
    status, error = stored(store, plan_id)["charge"]
    assert status == "failed" and error is not None
    assert "card declined" in error and "boom" in error


# -- found by bench/mutation.py ---------------------------------------------------------------

WIRE_PLAN: dict[str, Any] = {
    "steps": [{"id": "pay", "tool": "wire_money", "parameters": {"to": "NO12", "amount": 50}}]
}


class _Racing:
    """The store, where another person's denial lands between reading the waiting step and
    writing this decision (the race ``decide_step`` settles atomically)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def decide_step(self, plan_id: str, step_id: str, changes: Any) -> bool:
        if not self.raced:
            self.raced = True
            deny_step(self._store, plan_id, step_id, "not this account", by="bob")
        return self._store.decide_step(plan_id, step_id, changes)


async def test_an_approval_that_loses_the_race_to_a_denial_says_so(store: Store, log: Path) -> None:
    """Ada approves while Bob denies: Bob's decision was stored first, so Ada is told that
    someone else decided, and the step stays denied.

    Planted bug: the result of the atomic ``decide_step`` is not checked."""
    plan_id = submit(store, WIRE_PLAN)
    await execute(store, plan_id)
    racing = _Racing(store)
    with pytest.raises(NotWaiting, match="decided by someone else meanwhile"):
        approve_steps(racing, plan_id, ["pay"], by="ada")  # type: ignore[arg-type]
    execution = store.get_execution(plan_id)
    assert execution is not None
    decision = execution.step("pay").decision
    assert decision is not None and (decision.kind, decision.by) == ("denied", "bob")


async def test_approving_a_cancelled_plan_says_it_finished(store: Store, log: Path) -> None:
    """A plan cancelled while a step waited for approval has finished: approving it says so
    (and that nothing changed), rather than that no step waits.

    Planted bug: only a ``succeeded`` execution counts as finished."""
    plan_id = submit(store, WIRE_PLAN)
    await execute(store, plan_id)
    await request_cancel(store, plan_id, wait=HUNG)
    with pytest.raises(NotWaiting, match=r"already finished \(cancelled\)"):
        approve_steps(store, plan_id, ["pay"], by="ada")
    with pytest.raises(NotWaiting, match=r"already finished \(cancelled\)"):
        deny_step(store, plan_id, "pay", "too late", by="bob")


async def test_a_fallback_gets_the_steps_own_timeout(store: Store, log: Path) -> None:
    """The step says ``"timeout": 0.2``; its fallback hangs. The fallback is cancelled after
    the step's timeout, not the default one, and the step fails saying so.

    Planted bug: a fallback is called with the default timeout."""
    plan_id = submit(
        store,
        {
            "steps": [
                {
                    "id": "charge",
                    "tool": "business_error",
                    "parameters": {"message": "card declined"},
                    "timeout": 0.2,
                    "fallback": {"tool": "hang", "parameters": {}},
                }
            ]
        },
    )
    await execute(store, plan_id, options=replace(FAST, default_timeout=5))
    status, error = stored(store, plan_id)["charge"]
    assert status == "failed" and error is not None
    assert "fallback 'hang' failed too" in error and "timed out after 0.2s" in error


async def test_a_resumed_item_numbers_its_attempts_on(store: Store, log: Path) -> None:
    """An earlier run made two attempts at item 1 and stopped while it ran: the resumed call
    is attempt 3 (the tool sees it in its metadata, and the record keeps it).

    Planted bug: a resumed item counts its attempts from zero."""
    plan_id = submit(
        store,
        {
            "steps": [
                {
                    "id": "each",
                    "tool": "echo",
                    "forEach": ["a", "b"],
                    "parameters": {"value": "{{$item}}"},
                }
            ]
        },
    )
    store.create_execution(plan_id, [("each", "echo")], status="running")
    left = [ItemRecord(0, "succeeded", 1, output="a"), ItemRecord(1, "running", 2)]
    store.update_steps(plan_id, [("each", {"status": "running", "items": left, "attempts": 3})])
    result = await execute(store, plan_id, resume=True)
    assert [(c["item"], c["attempt"]) for c in calls(log, "each")] == [(1, 3)]
    step = result.step("each")
    assert step.status == "succeeded" and step.output == ["a", "b"]
    execution = store.get_execution(plan_id)
    assert execution is not None
    items = execution.step("each").items
    assert items is not None and [item.attempts for item in items] == [1, 3]


async def test_a_cancel_requested_before_the_run_was_taken_over_ends_it_at_once(
    store: Store, log: Path, gate: Path
) -> None:
    """A cancel was requested of a run whose process then stopped (its lease expired before
    it noticed). The next runner to take the lease over (``execute --resume``, a worker) ends
    the execution ``cancelled`` without calling any tool.

    Planted bug: the request stored before the lease was taken is ignored."""
    plan_id = submit(store, RESTART_PLAN)
    pairs = [(step["id"], step["tool"]) for step in RESTART_PLAN["steps"]]
    store.create_execution(plan_id, pairs, status="running")
    assert store.acquire(plan_id, "stopped-worker", -60.0, expected_owner=None)
    store.request_cancel(plan_id, pairs)
    result = await execute(store, plan_id, resume=True)
    assert result.status == "cancelled"
    assert calls(log) == []
    assert set(stored(store, plan_id).values()) == {("cancelled", "cancelled before it started")}
