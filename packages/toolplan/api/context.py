"""What every resolver works with: one :class:`ApiContext` per server, shared by all requests."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from toolplan.api.events import EventHub, PlanningNews, planning_hub
from toolplan.api.runs import BackgroundRuns
from toolplan.client import AsyncToolplan
from toolplan.config import Settings
from toolplan.engine.recorder import EventListener, StepEvent
from toolplan.runs.context import ExecutionContext
from toolplan.store.protocol import Store
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from toolplan.planning.context import PlannerContext

__all__ = ["ApiContext"]


class ApiContext:
    """The server's client (settings, store, tools, planner), its running executions and their
    event streams."""

    def __init__(self, client: AsyncToolplan) -> None:
        self.client = client
        """Built once for the server. Its worker ID owns every run here: a run stopped by a
        store outage leaves its lease behind, and ``executePlan`` takes it back at once instead
        of waiting for it to expire. (Two runs of one plan never overlap here:
        :class:`BackgroundRuns` joins them.)"""
        self.events: EventHub[StepEvent] = EventHub()
        self.planning: EventHub[PlanningNews] = planning_hub()
        """The planning progress of queries planned here with a client's request ID."""
        self.runs = BackgroundRuns(self.execution_context, client.store, self.events)
        self._planner_lock = asyncio.Lock()

    @property
    def settings(self) -> Settings:
        return self.client.settings

    @property
    def store(self) -> Store:
        return self.client.store

    @property
    def catalog(self) -> ToolCatalog:
        return self.client.catalog

    def execution_context(self, listener: EventListener | None = None) -> ExecutionContext:
        """The context of one execution, as the CLI builds it, with ``listener`` for its events."""
        return self.client.execution_context(listener=listener)

    async def planner(self) -> PlannerContext:
        """The planner context, built on first use and then reused.

        A server without a model configuration serves everything else; planning raises
        :class:`~toolplan.errors.LLMUnavailable` with the reason (and tries again next time).
        """
        async with self._planner_lock:
            return await asyncio.to_thread(self.client.planner_context)

    async def planner_telling(self, request_id: str | None) -> PlannerContext:
        """The planner context for one query: with the client's ``request_id``, a copy that
        publishes its planning events under it (``planningEvents``); hand it back to
        :meth:`planned` when done."""
        planner = await self.planner()
        if request_id is None:
            return planner
        self.planning.open(request_id)
        return planner.telling(lambda event: self.planning.publish(PlanningNews(request_id, event)))

    async def planned(self, request_id: str | None, copy: PlannerContext) -> None:
        """The query planned under ``request_id`` is done: its planning subscriptions end, and
        what the copy learned of the endpoint is kept."""
        (await self.planner()).learn_from(copy)
        if request_id is not None:
            self.planning.close(request_id)

    async def close(self) -> None:
        """Stop the executions running here and end every event subscription."""
        await self.runs.close()
        self.events.close_all()
        self.planning.close_all()
