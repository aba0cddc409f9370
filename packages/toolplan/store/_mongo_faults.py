"""Every MongoDB driver error, mapped in one place: what the MongoDB store raises instead.

A store method decorated with :func:`guarded` never lets a pymongo or bson error out:

- the server is unreachable, times out, refuses the credentials, is out of disk, or fails a
  command → :class:`~toolplan.errors.StoreUnavailable` (exit 3);
- a document over MongoDB's size limit, or a value BSON cannot encode → :class:`InvalidInput`
  (exit 2): the input is what is wrong, and a retry would fail the same way.

Each message is one line that names the store with its password hidden, and the cause.
Transient errors are retried by the driver itself (retryable reads and writes, server selection
within ``TOOLPLAN_MONGO_TIMEOUT_MS``); what reaches this module has already exhausted that.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from bson.errors import BSONError, InvalidDocument
from pymongo.errors import (
    ConnectionFailure,
    DocumentTooLarge,
    OperationFailure,
    PyMongoError,
)

from toolplan.errors import InvalidInput, StoreUnavailable, ToolplanError

__all__ = ["MONGO_ERRORS", "TIMEOUT_ENV", "guarded", "reason", "translate"]

TIMEOUT_ENV = "TOOLPLAN_MONGO_TIMEOUT_MS"
"""Environment variable overriding the client's server-selection and connect timeout (ms)."""

MONGO_ERRORS: tuple[type[Exception], ...] = (PyMongoError, BSONError, UnicodeEncodeError)
"""What the driver raises: server and network errors, and values BSON cannot encode."""

_TOO_LARGE_CODES = frozenset({10334, 17419, 17420, 16493, 2})
"""Server codes for documents over the size limit (BSONObjectTooLarge, DocumentTooLarge...).
Code 2 (BadValue) only counts when its message says so; see :func:`_too_large`."""
_AUTH_CODES = frozenset({13, 18})  # Unauthorized, AuthenticationFailed
_DISK_CODES = frozenset({14031})  # OutOfDiskSpace


def reason(error: BaseException) -> str:
    """The useful part of a driver message (server selection errors append a topology dump)."""
    text = str(error).split(", Timeout:")[0].split(", full error:")[0].strip()
    return text[:300] or type(error).__name__


def _too_large(error: BaseException) -> bool:
    if isinstance(error, DocumentTooLarge):
        return True
    if isinstance(error, OperationFailure) and error.code in _TOO_LARGE_CODES:
        text = str(error).lower()
        return error.code != 2 or "too large" in text or "size" in text
    return False


def translate(error: BaseException, uri: str, password: str | None = None) -> ToolplanError:
    """The toolplan error for a driver error raised by the store at ``uri`` (password hidden)."""

    def scrub(text: str) -> str:
        return text.replace(password, "***") if password else text

    detail = scrub(reason(error))
    if _too_large(error):
        return InvalidInput(
            f"a document is too large for the MongoDB store {uri!r} (MongoDB stores at most 16 MB "
            f"per document): {detail}"
        )
    if isinstance(error, UnicodeEncodeError):
        return InvalidInput(
            f"the MongoDB store {uri!r} cannot store a string that is not valid Unicode "
            f"(lone surrogate at position {error.start})"
        )
    if isinstance(error, InvalidDocument | BSONError):
        return InvalidInput(f"the MongoDB store {uri!r} cannot store a value: {detail}")
    if isinstance(error, ConnectionFailure):
        return StoreUnavailable(
            f"cannot reach the MongoDB store {uri!r}: {detail}. Check that the server is "
            f"running and the URI is right (timeouts: {TIMEOUT_ENV})"
        )
    if isinstance(error, OperationFailure) and error.code in _AUTH_CODES:
        return StoreUnavailable(
            f"the MongoDB store {uri!r} refused access: {detail} (check the user, password and "
            "authSource in the URI)"
        )
    if isinstance(error, OperationFailure) and error.code in _DISK_CODES:
        return StoreUnavailable(f"the MongoDB store {uri!r} is out of disk space: {detail}")
    return StoreUnavailable(f"the MongoDB store {uri!r} failed: {detail}")


class _HasConnection(Protocol):
    def _translate(self, error: BaseException) -> ToolplanError: ...


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound=_HasConnection)


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Decorate a store method so every driver error leaves it translated (see the module)."""

    @functools.wraps(method)
    def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except MONGO_ERRORS as error:
            raise self._translate(error) from None

    return wrapper
