"""The eager scheduler: a step starts the moment all of its dependencies have succeeded.

There are no waves or superstep barriers: a step never waits for unrelated siblings. Completions
arrive on one queue (O(1) per event), so large plans stay cheap to schedule. Failures fail
forward: the failed step's transitive dependents are skipped, independent steps continue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolplan.errors import Unavailable

__all__ = ["StepOutcome", "schedule"]


@dataclass(frozen=True)
class StepOutcome:
    """How a step ended."""

    status: Literal["succeeded", "failed", "skipped"]
    output: Any = None
    error: str | None = None
    cause: str | None = None
    """For a step skipped because of a failure: the failed step it traces back to."""


RunStep = Callable[[str], Awaitable[StepOutcome]]
SkipStep = Callable[[str, str], Awaitable[None]]


async def schedule(
    order: Sequence[str],
    dependencies: Mapping[str, Sequence[str]],
    run: RunStep,
    skip: SkipStep,
    *,
    concurrency: int,
    fail_fast: bool = False,
    finished: Mapping[str, StepOutcome] | None = None,
) -> dict[str, StepOutcome]:
    """Run every step of a DAG eagerly, at most ``concurrency`` at a time.

    ``order`` is a topological order; it also sets the priority among ready steps. ``run`` executes
    one step and must return its outcome (exceptions are turned into failures). ``skip`` records a
    step that will not run, with the reason. ``finished`` holds outcomes from an earlier, interrupted
    run: those steps are not run again.
    """
    outcomes: dict[str, StepOutcome] = dict(finished or {})
    dependents: dict[str, list[str]] = {step: [] for step in order}
    for step in order:
        for dep in dependencies[step]:
            dependents[dep].append(step)
    rank = {step: index for index, step in enumerate(order)}
    waiting = {
        step: sum(
            1 for dep in dependencies[step] if outcomes.get(dep, _PENDING).status != "succeeded"
        )
        for step in order
    }
    ready: deque[str] = deque()
    completions: asyncio.Queue[tuple[str, StepOutcome | BaseException]] = asyncio.Queue()
    running: dict[str, asyncio.Task[None]] = {}
    stopping = False

    async def mark_skipped(step: str, reason: str, cause: str | None = None) -> None:
        outcomes[step] = StepOutcome("skipped", error=reason, cause=cause)
        await skip(step, reason)

    async def skip_dependents_of(root: str) -> None:
        cause = root if outcomes[root].status == "failed" else _cause_of(root)
        stack = list(dependents[root])
        while stack:
            step = stack.pop()
            if step in outcomes or step in running:
                continue
            await mark_skipped(step, f"skipped because dependency {cause!r} failed", cause)
            stack.extend(dependents[step])

    def _cause_of(step: str) -> str:
        """The failed step a skipped ``step`` traces back to. Outcomes stored by an earlier run
        carry no cause: follow the dependencies to the first failed one (in ``order``)."""
        current = step
        while outcomes[current].cause is None:
            deps = [d for d in sorted(dependencies[current], key=rank.__getitem__) if d in outcomes]
            failed = [d for d in deps if outcomes[d].status == "failed"]
            if failed:
                return failed[0]
            skipped = [d for d in deps if outcomes[d].status == "skipped"]
            if not skipped:
                return current  # skipped for another reason (--fail-fast): the cause itself
            current = skipped[0]
        cause = outcomes[current].cause
        assert cause is not None
        return cause

    async def runner(step: str) -> None:
        outcome: StepOutcome | BaseException
        try:
            outcome = await run(step)
        except asyncio.CancelledError:
            raise
        except Unavailable as error:  # the store is gone: the run cannot continue durably
            outcome = error
        except Exception as error:  # a bug in `run`; never lose it, fail the step visibly
            outcome = StepOutcome("failed", error=f"internal error: {error!r}")
        completions.put_nowait((step, outcome))

    # Steps already final from an earlier run may need their dependents skipped.
    for step in order:
        if step in outcomes and outcomes[step].status != "succeeded":
            await skip_dependents_of(step)
    for step in order:
        if step not in outcomes and waiting[step] == 0:
            ready.append(step)

    async def settle(step: str, result: StepOutcome | BaseException) -> None:
        """Take in one completion from the queue: record it and release or skip dependents."""
        await running.pop(step)
        if isinstance(result, BaseException):
            raise result
        outcomes[step] = result
        if result.status == "succeeded":
            newly_ready = []
            for child in dependents[step]:
                waiting[child] -= 1
                if waiting[child] == 0 and child not in outcomes:
                    newly_ready.append(child)
            ready.extend(sorted(newly_ready, key=rank.__getitem__))
        else:
            await skip_dependents_of(step)

    async def settle_queued() -> None:
        while not completions.empty():
            await settle(*completions.get_nowait())

    async def stop_after(failed: str) -> None:
        # Steps that already finished have their completion queued: they ended as they ended,
        # and a step whose side effect happened must never be recorded as skipped (a resume
        # would run it again). Only steps still in flight are cancelled.
        await settle_queued()
        for task in running.values():
            task.cancel()
        for task in list(running.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await settle_queued()  # a step may finish its bookkeeping although it was cancelled
        for other in list(running):
            running.pop(other)
            await mark_skipped(
                other, f"cancelled: --fail-fast stopped the plan after {failed!r} failed"
            )
        reason = f"not run: --fail-fast stopped the plan after {failed!r} failed"
        for other in order:
            if other not in outcomes:
                await mark_skipped(other, reason)
        ready.clear()

    try:
        while True:
            while ready and len(running) < concurrency and not stopping:
                step = ready.popleft()
                running[step] = asyncio.create_task(runner(step), name=f"toolplan-step-{step}")
            if not running:
                break
            step, result = await completions.get()
            await settle(step, result)
            if fail_fast and not stopping and outcomes[step].status != "succeeded":
                stopping = True
                await stop_after(step)
    finally:
        for task in running.values():
            task.cancel()
        if running:
            await asyncio.gather(*running.values(), return_exceptions=True)
    return outcomes


_PENDING = StepOutcome("skipped", error="pending")  # sentinel: "no outcome yet"
