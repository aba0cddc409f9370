"""What every resolver works with: one :class:`ApiContext` per server, shared by all requests."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from toolplan.api.events import EventHub
from toolplan.api.runs import BackgroundRuns
from toolplan.config import Settings
from toolplan.engine.recorder import EventListener
from toolplan.execution.context import ExecutionContext, new_worker_id
from toolplan.service import wiring
from toolplan.store.protocol import Store
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from toolplan.planning.context import PlannerContext

__all__ = ["ApiContext"]


class ApiContext:
    """The server's settings, store, tool catalog, running executions and (lazily) its planner."""

    def __init__(self, settings: Settings, store: Store, catalog: ToolCatalog) -> None:
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.worker_id = new_worker_id()
        """One lease owner for every run of this server: a run stopped by a store outage leaves
        its lease behind, and ``executePlan`` takes it back at once instead of waiting for it to
        expire. (Two runs of one plan never overlap here: :class:`BackgroundRuns` joins them.)"""
        self.events = EventHub()
        self.runs = BackgroundRuns(self.execution_context, store, self.events)
        self._planner: PlannerContext | None = None
        self._planner_lock = asyncio.Lock()

    def execution_context(self, listener: EventListener | None = None) -> ExecutionContext:
        """The context of one execution, as the CLI builds it, with ``listener`` for its events."""
        return wiring.execution_context(
            self.settings,
            store=self.store,
            catalog=self.catalog,
            listener=listener,
            worker_id=self.worker_id,
        )

    async def planner(self) -> PlannerContext:
        """The planner context, built on first use and then reused.

        A server without a model configuration serves everything else; planning raises
        :class:`~toolplan.errors.LLMUnavailable` with the reason (and tries again next time).
        """
        async with self._planner_lock:
            if self._planner is None:
                from toolplan.planning.setup import planner_context_from_env

                self._planner = await asyncio.to_thread(
                    planner_context_from_env,
                    settings=self.settings,
                    store=self.store,
                    catalog=self.catalog,
                )
            return self._planner

    async def close(self) -> None:
        """Stop the executions running here and end every event subscription."""
        await self.runs.close()
        self.events.close_all()
