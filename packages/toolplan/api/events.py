"""Events of the runs this server does, fanned out to subscribers: the step events of each
execution (by plan ID), and the planning progress of each query (by request ID,
:class:`PlanningNews`).

The engine calls the :class:`~toolplan.runs.runner.ExecutionContext` listener on the event
loop for every step transition, the planner its listener for every planning event; a hub keeps
the events of each run so a subscriber who arrives late still receives the whole run, then the
live events, and an end when the run ends. Everything here runs on the event loop thread, so no
locks are needed.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from toolplan.planning.progress import PlanningEvent

__all__ = ["EventHub", "PlanningNews", "planning_hub"]

E = TypeVar("E")


@dataclass(frozen=True)
class PlanningNews:
    """A planning event of the query planned under ``request_id``."""

    request_id: str
    event: PlanningEvent


def _plan_id(event: Any) -> str:
    return str(event.plan_id)


class EventHub(Generic[E]):
    """Per-run event history and subscriber queues for runs inside this process; a run is
    named by ``key`` of its events (step events: their plan ID)."""

    def __init__(self, *, retain: int = 64, key: Callable[[E], str] = _plan_id) -> None:
        self.retain = retain
        """How many finished runs keep their events for late subscribers."""
        self._key = key
        self._history: OrderedDict[str, list[E]] = OrderedDict()
        self._open: set[str] = set()
        self._subscribers: dict[str, set[asyncio.Queue[E | None]]] = {}
        self._opened: dict[str, asyncio.Event] = {}

    def open(self, plan_id: str) -> None:
        """A run of ``plan_id`` starts here: subscribers now wait for its events."""
        self._open.add(plan_id)
        self._history[plan_id] = []
        self._history.move_to_end(plan_id)
        waiting = self._opened.pop(plan_id, None)
        if waiting is not None:
            waiting.set()

    async def wait_opened(self, plan_id: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a run of ``plan_id`` to start here; whether it has."""
        if self.knows(plan_id):
            return True
        opened = self._opened.setdefault(plan_id, asyncio.Event())
        try:
            await asyncio.wait_for(opened.wait(), timeout)
        except TimeoutError:
            return self.knows(plan_id)
        return True

    def publish(self, event: E) -> None:
        """Record one event of an open run and hand it to every subscriber."""
        run = self._key(event)
        if run not in self._open:
            self.open(run)
        self._history[run].append(event)
        for queue in self._subscribers.get(run, ()):
            queue.put_nowait(event)

    def close(self, plan_id: str) -> None:
        """The run of ``plan_id`` ended: end every subscription and keep the history a while."""
        if plan_id not in self._open:
            return
        self._open.discard(plan_id)
        for queue in self._subscribers.get(plan_id, ()):
            queue.put_nowait(None)  # the end of the run
        if not self._history.get(plan_id):
            self._history.pop(plan_id, None)  # nothing ran (unknown plan, refused): forget it
        finished = [p for p in self._history if p not in self._open]
        for stale in finished[: max(0, len(finished) - self.retain)]:
            del self._history[stale]

    def close_all(self) -> None:
        """End every subscription (server shutdown)."""
        for plan_id in list(self._open):
            self.close(plan_id)

    def knows(self, plan_id: str) -> bool:
        """Whether ``plan_id`` runs here now, or ran here recently (its events are kept)."""
        return plan_id in self._open or plan_id in self._history

    async def subscribe(self, plan_id: str) -> AsyncIterator[E]:
        """The events of the current or last run of ``plan_id`` so far, then live ones until the
        run ends. Ends at once when this process has not run the plan recently."""
        # No await between the snapshot and the registration: no event can slip between them.
        replay = list(self._history.get(plan_id, ()))
        if plan_id not in self._open:
            for event in replay:
                yield event
            return
        queue: asyncio.Queue[E | None] = asyncio.Queue()
        self._subscribers.setdefault(plan_id, set()).add(queue)
        try:
            for event in replay:
                yield event
            while True:
                live = await queue.get()
                if live is None:
                    return
                yield live
        finally:
            subscribers = self._subscribers.get(plan_id, set())
            subscribers.discard(queue)
            if not subscribers:
                self._subscribers.pop(plan_id, None)


def planning_hub() -> EventHub[PlanningNews]:
    """The hub of the planning progress of the queries planned here, by request ID."""
    return EventHub(key=lambda news: news.request_id)
