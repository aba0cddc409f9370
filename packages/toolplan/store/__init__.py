"""Stores: where plans, executions and checkpoints live. Open one with :func:`open_store`."""

from __future__ import annotations

import re

from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    CheckpointStore,
    ExecutionLog,
    ExecutionRecord,
    ExecutionStatus,
    PlanRecord,
    PlanRepository,
    PlanStatus,
    RecordStore,
    RequestRecord,
    StepRecord,
    StepStatus,
    Store,
    WorkQueue,
    cap_output,
    utc_now,
)

__all__ = [
    "DEFAULT_STORE_URI",
    "TERMINAL_EXECUTION_STATUSES",
    "CheckpointStore",
    "ExecutionLog",
    "ExecutionRecord",
    "ExecutionStatus",
    "PlanRecord",
    "PlanRepository",
    "PlanStatus",
    "RecordStore",
    "RequestRecord",
    "StepRecord",
    "StepStatus",
    "Store",
    "WorkQueue",
    "cap_output",
    "open_store",
    "redact_uri",
    "utc_now",
]

DEFAULT_STORE_URI = "sqlite:///./.toolplan/toolplan.db"
"""The embedded default: a SQLite file under ``./.toolplan/``."""


def redact_uri(uri: str) -> str:
    """``uri`` with any password replaced by ``***`` (safe for messages and logs)."""
    return re.sub(r"(?<=://)([^:/@]+):([^@]*)@", r"\1:***@", uri)


def open_store(uri: str | None = None) -> Store:
    """Open the store at ``uri`` (default :data:`DEFAULT_STORE_URI`) with the backend registered
    for its scheme (:mod:`toolplan.store.registry`): ``sqlite:///path``, ``mongodb://...``, or any
    scheme a package registers.

    Raises :class:`~toolplan.errors.InvalidInput` for an unsupported URI and
    :class:`~toolplan.errors.StoreUnavailable` when the store cannot be reached.
    """
    from toolplan.store.registry import opener_for

    uri = uri or DEFAULT_STORE_URI
    return opener_for(uri)(uri)
