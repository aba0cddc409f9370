"""The eager scheduler: a step starts the moment all of its dependencies have succeeded.

There are no waves or superstep barriers: a step never waits for unrelated siblings. Completions
arrive on one queue (O(1) per event), so large plans stay cheap to schedule. Failures fail
forward: the failed step's transitive dependents are skipped, independent steps continue. A step
skipped by its ``when`` condition (false, or text that is no yes/no) has its dependents skipped
for the same reason.

Order edges (``after``: :mod:`toolplan.validation.ordering`) say when, not whether: a step waits
for the steps it is ordered after to end, however they ended; one waiting for approval holds it.

The concurrency limit is a :class:`Slots` object that a step's items share with the steps: a
``forEach`` step lends its own slot to its items and each item holds one while it runs, so
one item counts as one running step.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolplan.errors import Unavailable
from toolplan.store.protocol import SkipReason

__all__ = ["Slots", "StepOutcome", "schedule"]


@dataclass(frozen=True)
class StepOutcome:
    """How a step ended."""

    status: Literal["succeeded", "failed", "skipped", "waiting", "denied"]
    """``waiting``: the step waits for a person's approval; its dependents stay pending (they
    neither run nor are skipped). ``denied``: a person said no; its dependents are skipped."""
    output: Any = None
    error: str | None = None
    cause: str | None = None
    """For a skipped step: the failed (or denied) step, or the step whose condition was false,
    it traces back to."""
    reason: SkipReason | None = None
    """``condition``: skipped by a ``when`` condition (its own or a dependency's), not a failure;
    ``condition-not-boolean``: a ``when`` that resolved to text (its own or a dependency's)."""


RunStep = Callable[[str], Awaitable[StepOutcome]]
SkipStep = Callable[[str, str, SkipReason | None], Awaitable[None]]
"""Record a step that will not run: (step id, message, reason when not a failure)."""


class Slots:
    """The concurrency limit, shared by steps and the items of ``forEach`` steps.

    Waiters are served first come, first served, before any new step starts: items of a
    running map take the slots that free up ahead of steps not started yet. Uses only asyncio
    futures and a deque, so it is deterministic under Temporal's workflow event loop.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = limit
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.on_free: Callable[[], None] | None = None
        """Called when a slot becomes free with nobody waiting for it (the scheduler wakes)."""

    def try_take(self) -> bool:
        """Take a free slot now if there is one nobody waits for."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    def ticket(self) -> asyncio.Future[None]:
        """A place in line, taken now: a future that is done once it holds a slot (at once when
        one is free). Await it with :meth:`wait`."""
        waiter = asyncio.get_running_loop().create_future()
        if self.try_take():
            waiter.set_result(None)
        else:
            self._waiters.append(waiter)
        return waiter

    async def wait(self, ticket: asyncio.Future[None]) -> None:
        """Wait until ``ticket`` holds a slot; cancelled meanwhile, it gives up its place (or
        the slot it was handed at that moment)."""
        try:
            await ticket
        except asyncio.CancelledError:
            if ticket.done() and not ticket.cancelled():
                self.give()
            else:
                ticket.cancel()
            raise

    async def take(self) -> None:
        """Wait for a slot and take it."""
        await self.wait(self.ticket())

    def give(self) -> None:
        """Free a slot: the first waiter gets it, else it is free for the next step."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1
        if self.on_free is not None:
            self.on_free()


async def schedule(
    order: Sequence[str],
    dependencies: Mapping[str, Sequence[str]],
    run: RunStep,
    skip: SkipStep,
    *,
    concurrency: int,
    fail_fast: bool = False,
    finished: Mapping[str, StepOutcome] | None = None,
    slots: Slots | None = None,
    after: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, StepOutcome]:
    """Run every step of a DAG eagerly, at most ``concurrency`` at a time.

    ``order`` is a topological order of ``dependencies`` and ``after`` together; it also sets the
    priority among ready steps. ``run`` executes one step and must return its outcome
    (exceptions are turned into failures). ``skip`` records a step that will not run, with the
    reason. ``finished`` holds outcomes from an earlier, interrupted run: those steps are not run
    again. ``slots`` is the limit shared with the items of ``forEach`` steps (``run`` takes more
    of them); by default ``concurrency`` slots of its own. ``after`` holds the order edges: a
    step starts only once those steps ended (whatever their outcome, but ``waiting``), and their
    failure never skips it.
    """
    slots = slots or Slots(concurrency)
    outcomes: dict[str, StepOutcome] = dict(finished or {})
    dependents: dict[str, list[str]] = {step: [] for step in order}
    for step in order:
        for dep in dependencies[step]:
            dependents[dep].append(step)
    followers: dict[str, list[str]] = {step: [] for step in order}
    for step, earlier in (after or {}).items():
        for dep in earlier:
            followers[dep].append(step)
    rank = {step: index for index, step in enumerate(order)}
    waiting = {
        step: sum(
            1 for dep in dependencies[step] if outcomes.get(dep, _PENDING).status != "succeeded"
        )
        for step in order
    }
    unended = {step: 0 for step in order}
    """How many steps each step is ordered after that have not ended yet."""
    for step, earlier in (after or {}).items():
        unended[step] = sum(1 for dep in earlier if not _ended(outcomes.get(dep)))
    ready: deque[str] = deque()
    completions: asyncio.Queue[tuple[str, StepOutcome | BaseException] | None] = asyncio.Queue()
    slots.on_free = lambda: completions.put_nowait(None)  # None: a slot freed, nothing ended
    running: dict[str, asyncio.Task[None]] = {}
    stopping = False

    def release_followers(step: str) -> None:
        """``step`` ended: the steps ordered after it wait for one step fewer."""
        newly_ready = []
        for follower in followers[step]:
            unended[follower] -= 1
            if unended[follower] == 0 and waiting[follower] == 0 and follower not in outcomes:
                newly_ready.append(follower)
        ready.extend(sorted(newly_ready, key=rank.__getitem__))

    async def mark_skipped(
        step: str, message: str, cause: str | None = None, reason: SkipReason | None = None
    ) -> None:
        outcomes[step] = StepOutcome("skipped", error=message, cause=cause, reason=reason)
        release_followers(step)
        await skip(step, message, reason)

    async def skip_dependents_of(root: str) -> None:
        if outcomes[root].reason == "condition":
            cause = outcomes[root].cause or root
            message = f"skipped because the condition of {cause!r} was false"
        elif outcomes[root].reason == "condition-not-boolean":
            cause = outcomes[root].cause or root
            message = f"skipped because the condition of {cause!r} is not a yes/no value"
        else:
            cause = root if outcomes[root].status in _STOPPED else _cause_of(root)
            if outcomes.get(cause, _PENDING).status == "denied":
                message = f"skipped because dependency {cause!r} was denied"
            else:
                message = f"skipped because dependency {cause!r} failed"
        reason = outcomes[root].reason
        stack = list(dependents[root])
        while stack:
            step = stack.pop()
            if step in outcomes or step in running:
                continue
            await mark_skipped(step, message, cause, reason)
            stack.extend(dependents[step])

    def _cause_of(step: str) -> str:
        """The failed step a skipped ``step`` traces back to. Outcomes stored by an earlier run
        carry no cause: follow the dependencies to the first failed one (in ``order``)."""
        current = step
        while outcomes[current].cause is None:
            deps = [d for d in sorted(dependencies[current], key=rank.__getitem__) if d in outcomes]
            failed = [d for d in deps if outcomes[d].status in _STOPPED]
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
        if step in outcomes and outcomes[step].status not in ("succeeded", "waiting"):
            await skip_dependents_of(step)
    for step in order:
        if step not in outcomes and waiting[step] == 0 and unended[step] == 0:
            ready.append(step)

    async def settle(step: str, result: StepOutcome | BaseException) -> None:
        """Take in one completion from the queue: record it and release or skip dependents."""
        await running.pop(step)
        slots.give()
        if isinstance(result, BaseException):
            raise result
        outcomes[step] = result
        if result.status == "succeeded":
            newly_ready = []
            for child in dependents[step]:
                waiting[child] -= 1
                if waiting[child] == 0 and unended[child] == 0 and child not in outcomes:
                    newly_ready.append(child)
            ready.extend(sorted(newly_ready, key=rank.__getitem__))
        elif result.status != "waiting":  # a waiting step's dependents wait with it
            await skip_dependents_of(step)
        if result.status != "waiting":
            release_followers(step)

    async def settle_queued() -> None:
        while not completions.empty():
            entry = completions.get_nowait()
            if entry is not None:
                await settle(*entry)

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
            while ready and not stopping:
                if ready[0] in outcomes or ready[0] in running:
                    ready.popleft()  # made ready twice (its last order edge and a resume)
                    continue
                if not slots.try_take():
                    break
                step = ready.popleft()
                running[step] = asyncio.create_task(runner(step), name=f"toolplan-step-{step}")
            if not running:
                break
            entry = await completions.get()
            if entry is None:
                continue
            step, result = entry
            await settle(step, result)
            if fail_fast and not stopping and outcomes[step].status not in ("succeeded", "waiting"):
                stopping = True
                await stop_after(step)
    finally:
        for task in running.values():
            task.cancel()
        if running:
            await asyncio.gather(*running.values(), return_exceptions=True)
    return outcomes


_PENDING = StepOutcome("skipped", error="pending")  # sentinel: "no outcome yet"

_STOPPED = ("failed", "denied")


def _ended(outcome: StepOutcome | None) -> bool:
    """Whether a step with ``outcome`` has ended (an order edge from it is satisfied)."""
    return outcome is not None and outcome.status != "waiting"


"""Outcomes whose dependents are skipped as failures' are (not a condition's decision)."""
