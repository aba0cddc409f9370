"""Durable step transitions: every state change is written to the store as it happens.

Writes go through one dedicated thread per run, so they keep their order (a step's ``running``
is always stored before its ``succeeded``) and the event loop never blocks on store I/O; a store
that keeps its records in memory (``in_memory = True``: no I/O to wait for) is written on the
event loop instead. The
thread commits every transition queued since its last write in one ``update_steps`` call (group
commit: one transaction, one thread hop for a whole wide layer). The engine awaits each write
before acting on it: a step's success is durable before any dependent starts, which is what lets
a killed run resume without calling finished steps again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from toolplan.engine.observers import BestEffort
from toolplan.errors import ExecutionGone
from toolplan.store.protocol import (
    Decision,
    ExecutionLog,
    ItemRecord,
    SkipReason,
    cap_output,
    utc_now,
)

if TYPE_CHECKING:
    from toolplan.engine.timeouts import EffectiveTimeout

__all__ = ["EventListener", "Recorder", "StepEvent", "in_memory", "off_loop"]

StepEventKind = Literal[
    "started",
    "retrying",
    "fallback",
    "succeeded",
    "failed",
    "skipped",
    "cancelled",
    "waiting",
    "denied",
]
"""``retrying``: an attempt failed and the tool is called again. ``fallback``: the tool failed for
good (``error`` says why) and the step's fallback tool (``fallback_tool``) is called instead.
``cancelled``: the execution was cancelled while the step ran or before it started.
``waiting``: the step waits for a person's approval (``arguments``: what its tool would be
called with). ``denied``: a person said no (``error``: who and why)."""


@dataclass(frozen=True)
class StepEvent:
    """One step transition, as shown on progress displays and streamed to clients."""

    kind: StepEventKind
    plan_id: str
    step_id: str
    tool: str
    attempt: int
    at: str
    error: str | None = None
    duration_ms: float | None = None
    cached: bool = False
    """On ``succeeded``: the output came from the result cache; no tool was called."""
    fallback_tool: str | None = None
    """On ``fallback``: the tool called instead."""
    used_fallback: bool = False
    """On ``succeeded``/``failed``: the outcome is the fallback's."""
    item: int | None = None
    """The item of a ``forEach`` step the transition is about (``None``: the step itself)."""
    reason: SkipReason | None = None
    """On ``skipped``: ``condition`` when a ``when`` condition decided it, not a failure."""
    arguments: Any = None
    """On ``waiting``: the resolved arguments the tool would be called with once approved."""

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON form (``arguments`` only on ``waiting``)."""
        data = {
            "kind": self.kind,
            "planId": self.plan_id,
            "stepId": self.step_id,
            "tool": self.tool,
            "attempt": self.attempt,
            "at": self.at,
            "error": self.error,
            "durationMs": self.duration_ms,
            "cached": self.cached,
            "fallbackTool": self.fallback_tool,
            "usedFallback": self.used_fallback,
            "item": self.item,
            "reason": self.reason,
        }
        if self.kind == "waiting":
            data["arguments"] = self.arguments
        return data


EventListener = Callable[[StepEvent], None]

T = TypeVar("T")

_Queued = tuple[str | None, Mapping[str, Any], "asyncio.Future[None]"]
"""(step id, changes, waiter); a ``None`` step is a barrier (:meth:`Recorder.drain`)."""

_WRITER_THREADS = 8
"""Writer threads shared by every execution in the process: one at a time per execution."""

_writers: ThreadPoolExecutor | None = None
_writers_guard = threading.Lock()


def _writer_pool() -> ThreadPoolExecutor:
    """The process's writer threads, started on first use and kept (an execution no longer
    starts and stops a thread of its own)."""
    global _writers
    with _writers_guard:
        if _writers is None:
            _writers = ThreadPoolExecutor(_WRITER_THREADS, thread_name_prefix="toolplan-store")
        return _writers


def _forget_writer_pool() -> None:
    # A forked child has none of the parent's threads: it starts its own pool on first use.
    global _writers, _writers_guard
    _writers, _writers_guard = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_writer_pool)


def in_memory(store: object) -> bool:
    """Whether ``store`` keeps its records in this process's memory (``in_memory = True``): its
    calls wait for no I/O, so the engine makes them on the event loop; a thread hop would cost
    more than the call itself."""
    return getattr(store, "in_memory", False) is True


async def off_loop(store: object, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, a blocking call on ``store``: in a thread, so the event loop never waits
    for store I/O, or right here for a store kept :func:`in_memory`."""
    if in_memory(store):
        return call(*args)
    return await asyncio.to_thread(call, *args)


def _settle(waiters: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for done in waiters:
        if done.done():  # its writer was cancelled; the write happened all the same
            continue
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


class Recorder:
    """Writes step transitions of one execution to the store and tells a listener.

    The write comes first and is the truth; the listener is told afterwards, best-effort
    (:class:`~toolplan.engine.observers.BestEffort`): whatever it raises is logged once and
    ignored, so a broken progress printer or event subscriber never fails a step."""

    def __init__(
        self,
        store: ExecutionLog,
        plan_id: str,
        *,
        output_limit_bytes: int,
        listener: EventListener | None = None,
    ) -> None:
        self.store = store
        self.plan_id = plan_id
        self.output_limit_bytes = output_limit_bytes
        self.listener = listener
        self._notify = BestEffort(listener, what=f"step events of {plan_id}")
        self._queued: list[_Queued] = []
        self._flushing = False
        """A writer thread is committing this execution's transitions (at most one at a time:
        that is what keeps them in order)."""
        self._guard = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._inline = in_memory(store)
        """Writes are made on the event loop, without the writer thread's two hops (which cost
        more than an in-memory write itself, and most on a busy machine)."""

    async def _write(self, step_id: str | None, changes: Mapping[str, Any]) -> None:
        """Queue one transition and wait until it is stored. The writer thread takes every
        transition queued when it wakes up and commits them together (group commit: one
        ``update_steps`` call, one transaction), in the order they were queued."""
        if self._inline:
            if step_id is not None:
                self._commit([(step_id, changes)])
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._guard:
            self._queued.append((step_id, changes, done))
            wake = not self._flushing
            self._flushing = True
            self._idle.clear()
        if wake:
            _writer_pool().submit(self._flush, loop)
        await done

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """On a writer thread: commit queued transitions, batch after batch, until none is
        left; each batch's waiters are told once it is stored (or why it failed)."""
        while True:
            with self._guard:
                batch, self._queued = self._queued, []
                if not batch:
                    self._flushing = False
                    self._idle.set()
                    return
            updates = [(step, changes) for step, changes, _ in batch if step is not None]
            error: BaseException | None = None
            try:
                self._commit(updates)
            except BaseException as failure:  # handed to every waiter of the batch
                error = failure
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, [done for _, _, done in batch], error)

    def _commit(self, updates: list[tuple[str, Mapping[str, Any]]]) -> None:
        try:
            if updates:
                self.store.update_steps(self.plan_id, updates)
        except KeyError as missing:
            # A run writes only its own steps: a missing one means its records were deleted
            # under it. A store fault (exit 3), never the step's failure.
            raise ExecutionGone(self.plan_id, missing.args[0] if missing.args else None) from None

    def _emit(
        self, kind: StepEventKind, step_id: str, tool: str, attempt: int, **extra: Any
    ) -> None:
        if self.listener is not None:
            self._notify(StepEvent(kind, self.plan_id, step_id, tool, attempt, utc_now(), **extra))

    async def started(
        self,
        step_id: str,
        tool: str,
        attempt: int,
        resolved: Any,
        started_at: str | None,
        *,
        timeout: EffectiveTimeout | None = None,
    ) -> None:
        """A new attempt begins (``started_at`` only on the first attempt of this run), with
        ``timeout`` seconds (recorded with its source)."""
        changes: dict[str, Any] = {
            "status": "running",
            "attempts": attempt,
            "resolved_parameters": resolved,
            "error": None,
        }
        if timeout is not None:
            changes["timeout"] = timeout.seconds
            changes["timeout_source"] = timeout.source
        if started_at is not None:
            changes["started_at"] = started_at
        await self._write(step_id, changes)
        self._emit("started", step_id, tool, attempt)

    def retrying(
        self, step_id: str, tool: str, attempt: int, error: str, *, item: int | None = None
    ) -> None:
        """An attempt failed and another will follow (the next ``started`` is stored)."""
        self._emit("retrying", step_id, tool, attempt, error=error, item=item)

    def falling_back(
        self,
        step_id: str,
        tool: str,
        attempt: int,
        error: str,
        fallback_tool: str,
        *,
        item: int | None = None,
    ) -> None:
        """The tool failed for good; the step's fallback tool is called next."""
        self._emit(
            "fallback", step_id, tool, attempt, error=error, fallback_tool=fallback_tool, item=item
        )

    async def items_known(self, step_id: str, tool: str, items: list[ItemRecord]) -> None:
        """A ``forEach`` step starts over its list: the step is running, with one record per
        item (those an earlier run finished kept as they are)."""
        changes: dict[str, Any] = {"status": "running", "items": items, "error": None}
        if not any(item.status != "pending" for item in items):
            changes["started_at"] = utc_now()
        await self._write(step_id, changes)
        self._emit("started", step_id, tool, 0)

    async def item_started(self, step_id: str, tool: str, index: int, attempt: int) -> None:
        """An attempt of one item begins."""
        await self._write(step_id, {"item": ItemRecord(index, "running", attempt)})
        self._emit("started", step_id, tool, attempt, item=index)

    async def item_finished(
        self, step_id: str, tool: str, record: ItemRecord, *, duration_ms: float
    ) -> ItemRecord:
        """One item reached its final state; returns it as stored (output capped)."""
        output, _ = cap_output(record.output, self.output_limit_bytes)
        stored = replace(record, output=output, duration_ms=duration_ms)
        await self._write(step_id, {"item": stored})
        self._emit(
            "succeeded" if stored.status == "succeeded" else "failed",
            step_id,
            tool,
            stored.attempts,
            error=stored.error,
            duration_ms=duration_ms,
            used_fallback=stored.used_fallback,
            item=stored.index,
        )
        return stored

    async def finished(
        self,
        step_id: str,
        tool: str,
        *,
        status: Literal["succeeded", "failed"],
        attempts: int,
        output: Any = None,
        error: str | None = None,
        duration_ms: float | None = None,
        used_fallback: bool = False,
        resolved: Any = None,
        cache_age_seconds: float | None = None,
        started_at: str | None = None,
        reused_from: str | None = None,
    ) -> None:
        """The step reached its final state (``cache_age_seconds``: its output came from the
        result cache, that old, and no tool was called; ``reused_from``: it is the output of a
        step of an earlier version of the request, and no tool was called; ``started_at`` is
        given with either)."""
        stored, truncated = cap_output(output, self.output_limit_bytes)
        changes: dict[str, Any] = {
            "status": status,
            "attempts": attempts,
            "output": stored,
            "error": error,
            "finished_at": utc_now(),
            "duration_ms": duration_ms,
            "output_truncated": truncated,
            "used_fallback": used_fallback,
            "cached": cache_age_seconds is not None,
            "cache_age_seconds": cache_age_seconds,
        }
        if started_at is not None:
            changes["started_at"] = started_at
        if reused_from is not None:
            changes["reused_from"] = reused_from
        if resolved is not None:
            changes["resolved_parameters"] = resolved
        await self._write(step_id, changes)
        self._emit(
            status,
            step_id,
            tool,
            attempts,
            error=error,
            duration_ms=duration_ms,
            cached=cache_age_seconds is not None,
            used_fallback=used_fallback,
        )

    async def waiting(self, step_id: str, tool: str, arguments: Any) -> None:
        """The step waits for a person's approval to call its tool with ``arguments`` (any
        earlier decision, given for other arguments, no longer applies)."""
        changes: dict[str, Any] = {
            "status": "waiting_approval",
            "resolved_parameters": arguments,
            "error": None,
            "decision": None,
        }
        await self._write(step_id, changes)
        self._emit("waiting", step_id, tool, 0, arguments=arguments)

    async def approved(self, step_id: str, decision: Decision) -> None:
        """The run's blanket approval (``approve_all``) lets the step's call through: its
        decision is stored on the step before the tool is called."""
        await self._write(step_id, {"decision": decision})

    async def skipped(
        self, step_id: str, tool: str, message: str, *, reason: SkipReason | None = None
    ) -> None:
        """The step will not run: because of an earlier failure, or (``reason``
        ``condition``) its condition or a dependency's was false."""
        changes: dict[str, Any] = {"status": "skipped", "error": message, "finished_at": utc_now()}
        if reason is not None:
            changes["reason"] = reason
        await self._write(step_id, changes)
        self._emit("skipped", step_id, tool, 0, error=message, reason=reason)

    async def cancelled(
        self,
        step_id: str,
        tool: str,
        reason: str,
        *,
        attempts: int,
        duration_ms: float | None = None,
    ) -> None:
        """The execution was cancelled while the step ran (its tool call was cancelled) or
        before it started."""
        changes: dict[str, Any] = {"status": "cancelled", "error": reason, "finished_at": utc_now()}
        if duration_ms is not None:
            changes["duration_ms"] = duration_ms
        await self._write(step_id, changes)
        self._emit("cancelled", step_id, tool, attempts, error=reason, duration_ms=duration_ms)

    async def drain(self) -> None:
        """Wait until every write submitted so far is stored (writes keep their order)."""
        with self._guard:
            if not self._flushing:
                return
        with contextlib.suppress(Exception):  # a failed write was reported to its own waiter
            await self._write(None, {})

    def close(self) -> None:
        """Wait until pending writes are finished (blocking; the writer threads are shared)."""
        self._idle.wait()
