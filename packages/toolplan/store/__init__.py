"""Stores: where plans, executions and checkpoints live. Open one with :func:`open_store`."""

from __future__ import annotations

from toolplan.store._uris import redact_uri
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    CheckpointStore,
    ExecutionLog,
    ExecutionRecord,
    ExecutionStatus,
    ListedStatus,
    PlanPage,
    PlanRecord,
    PlanRepository,
    PlanStatus,
    PlanSummary,
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
    "ListedStatus",
    "PlanPage",
    "PlanRecord",
    "PlanRepository",
    "PlanStatus",
    "PlanSummary",
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
"""The embedded default's shape: a SQLite file under ``.toolplan/``. Which folder's is decided
per command (:func:`toolplan.project.default_store_uri`): the project's, else the nearest one
upwards that exists, else the current folder's."""


def open_store(uri: str | None = None, *, create: bool = True) -> Store:
    """Open the store at ``uri`` (default: ``.toolplan/toolplan.db`` where
    :func:`toolplan.project.default_store_uri` finds it) with the backend registered
    for its scheme (:mod:`toolplan.store.registry`): ``sqlite:///path``, ``mongodb://...``, or any
    scheme a package registers. A bare path to a SQLite file (``runs.db``, ``~/data.sqlite``, an
    existing file) means ``sqlite:///`` that path, made absolute.

    With ``create=False`` (commands that only read or cancel: ``show``, ``list``, ``cancel``)
    a SQLite file that does not exist is :class:`~toolplan.errors.InvalidInput` naming it, and
    nothing is created (no ``.toolplan/`` appears in an unrelated folder).

    Raises :class:`~toolplan.errors.InvalidInput` for an unsupported URI and
    :class:`~toolplan.errors.StoreUnavailable` when the store cannot be reached.
    """
    from toolplan.store.registry import opener_for, store_uri_for

    if not uri:
        from toolplan.project import default_store_uri, find_project

        uri = default_store_uri(find_project())
    uri = store_uri_for(uri)
    opener = opener_for(uri)
    if not create and uri.startswith("sqlite:///"):
        from pathlib import Path

        from toolplan.errors import InvalidInput

        path = Path(uri[len("sqlite:///") :]).expanduser().resolve()
        if not path.is_file():
            raise InvalidInput(
                f"no toolplan store at {path} (nothing was created there): run the command in "
                "the project's folder, or name the store with --store or TOOLPLAN_STORE"
            )
    return opener(uri)
