"""What one execution needs: store, catalog, options, an event listener, who runs it, and how."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from toolplan.config.policies import ExecutionOptions
from toolplan.engine.recorder import EventListener
from toolplan.store.protocol import ExecutionRecord, PlanRecord, Store
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "DetachedBackend",
    "ExecutionBackend",
    "ExecutionContext",
    "WakeableBackend",
    "new_worker_id",
]


def new_worker_id() -> str:
    """``host:pid:random``: unique per process, and tells whether a lease holder is still alive."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@runtime_checkable
class ExecutionBackend(Protocol):
    """Runs (or resumes) the unfinished steps of one stored plan to a final status."""

    async def run(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        """Run the plan's unfinished steps; return the final execution record."""
        ...


@runtime_checkable
class DetachedBackend(ExecutionBackend, Protocol):
    """A backend whose workers run plans elsewhere, so a plan can be handed over without waiting."""

    async def start(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        """Queue the plan for the backend's workers; return its execution record at once."""
        ...


@runtime_checkable
class WakeableBackend(ExecutionBackend, Protocol):
    """A backend whose runs wait, durably and elsewhere, for a change in the store (a Temporal
    workflow waiting for a person's decision): told when one was made that it cannot see
    otherwise (a cancel). Decisions reach it through :meth:`ExecutionBackend.run` and
    :meth:`DetachedBackend.start`, which every decision's continuation calls."""

    async def wake(self, plan_id: str) -> None:
        """Tell whatever waits on ``plan_id``'s execution to read the store again."""
        ...


@dataclass
class ExecutionContext:
    """What :func:`~toolplan.service.operations.execute_stored_plan`, the execution graph's nodes and an
    :class:`~toolplan.runs.backend.ExecutionBackend` work with."""

    store: Store
    catalog: ToolCatalog
    options: ExecutionOptions = field(default_factory=ExecutionOptions)
    listener: EventListener | None = None
    """Told about every step transition of runs in this process (progress, the API's events)."""
    worker_id: str = field(default_factory=new_worker_id)
    backend: ExecutionBackend | None = None
    """Runs the steps; ``None``: in this process
    (:func:`~toolplan.runs.backend.backend_of`)."""
