"""Connecting to Temporal, and its failures as toolplan errors (exit code 3, one line).

Clients are kept per event loop (a client belongs to the loop it was created on) and dropped at
interpreter exit, before Python finalizes: a Temporal client still alive while the interpreter
shuts down can crash it from the SDK's Rust threads (temporalio/sdk-python#300), which would
turn a clean exit code into a signal.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import weakref
from collections.abc import Iterator

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from toolplan.config import TemporalSettings
from toolplan.errors import InvalidInput, TemporalUnavailable

__all__ = ["connect", "temporal_errors"]

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[TemporalSettings, Client]] = (
    weakref.WeakKeyDictionary()
)

_UNAVAILABLE = {
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.CANCELLED,
    RPCStatusCode.UNKNOWN,
    RPCStatusCode.RESOURCE_EXHAUSTED,
    RPCStatusCode.INTERNAL,
}


@atexit.register
def _drop_clients() -> None:
    _clients.clear()
    gc.collect()


def _where(settings: TemporalSettings) -> str:
    return f"the Temporal server at {settings.address} (namespace {settings.namespace!r})"


def _unavailable(settings: TemporalSettings, cause: str) -> TemporalUnavailable:
    return TemporalUnavailable(
        f"cannot reach {_where(settings)}: {cause}; start it (for example `temporal server "
        "start-dev`) or fix TOOLPLAN_TEMPORAL_ADDRESS / --temporal-address",
        details={"temporalAddress": settings.address},
    )


def _short(text: str) -> str:
    """The reason inside the SDK's connection error (its transport errors are long)."""
    for marker in ("Connection refused", "dns error", "timed out", "No route to host"):
        if marker.lower() in text.lower():
            return marker.lower()
    return " ".join(text.split())[:200]


@contextlib.contextmanager
def temporal_errors(settings: TemporalSettings) -> Iterator[None]:
    """Temporal's connection and service failures as :class:`TemporalUnavailable`; a missing
    namespace as the same, naming it."""
    try:
        yield
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND and "namespace" in error.message.lower():
            raise TemporalUnavailable(
                f"{_where(settings)} has no namespace {settings.namespace!r}: create it "
                f"(`temporal operator namespace create {settings.namespace}`) or fix "
                "TOOLPLAN_TEMPORAL_NAMESPACE",
                details={"temporalAddress": settings.address},
            ) from None
        if error.status in _UNAVAILABLE:
            raise _unavailable(settings, _short(error.message)) from None
        raise


async def connect(settings: TemporalSettings) -> Client:
    """A client for ``settings`` on the running event loop (connected once per loop)."""
    if settings.address is None:
        raise InvalidInput(
            "no Temporal server configured: set TOOLPLAN_TEMPORAL_ADDRESS (or pass "
            "--temporal-address), e.g. 127.0.0.1:7233"
        )
    loop = asyncio.get_running_loop()
    per_loop = _clients.setdefault(loop, {})
    client = per_loop.get(settings)
    if client is None:
        with temporal_errors(settings):
            try:
                client = await Client.connect(settings.address, namespace=settings.namespace)
            except RuntimeError as error:  # the SDK's "Failed client connect: ..."
                raise _unavailable(settings, _short(str(error))) from None
            # Connecting is lazy about the namespace: ask once, so a wrong one fails here.
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=settings.namespace)
            )
        per_loop[settings] = client
    return client
