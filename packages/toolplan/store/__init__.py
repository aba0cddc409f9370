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
    StoreOptions,
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
    "StoreOptions",
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


def open_store(
    uri: str | None = None, *, create: bool = True, options: StoreOptions | None = None
) -> Store:
    """Open the store at ``uri`` (default: ``.toolplan/toolplan.db`` where
    :func:`toolplan.project.default_store_uri` finds it) with the backend registered
    for its scheme (:mod:`toolplan.store.registry`): ``sqlite:///path``, ``mongodb://...``, or any
    scheme a package registers. A bare path to a SQLite file (``runs.db``, ``~/data.sqlite``, an
    existing file) means ``sqlite:///`` that path, made absolute.

    With ``create=False`` (commands that only read, decide or cancel: ``show``, ``list``,
    ``cancel``, ``approve``, ``deny``, ``execute``, ``cache``, ``tools``) a SQLite file that does
    not exist is :class:`~toolplan.errors.NotFound` (an ``InvalidInput``) naming it, and
    nothing is created (no ``.toolplan/`` appears in an unrelated folder). A SQLite path into a
    folder that does not exist is :class:`~toolplan.errors.InvalidInput` naming the folder,
    except a default store's (``.toolplan/``, or the project config's ``store``), which is made.

    ``options`` (:class:`StoreOptions`: how long to wait for a lock or a server) go to a
    backend whose opener takes them; by default, their defaults.

    Raises :class:`~toolplan.errors.InvalidInput` for an unsupported URI and
    :class:`~toolplan.errors.StoreUnavailable` when the store cannot be reached.
    """
    from toolplan.store.registry import opener_for, store_uri_for, takes_options

    if not uri:
        from toolplan.project import default_store_uri, find_project

        uri = default_store_uri(find_project())
    uri = store_uri_for(uri)
    opener = opener_for(uri)
    if uri.startswith("sqlite:///") and uri != "sqlite:///:memory:":
        _check_sqlite_path(uri, create=create)
    if options is not None and takes_options(opener):
        return opener(uri, options=options)  # type: ignore[call-arg]
    return opener(uri)


def _check_sqlite_path(uri: str, *, create: bool) -> None:
    """Refuse a SQLite path that would make something the user did not ask for: with
    ``create=False`` a file that does not exist; otherwise a folder that does not exist (a typo
    in ``--store`` would silently make a tree of folders). The folders made are those of a
    default store: ``.toolplan/`` in a folder that exists, and the store the project's config
    names (its ``store`` key is the project's default)."""
    from pathlib import Path

    from toolplan.errors import InvalidInput, NotFound
    from toolplan.project import DATA_DIR, find_project
    from toolplan.store.registry import store_uri_for

    path = Path(uri[len("sqlite:///") :]).expanduser().resolve()
    if not create and not path.is_file():
        raise NotFound(
            f"no toolplan store at {path} (nothing was created there): run the command in "
            "the project's folder, or name the store with --store or TOOLPLAN_STORE"
        )
    folder = path.parent
    if folder.is_dir() or (folder.name == DATA_DIR and folder.parent.is_dir()):
        return
    project = find_project()
    if project is None or project.store is None or store_uri_for(project.store) != uri:
        raise InvalidInput(
            f"the folder of the SQLite store {str(path)!r} does not exist: {str(folder)!r}. "
            "Create it first (mkdir -p), or name a store in a folder that exists"
        )
