"""The eager scheduler, proven by the order of events with controlled steps, never by wall time."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

from toolplan.engine.scheduler import StepOutcome, schedule

DEADLINE = (
    5.0  # generous: only hit if the scheduler deadlocks (which is how a wave scheduler fails)
)


class Harness:
    """Steps that wait on gates the test controls, and a log of start/finish events."""

    def __init__(self, order: Sequence[str], dependencies: Mapping[str, Sequence[str]]) -> None:
        self.order = list(order)
        self.dependencies = {k: list(v) for k, v in dependencies.items()}
        self.gates = {step: asyncio.Event() for step in order}
        self.started = {step: asyncio.Event() for step in order}
        self.events: list[str] = []
        self.skipped: dict[str, str] = {}
        self.fail: set[str] = set()
        self.running = 0
        self.max_running = 0

    async def run(self, step: str) -> StepOutcome:
        self.events.append(f"start {step}")
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.started[step].set()
        try:
            await self.gates[step].wait()
        finally:
            self.running -= 1
        self.events.append(f"end {step}")
        if step in self.fail:
            return StepOutcome("failed", error=f"{step} broke")
        return StepOutcome("succeeded", output=step)

    async def skip(self, step: str, reason: str, kind: object = None) -> None:
        self.events.append(f"skip {step}")
        self.skipped[step] = reason

    def start(self, **kwargs: object) -> asyncio.Task[dict[str, StepOutcome]]:
        return asyncio.create_task(
            schedule(self.order, self.dependencies, self.run, self.skip, **kwargs)  # type: ignore[arg-type]
        )


async def test_ready_step_does_not_wait_for_unrelated_slow_sibling() -> None:
    # a is slow; b -> c. c must start while a is still running (no superstep barrier).
    h = Harness(["a", "b", "c"], {"a": [], "b": [], "c": ["b"]})
    task = h.start(concurrency=10)
    await asyncio.wait_for(asyncio.gather(h.started["a"].wait(), h.started["b"].wait()), DEADLINE)
    h.gates["b"].set()
    await asyncio.wait_for(h.started["c"].wait(), DEADLINE)  # a wave scheduler deadlocks here
    assert "end a" not in h.events
    h.gates["c"].set()
    h.gates["a"].set()
    outcomes = await asyncio.wait_for(task, DEADLINE)
    assert h.events.index("start c") < h.events.index("end a")
    assert {s: o.status for s, o in outcomes.items()} == {
        "a": "succeeded",
        "b": "succeeded",
        "c": "succeeded",
    }


async def test_join_waits_for_all_dependencies() -> None:
    h = Harness(["a", "b", "j"], {"a": [], "b": [], "j": ["a", "b"]})
    task = h.start(concurrency=10)
    await asyncio.wait_for(h.started["b"].wait(), DEADLINE)
    h.gates["a"].set()
    await asyncio.sleep(0.01)
    assert not h.started["j"].is_set()
    h.gates["b"].set()
    h.gates["j"].set()
    await asyncio.wait_for(task, DEADLINE)
    assert h.events.index("start j") > max(h.events.index("end a"), h.events.index("end b"))


async def test_concurrency_cap_is_respected_and_work_continues() -> None:
    order = [f"s{i}" for i in range(6)]
    h = Harness(order, {s: [] for s in order})
    task = h.start(concurrency=2)
    for step in order:  # release one at a time, in start order
        await asyncio.wait_for(h.started[step].wait(), DEADLINE)
        assert h.running <= 2
        h.gates[step].set()
    await asyncio.wait_for(task, DEADLINE)
    assert h.max_running == 2
    assert [e for e in h.events if e.startswith("start")] == [f"start {s}" for s in order]


async def test_fail_forward_skips_transitive_dependents_only() -> None:
    deps = {
        "bad": [],
        "child": ["bad"],
        "grandchild": ["child"],
        "free": [],
        "after_free": ["free"],
    }
    h = Harness(list(deps), deps)
    h.fail.add("bad")
    for gate in h.gates.values():
        gate.set()
    outcomes = await asyncio.wait_for(h.start(concurrency=10), DEADLINE)
    status = {s: o.status for s, o in outcomes.items()}
    assert status == {
        "bad": "failed",
        "child": "skipped",
        "grandchild": "skipped",
        "free": "succeeded",
        "after_free": "succeeded",
    }
    assert h.skipped["child"] == "skipped because dependency 'bad' failed"
    assert h.skipped["grandchild"] == "skipped because dependency 'bad' failed"
    assert "start child" not in h.events


async def test_fail_fast_stops_everything_after_the_first_failure() -> None:
    deps = {"bad": [], "slow": [], "later": ["slow"]}
    h = Harness(list(deps), deps)
    h.fail.add("bad")
    task = h.start(concurrency=10, fail_fast=True)
    await asyncio.wait_for(h.started["slow"].wait(), DEADLINE)
    h.gates["bad"].set()
    outcomes = await asyncio.wait_for(task, DEADLINE)
    assert outcomes["bad"].status == "failed"
    assert outcomes["slow"].status == "skipped" and "cancelled" in (outcomes["slow"].error or "")
    assert outcomes["later"].status == "skipped"
    assert "start later" not in h.events


async def test_finished_steps_from_an_earlier_run_are_not_run_again() -> None:
    deps = {"a": [], "b": ["a"], "c": ["b"], "x": [], "y": ["x"]}
    h = Harness(list(deps), deps)
    for gate in h.gates.values():
        gate.set()
    finished = {"a": StepOutcome("succeeded", output=1), "x": StepOutcome("failed", error="boom")}
    outcomes = await asyncio.wait_for(h.start(concurrency=3, finished=finished), DEADLINE)
    assert "start a" not in h.events and "start x" not in h.events
    assert outcomes["c"].status == "succeeded"
    assert outcomes["y"].status == "skipped"


async def test_a_resumed_skip_names_its_root_cause_from_the_dag_not_from_its_message() -> None:
    # The run stopped after skipping "mid" but before skipping "leaf": the stored outcome of
    # "mid" carries only text, and the text is not parsed.
    deps = {"root": [], "mid": ["root"], "leaf": ["mid"], "free": []}
    h = Harness(list(deps), deps)
    for gate in h.gates.values():
        gate.set()
    finished = {
        "root": StepOutcome("failed", error="boom"),
        "mid": StepOutcome("skipped", error="reworded: dependency 'elsewhere' went away"),
    }
    outcomes = await asyncio.wait_for(h.start(concurrency=3, finished=finished), DEADLINE)
    assert h.skipped["leaf"] == "skipped because dependency 'root' failed"
    assert outcomes["leaf"].cause == "root" and outcomes["free"].status == "succeeded"


async def test_a_crashing_run_function_fails_the_step_instead_of_hanging() -> None:
    async def run(step: str) -> StepOutcome:
        raise RuntimeError("bug")

    async def skip(step: str, reason: str, kind: object = None) -> None:
        return None

    outcomes = await asyncio.wait_for(
        schedule(["a", "b"], {"a": [], "b": ["a"]}, run, skip, concurrency=1), DEADLINE
    )
    assert outcomes["a"].status == "failed" and "bug" in (outcomes["a"].error or "")
    assert outcomes["b"].status == "skipped"


async def test_cancellation_cancels_running_steps() -> None:
    h = Harness(["a"], {"a": []})
    task = h.start(concurrency=1)
    await asyncio.wait_for(h.started["a"].wait(), DEADLINE)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert h.running == 0


async def test_fail_fast_keeps_a_step_whose_completion_is_already_queued() -> None:
    # "bad" fails and "done" succeeds in the same turn of the event loop: both completions are
    # queued before the scheduler processes the failure. "done" finished (its side effect
    # happened), so it must stay succeeded -- recording it as skipped would let a resume run it
    # again. "slow" is still in flight and is the only one cancelled.
    deps = {"bad": [], "done": [], "slow": [], "after_done": ["done"]}
    h = Harness(list(deps), deps)
    h.fail.add("bad")
    task = h.start(concurrency=10, fail_fast=True)
    await asyncio.wait_for(
        asyncio.gather(*(h.started[s].wait() for s in ("bad", "done", "slow"))), DEADLINE
    )
    h.gates["bad"].set()  # queued first: the failure is processed while "done" waits in the queue
    h.gates["done"].set()
    outcomes = await asyncio.wait_for(task, DEADLINE)
    assert h.events.index("end bad") < h.events.index("end done")
    assert outcomes["bad"].status == "failed"
    assert outcomes["done"] == StepOutcome("succeeded", output="done")
    assert "done" not in h.skipped
    assert outcomes["slow"].status == "skipped" and "cancelled" in (outcomes["slow"].error or "")
    assert outcomes["after_done"].status == "skipped"
    assert "start after_done" not in h.events


async def test_a_step_cancelled_while_recording_its_success_still_ends_succeeded() -> None:
    # The tool returned (its side effect happened); cancelling while the success is being written
    # (Ctrl-C, --fail-fast) must not leave the step "running" or turn it into a skip.
    from typing import Any

    from toolplan.config.policies import ExecutionOptions
    from toolplan.engine.inputs import MemoryInputs
    from toolplan.engine.step import StepRunner
    from toolplan.plan_format.plan import parse_plan
    from toolplan.tools.catalog import ToolCatalog

    def ping(text: str) -> str:
        """Echo the text."""
        return text

    class GatedRecorder:
        def __init__(self) -> None:
            self.writing = asyncio.Event()
            self.release = asyncio.Event()
            self.finished_with: list[str] = []

        async def started(self, *args: Any, **kwargs: Any) -> None:
            return None

        def retrying(self, *args: Any) -> None:
            return None

        async def finished(self, step_id: str, tool: str, *, status: str, **_: Any) -> None:
            self.writing.set()
            await self.release.wait()
            self.finished_with.append(status)

    recorder = GatedRecorder()
    plan = parse_plan({"steps": [{"id": "a", "tool": "ping", "parameters": {"text": "hi"}}]})
    runner = StepRunner(
        plan,
        ToolCatalog([ping]),
        recorder,  # type: ignore[arg-type]
        ExecutionOptions(),
        request_id="req_x",
        plan_id="plan_x",
        store=None,  # type: ignore[arg-type]
        inputs=MemoryInputs(),
    )
    task = asyncio.create_task(runner.run("a"))
    await asyncio.wait_for(recorder.writing.wait(), DEADLINE)
    task.cancel()
    await asyncio.sleep(0)
    recorder.release.set()
    outcome = await asyncio.wait_for(task, DEADLINE)
    assert outcome.status == "succeeded" and outcome.output == "hi"
    assert recorder.finished_with == ["succeeded"]
