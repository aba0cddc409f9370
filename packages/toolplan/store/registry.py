"""Store backends by URI scheme: ``open_store("sqlite:///...")`` looks the scheme up here.

Backends register through the ``toolplan.stores`` entry-point group, so a package adds one
without touching toolplan::

    [project.entry-points."toolplan.stores"]
    redis = "my_package.store:RedisStore"      # any callable: opener(uri) -> Store

An opener may also take a keyword ``options`` (:class:`StoreOptions`: how long to wait for a
lock or a server, from the settings the entry point read); :func:`toolplan.store.open_store`
passes them to openers that do. A store never reads the environment itself.

The built-in ``sqlite``, ``mongodb`` and ``mongodb+srv`` schemes are declared the same way in
toolplan's own metadata, with the same openers also known here for a source checkout that was
never installed. :func:`register_store` adds one at run time (tests, embedding applications).
A new backend must pass :mod:`toolplan_conformance`.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from toolplan._caches import register_cache
from toolplan.errors import InvalidInput
from toolplan.store._uris import redact_uri
from toolplan.store.protocol import Store, StoreOptions

__all__ = [
    "ENTRY_POINT_GROUP",
    "SQLITE_SUFFIXES",
    "StoreOpener",
    "StoreOptions",
    "opener_for",
    "register_store",
    "store_schemes",
    "store_uri_for",
    "takes_options",
]

ENTRY_POINT_GROUP = "toolplan.stores"

StoreOpener = Callable[[str], Store]
"""Opens the store at a URI: raises ``InvalidInput`` for a URI it cannot use and
``StoreUnavailable`` when the store cannot be reached."""


@functools.lru_cache(maxsize=64)
def takes_options(opener: StoreOpener) -> bool:
    """Whether ``opener`` takes the keyword ``options`` (:class:`StoreOptions`)."""
    try:
        return "options" in inspect.signature(opener).parameters
    except (TypeError, ValueError):
        return False


_BUILTIN: dict[str, str] = {
    "sqlite": "toolplan.store.sqlite:open_sqlite",
    "mongodb": "toolplan.store.mongo:MongoStore",
    "mongodb+srv": "toolplan.store.mongo:MongoStore",
}
"""The built-in schemes, as declared in pyproject.toml's entry points."""

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
"""A bare path ending in one of these names a SQLite file (:func:`store_uri_for`)."""

_registered: dict[str, StoreOpener] = {}
_declared: dict[str, str] | None = None
_lock = threading.Lock()


def _forget_entry_points() -> None:
    global _declared
    with _lock:
        _declared = None


register_cache(_forget_entry_points)  # entry points are read once, until clear_caches()


def register_store(scheme: str, opener: StoreOpener) -> None:
    """Open URIs of ``scheme`` (``scheme://...``) with ``opener`` in this process; it takes
    precedence over entry points."""
    with _lock:
        _registered[scheme.lower()] = opener


def _entry_points() -> dict[str, str]:
    global _declared
    with _lock:
        if _declared is None:
            _declared = dict(_BUILTIN)
            _declared.update(
                {ep.name.lower(): ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
            )
        return _declared


def store_schemes() -> list[str]:
    """Every scheme a store can be opened with."""
    return sorted(set(_entry_points()) | set(_registered))


def _load(target: str) -> StoreOpener:
    module, _, name = target.partition(":")
    opener: StoreOpener = getattr(importlib.import_module(module), name)
    return opener


def store_uri_for(location: str) -> str:
    """``location`` as a store URI: a URI (``scheme://...``) as given; a bare path that names a
    SQLite file (it ends in ``.db``, ``.sqlite`` or ``.sqlite3``, or is an existing file) as its
    absolute ``sqlite:///`` URI, so ``--store ./runs.db`` means what a user expects. Anything
    else is left for :func:`opener_for` to refuse."""
    if "://" in location or not location.strip():
        return location
    path = Path(location).expanduser()
    if path.suffix.lower() in SQLITE_SUFFIXES or path.is_file():
        return f"sqlite:///{path.resolve()}"
    return location


def opener_for(uri: str) -> StoreOpener:
    """The opener of ``uri``'s scheme; :class:`InvalidInput` naming the known schemes if none."""
    scheme = uri.partition("://")[0].lower() if "://" in uri else ""
    with _lock:
        opener = _registered.get(scheme)
    if opener is not None:
        return opener
    target = _entry_points().get(scheme)
    if target is None:
        bare = "" if "://" in uri else f" (or a path ending in {', '.join(SQLITE_SUFFIXES)})"
        raise InvalidInput(
            f"unsupported store URI {redact_uri(uri)!r}; use sqlite:///path/to/file.db{bare} or "
            f"mongodb://host:port/dbname (known schemes: {', '.join(store_schemes())})"
        )
    try:
        return _load(target)
    except ImportError as error:
        raise InvalidInput(f"the {scheme!r} store backend cannot be loaded: {error}") from None
