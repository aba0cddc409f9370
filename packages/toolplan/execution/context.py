"""What one execution needs: store, catalog, options, an event listener, who runs it, and how."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolplan.engine.policies import ExecutionOptions
from toolplan.engine.recorder import EventListener
from toolplan.store.protocol import Store
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from toolplan.config import Settings
    from toolplan.execution.backend import ExecutionBackend

__all__ = ["ExecutionContext", "new_worker_id"]


def new_worker_id() -> str:
    """``host:pid:random``: unique per process, and tells whether a lease holder is still alive."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _in_process() -> ExecutionBackend:
    from toolplan.execution.backend import InProcessBackend

    return InProcessBackend()


@dataclass
class ExecutionContext:
    """What :func:`~toolplan.operations.execute_stored_plan`, the execution graph's nodes and an
    :class:`~toolplan.execution.backend.ExecutionBackend` work with."""

    store: Store
    catalog: ToolCatalog
    options: ExecutionOptions = field(default_factory=ExecutionOptions)
    listener: EventListener | None = None
    """Told about every step transition of runs in this process (progress, the API's events)."""
    worker_id: str = field(default_factory=new_worker_id)
    backend: ExecutionBackend = field(default_factory=_in_process)
    """Runs the steps: in this process by default."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        store: Store,
        catalog: ToolCatalog,
        listener: EventListener | None = None,
        worker_id: str | None = None,
    ) -> ExecutionContext:
        """The context every entry point uses: the settings' execution options and limits.

        A long-lived process (the API server) passes one ``worker_id`` for all its runs, so that
        after a store outage it can take back the lease its own failed run still holds.
        """
        return cls(
            store=store,
            catalog=catalog,
            options=settings.execution,
            listener=listener,
            worker_id=worker_id or new_worker_id(),
        )
