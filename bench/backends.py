"""The stores a measure can run on: in memory, SQLite files in a temporary directory, and MongoDB
on a jongodb wire server (only when ``toolplan.store.mongo`` imports), or on the real server named
by ``TOOLPLAN_TEST_MONGODB_URI``.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.memstore import MemoryStore
from toolplan.store.protocol import Store

__all__ = ["BACKENDS", "mongo_is_jongodb", "mongo_pending_reason", "store_factory"]

BACKENDS: tuple[str, ...] = ("memory", "sqlite", "mongodb")


def mongo_pending_reason() -> str | None:
    """Why the MongoDB rows cannot run here, or ``None`` when they can."""
    try:
        import toolplan.store.mongo  # noqa: F401
    except ImportError as error:
        return f"pending: `toolplan.store.mongo` does not import in this tree ({error})"
    try:
        from tests.support.mongo_server import external_mongodb_uri, find_jongodb_binary

        if external_mongodb_uri() is None:
            find_jongodb_binary(install=True)
    except Exception as error:  # no server: report it in the results, do not crash the bench
        return f"pending: no MongoDB wire server available ({error})"
    return None


def mongo_is_jongodb() -> bool:
    """Whether the MongoDB rows run on jongodb (no ``TOOLPLAN_TEST_MONGODB_URI``)."""
    from tests.support.mongo_server import external_mongodb_uri

    return external_mongodb_uri() is None


@contextlib.contextmanager
def store_factory(kind: str) -> Iterator[Callable[[], Store]]:
    """A function returning a fresh, empty store of ``kind`` per call; everything it opened
    (stores, files, the jongodb process) is closed on exit."""
    opened: list[Store] = []

    def remember(store: Store) -> Store:
        opened.append(store)
        return store

    try:
        if kind == "memory":
            yield lambda: remember(MemoryStore())
        elif kind == "sqlite":
            from toolplan.store.sqlite import SqliteStore

            with tempfile.TemporaryDirectory(prefix="toolplan-bench-") as directory:
                counter = iter(range(1_000_000))
                yield lambda: remember(SqliteStore(Path(directory) / f"bench-{next(counter)}.db"))
                for store in opened:
                    store.close()
                opened.clear()
        elif kind == "mongodb":
            from tests.support.mongo_server import fresh_db_name, mongodb_test_server

            from toolplan.store import open_store

            with mongodb_test_server() as server:
                yield lambda: remember(open_store(server.uri_for(fresh_db_name("bench"))))
                for store in opened:
                    store.close()
                opened.clear()
        else:
            raise ValueError(f"unknown backend {kind!r}; use one of {', '.join(BACKENDS)}")
    finally:
        for store in opened:
            with contextlib.suppress(Exception):
                store.close()
