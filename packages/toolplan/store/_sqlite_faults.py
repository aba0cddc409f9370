"""Every SQLite error, mapped in one place: what the SQLite store raises instead of ``sqlite3``'s.

A store method decorated with :func:`guarded` never lets a ``sqlite3.Error`` out. A lock held by
another process (``SQLITE_BUSY``/``SQLITE_LOCKED``) is retried with backoff for at most
``TOOLPLAN_STORE_BUSY_TIMEOUT`` seconds; then it, and every other infrastructure fault (read-only
file, disk full or file-size limit, file removed while open, unreadable or corrupt file) becomes
:class:`~toolplan.errors.StoreUnavailable` (exit 3) with one line naming the store and the cause.
A value SQLite refuses as too big becomes :class:`~toolplan.errors.InvalidInput` (exit 2).

Retrying a whole method is safe: every write either runs in one ``BEGIN IMMEDIATE`` transaction
that is rolled back on error, or is a single idempotent statement, so a failed attempt left nothing.
"""

from __future__ import annotations

import functools
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from toolplan.errors import InvalidInput, StoreUnavailable, ToolplanError

__all__ = [
    "BUSY_TIMEOUT_ENV",
    "DEFAULT_BUSY_TIMEOUT",
    "file_gone",
    "guarded",
    "is_busy",
    "retry_busy",
    "translate",
]

BUSY_TIMEOUT_ENV = "TOOLPLAN_STORE_BUSY_TIMEOUT"
"""The variable of the seconds a store operation waits for a lock held by another process
before giving up (exit 3): read by the settings (:class:`toolplan.store.StoreOptions`), named
in the message that says it ran out."""

DEFAULT_BUSY_TIMEOUT = 30.0

_FIRST_DELAY = 0.005
_MAX_DELAY = 0.25

# Primary result codes (the low byte of extended codes), from sqlite3.h.
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _TOOBIG, _NOTADB = (
    5,
    6,
    8,
    10,
    11,
    13,
    14,
    18,
    26,
)
_READONLY_DBMOVED = 1032

P = ParamSpec("P")
R = TypeVar("R")


def _code(error: sqlite3.Error) -> int:
    return getattr(error, "sqlite_errorcode", None) or 0


def is_busy(error: BaseException) -> bool:
    """Whether ``error`` means "another connection holds the lock": worth waiting and retrying."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = _code(error)
    if code:
        return code & 0xFF in (_BUSY, _LOCKED)
    text = str(error)
    return "locked" in text or "busy" in text


def file_gone(uri: str) -> StoreUnavailable:
    """The error for a store whose file was deleted, moved or replaced while it was open.

    SQLite itself notices this only in rollback-journal mode; in WAL mode its writes would go on
    into the deleted file and be lost, so the store checks the file's identity before each call.
    """
    return StoreUnavailable(
        f"cannot write to the SQLite store {uri!r}: its file was removed or moved while in use"
    )


def translate(error: sqlite3.Error, uri: str, *, waited: float | None = None) -> ToolplanError:
    """The toolplan error for a ``sqlite3`` error raised by the store at ``uri``: one line naming
    the store and the cause."""
    code = _code(error)
    primary = code & 0xFF
    detail = str(error) or type(error).__name__
    if is_busy(error):
        how_long = f"still locked after {waited:.3g} s" if waited is not None else "locked"
        return StoreUnavailable(
            f"the SQLite store {uri!r} is locked by another process ({how_long}; "
            f"{BUSY_TIMEOUT_ENV} sets how long to wait)"
        )
    if code == _READONLY_DBMOVED:
        return file_gone(uri)
    if primary == _READONLY:
        return StoreUnavailable(
            f"cannot write to the SQLite store {uri!r}: the file is read-only ({detail}); check "
            "its permissions and those of its directory"
        )
    if primary == _FULL:
        return StoreUnavailable(f"cannot write to the SQLite store {uri!r}: the disk is full")
    if primary == _IOERR:
        return StoreUnavailable(
            f"the SQLite store {uri!r} failed: {detail} (disk full, a file-size limit, or a "
            "failing disk)"
        )
    if primary == _CANTOPEN:
        return StoreUnavailable(
            f"cannot open the SQLite store {uri!r}: {detail} (check that the path exists and is "
            "writable)"
        )
    if primary in (_CORRUPT, _NOTADB):
        return StoreUnavailable(
            f"the SQLite store {uri!r} is not a usable database: {detail} (restore it from a "
            "backup or point TOOLPLAN_STORE at another file)"
        )
    if primary == _TOOBIG or isinstance(error, sqlite3.DataError):
        return InvalidInput(f"the SQLite store {uri!r} refused a value: {detail}")
    return StoreUnavailable(f"the SQLite store {uri!r} failed: {detail}")


def retry_busy(call: Callable[[], R], uri: str, timeout: float) -> R:
    """``call()``, retried with exponential backoff (with jitter) while SQLite says busy, for at
    most ``timeout`` seconds; every ``sqlite3`` error that escapes is translated."""
    started = time.monotonic()
    delay = _FIRST_DELAY
    while True:
        try:
            return call()
        except sqlite3.Error as error:
            waited = time.monotonic() - started
            if not is_busy(error) or waited >= timeout:
                raise translate(error, uri, waited=waited) from None
        # The last sleep is cut to the deadline, so a busy store is tried for the whole timeout
        # (giving up early, before the next doubled delay, made the wait shorter than promised).
        remaining = timeout - (time.monotonic() - started)
        time.sleep(max(0.0, min(delay * random.uniform(0.5, 1.0), remaining)))
        delay = min(delay * 2, _MAX_DELAY)


class _Guarded(Protocol):
    uri: str
    busy_timeout: float

    def _check_file(self) -> None:
        """Raise :class:`StoreUnavailable` if the store's file is no longer the one it opened."""


_G = TypeVar("_G", bound=_Guarded)
_depth = threading.local()


def guarded(
    method: Callable[Concatenate[_G, P], R],
) -> Callable[Concatenate[_G, P], R]:
    """Decorate a store method: busy errors are retried, every ``sqlite3`` error is translated.

    Only the outermost guarded call retries; one store method calling another does not multiply
    the wait.
    """

    @functools.wraps(method)
    def wrapper(self: _G, *args: P.args, **kwargs: P.kwargs) -> R:
        if getattr(_depth, "n", 0):
            return method(self, *args, **kwargs)
        _depth.n = 1
        try:
            self._check_file()
            return retry_busy(lambda: method(self, *args, **kwargs), self.uri, self.busy_timeout)
        finally:
            _depth.n = 0

    return wrapper
