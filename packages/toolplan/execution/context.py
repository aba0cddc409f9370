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

__all__ = ["ExecutionContext", "backend_for", "new_worker_id"]


def new_worker_id() -> str:
    """``host:pid:random``: unique per process, and tells whether a lease holder is still alive."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _in_process() -> ExecutionBackend:
    from toolplan.execution.backend import InProcessBackend

    return InProcessBackend()


def backend_for(settings: Settings) -> ExecutionBackend:
    """The backend the settings choose: Temporal when ``TOOLPLAN_TEMPORAL_ADDRESS`` (or
    ``--temporal-address``) is set, else this process."""
    if not settings.temporal.enabled:
        return _in_process()
    try:
        from toolplan.temporal import temporal_backend
    except ImportError as error:
        from toolplan.errors import InvalidInput

        raise InvalidInput(
            f"TOOLPLAN_TEMPORAL_ADDRESS is set but the Temporal SDK is missing ({error}); "
            "install it with: pip install 'toolplan[temporal]'"
        ) from None
    return temporal_backend(settings.temporal)


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
        backend: ExecutionBackend | None = None,
    ) -> ExecutionContext:
        """The context every entry point uses: the settings' execution options and limits, and
        the backend they choose (:func:`backend_for`) unless ``backend`` is given.

        A long-lived process (the API server) passes one ``worker_id`` for all its runs, so that
        after a store outage it can take back the lease its own failed run still holds.
        """
        return cls(
            store=store,
            catalog=catalog,
            options=settings.execution,
            listener=listener,
            worker_id=worker_id or new_worker_id(),
            backend=backend or backend_for(settings),
        )
