"""The recorder's group commit: transitions queued while the writer thread is busy are committed
together in one ``update_steps`` call, in order, and every waiter returns only once its own
transition is stored (or gets the store's error)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from toolplan.engine.recorder import Recorder
from toolplan.errors import StoreUnavailable
from toolplan.store.sqlite import SqliteStore
from toolplan_conformance import started_execution


class GatedStore:
    """A real SQLite store whose first batch waits for a gate; every batch is remembered."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.batches: list[list[str]] = []
        self.fail_with: Exception | None = None

    def update_steps(self, plan_id: str, updates: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self.batches.append([step for step, _ in updates])
        self.gate.wait(10)
        if self.fail_with is not None:
            raise self.fail_with
        self.inner.update_steps(plan_id, updates)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def gated(tmp_path: Path) -> GatedStore:
    return GatedStore(SqliteStore(tmp_path / "toolplan.db"))


async def _start_behind_the_first(
    store: GatedStore, recorder: Recorder, start: Callable[[int], Awaitable[None]], count: int
) -> list[asyncio.Task[None]]:
    """Start the first task; once the writer holds its write at the gate, start the others and
    let them queue their writes behind it."""
    tasks = [asyncio.create_task(start(0))]
    for _ in range(2000):
        if store.batches:
            break
        await asyncio.sleep(0.001)
    tasks += [asyncio.create_task(start(i)) for i in range(1, count)]
    for _ in range(2000):
        if len(recorder._queued) == count - 1:
            return tasks
        await asyncio.sleep(0.001)
    raise AssertionError(f"{store.batches} taken, {len(recorder._queued)} writes queued")


async def test_transitions_queued_meanwhile_are_committed_together_in_order(
    gated: GatedStore,
) -> None:
    execution = started_execution(gated.inner, steps=30)
    recorder = Recorder(gated, execution.plan_id, output_limit_bytes=1000)  # type: ignore[arg-type]
    stored: list[str] = []

    async def one_step(i: int) -> None:
        await recorder.started(f"s{i}", "echo", 1, {"i": i}, "2025-01-01T00:00:00.000Z")
        # Durable when the await returns: another connection sees it.
        stored.append(
            SqliteStore(gated.inner.path).get_execution(execution.plan_id).step(f"s{i}").status
        )  # type: ignore[union-attr]
        await recorder.finished(f"s{i}", "echo", status="succeeded", attempts=1, output=i)

    try:
        tasks = await _start_behind_the_first(gated, recorder, one_step, 30)
        gated.gate.set()
        await asyncio.gather(*tasks)
        await recorder.drain()
    finally:
        recorder.close()
    assert gated.batches[0] == ["s0"]
    # One commit for the 29 starts queued meanwhile (s0's finish may have joined them).
    assert gated.batches[1][:29] == [f"s{i}" for i in range(1, 30)]
    assert stored == ["running"] * 30
    steps = gated.inner.get_execution(execution.plan_id).steps  # type: ignore[union-attr]
    assert [(s.status, s.output, s.attempts) for s in steps] == [
        ("succeeded", i, 1) for i in range(30)
    ]


async def test_a_failed_batch_fails_every_write_in_it(gated: GatedStore) -> None:
    execution = started_execution(gated.inner, steps=5)
    recorder = Recorder(gated, execution.plan_id, output_limit_bytes=1000)  # type: ignore[arg-type]
    gated.fail_with = StoreUnavailable("the store is gone")
    try:
        tasks = await _start_behind_the_first(
            gated, recorder, lambda i: recorder.skipped(f"s{i}", "echo", "upstream failed"), 5
        )
        gated.gate.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        recorder.close()
    assert [type(result) for result in results] == [StoreUnavailable] * 5
    assert gated.batches == [["s0"], ["s1", "s2", "s3", "s4"]]
    assert gated.inner.get_execution(execution.plan_id) == execution  # nothing was written


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_writes_through_its_own_writer_threads(tmp_path: Path) -> None:
    """The writer threads are shared by the process; a forked child has none of them and must
    start its own instead of queueing work for threads that do not exist there."""
    store = SqliteStore(tmp_path / "toolplan.db")
    execution = started_execution(store, steps=2)

    async def skip(on: SqliteStore, step: str) -> None:
        recorder = Recorder(on, execution.plan_id, output_limit_bytes=1000)
        await asyncio.wait_for(recorder.skipped(step, "echo", "upstream failed"), 10)

    asyncio.run(skip(store, "s0"))  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        code = 1
        try:
            asyncio.run(skip(SqliteStore(tmp_path / "toolplan.db"), "s1"))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    steps = store.get_execution(execution.plan_id).steps  # type: ignore[union-attr]
    assert [s.status for s in steps] == ["skipped", "skipped"]
