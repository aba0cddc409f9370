"""Stores: where plans, executions and checkpoints live. Open one with :func:`open_store`."""

from __future__ import annotations

import re
from pathlib import Path

from toolplan.errors import InvalidInput
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    ExecutionRecord,
    ExecutionStatus,
    PlanRecord,
    PlanStatus,
    RequestRecord,
    StepRecord,
    StepStatus,
    Store,
    cap_output,
    utc_now,
)

__all__ = [
    "DEFAULT_STORE_URI",
    "TERMINAL_EXECUTION_STATUSES",
    "ExecutionRecord",
    "ExecutionStatus",
    "PlanRecord",
    "PlanStatus",
    "RequestRecord",
    "StepRecord",
    "StepStatus",
    "Store",
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
    """Open the store at ``uri`` (``sqlite:///path`` or ``mongodb://...``).

    Raises :class:`~toolplan.errors.InvalidInput` for an unsupported URI and
    :class:`~toolplan.errors.StoreUnavailable` when the store cannot be reached.
    """
    uri = uri or DEFAULT_STORE_URI
    if uri.startswith("sqlite:///"):
        from toolplan.store.sqlite import SqliteStore

        path = uri[len("sqlite:///") :]
        if not path or path == ":memory:":
            raise InvalidInput(
                "the SQLite store needs a file path (sqlite:///./.toolplan/toolplan.db); "
                "':memory:' cannot be shared by the engine and its checkpointer"
            )
        return SqliteStore(Path(path), uri=uri)
    if uri.startswith(("mongodb://", "mongodb+srv://")):
        try:
            from toolplan.store.mongo import MongoStore  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise InvalidInput("the MongoDB store is not available in this version") from None
        store: Store = MongoStore(uri)
        return store
    raise InvalidInput(
        f"unsupported store URI {redact_uri(uri)!r}; use sqlite:///path/to/file.db or "
        "mongodb://host:port/dbname"
    )
