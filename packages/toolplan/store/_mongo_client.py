"""Connecting the MongoDB store: client options, the database a URI names, and driver errors
turned into toolplan's errors with the URI's password hidden."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pymongo import MongoClient
from pymongo.errors import ConfigurationError, InvalidURI
from pymongo.write_concern import WriteConcern

from toolplan.errors import InvalidInput, StoreUnavailable, ToolplanError
from toolplan.store._mongo_faults import TIMEOUT_ENV, translate
from toolplan.store._mongo_faults import reason as fault_reason

if TYPE_CHECKING:
    from pymongo.database import Database

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_TIMEOUT_MS",
    "TIMEOUT_ENV",
    "MongoConnection",
    "client_options",
    "database_name",
]

DEFAULT_DATABASE = "toolplan"
"""The database used when the URI names none (``mongodb://host:27017``)."""

DEFAULT_TIMEOUT_MS = 5000
"""Server selection and connect timeout; socket reads wait three times as long."""

Document = dict[str, Any]


def client_options(uri: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[str, Any]:
    """Keyword arguments for ``MongoClient``: toolplan's defaults for what the URI leaves unset,
    ``timeout_ms`` (``TOOLPLAN_MONGO_TIMEOUT_MS``, which the settings read) among them.

    ``w="majority"`` is always applied: leases and claims are only safe with acknowledged,
    majority-committed writes.
    """
    given = {key.lower() for key, _ in parse_qsl(urlsplit(uri).query)}
    timeout = timeout_ms
    defaults: dict[str, Any] = {
        "serverSelectionTimeoutMS": timeout,
        "connectTimeoutMS": timeout,
        # Without a socket timeout, a server that stops answering (paused, partitioned) would
        # block a command forever instead of failing with a clear error.
        "socketTimeoutMS": timeout * 3,
        "appname": "toolplan",
    }
    options = {key: value for key, value in defaults.items() if key.lower() not in given}
    options["w"] = "majority"
    return options


def database_name(uri: str) -> str:
    """The database a store URI names, or :data:`DEFAULT_DATABASE`."""
    name = unquote(urlsplit(uri).path.lstrip("/"))
    return name or DEFAULT_DATABASE


class MongoConnection:
    """A ``MongoClient`` and the database of one store URI; ``uri`` is safe to print."""

    def __init__(self, uri: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        from toolplan.store._uris import redact_uri

        self.uri = redact_uri(uri)
        self._password = urlsplit(uri).password
        try:
            self.client: MongoClient[Document] = MongoClient(uri, **client_options(uri, timeout_ms))
        except (ConfigurationError, ValueError, TypeError) as error:
            # pymongo reports some malformed URIs (a bad port) and option values as ValueError.
            reason = self._scrub(fault_reason(error))
            if (
                isinstance(error, ConfigurationError)
                and not isinstance(error, InvalidURI)
                and uri.startswith("mongodb+srv://")
            ):
                # The SRV/TXT lookup failed: the cluster cannot be found right now.
                raise StoreUnavailable(
                    f"cannot reach the MongoDB store {self.uri!r}: {reason}"
                ) from None
            raise InvalidInput(
                f"invalid MongoDB store URI {self.uri!r}: {reason} "
                "(expected mongodb://host:port/dbname or mongodb+srv://host/dbname)"
            ) from None
        self.db: Database[Document] = self.client.get_database(
            database_name(uri), write_concern=WriteConcern(w="majority")
        )

    def _scrub(self, text: str) -> str:
        return text.replace(self._password, "***") if self._password else text

    def translate(self, error: BaseException) -> ToolplanError:
        """The toolplan error for a driver error, naming the URI (see :mod:`._mongo_faults`)."""
        return translate(error, self.uri, self._password)

    def close(self) -> None:
        """Close the client and its connection pool."""
        self.client.close()
