"""The lease on an execution: one process at a time runs a plan, and a dead one is taken over.

The lease lives on the execution record (``worker_id``, ``lease_until``). It is coordination,
not execution state: losing it never loses a transition, because every transition is in the step
records. A holder renews it every third of ``lease_seconds``; a holder that stops renewing (a
killed process) loses it when it expires, or at once when the store's record of the holder
(``owner_host``, ``owner_pid``) names a process on this host that no longer exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable
from typing import Protocol, TypeVar, cast

from toolplan.errors import ExecutionBusy, ExecutionGone
from toolplan.store.protocol import ExecutionLog, ExecutionRecord, LeaseReader, WorkQueue

__all__ = [
    "ENGINE_HOLDER_PREFIX",
    "acquire_lease",
    "holder_is_dead",
    "take_lease",
    "while_holding",
]

T = TypeVar("T")


class _Leases(WorkQueue, ExecutionLog, Protocol):
    """Leases, and the execution records they sit on (to tell a lost lease from a lost record)."""


ENGINE_HOLDER_PREFIX = "engine:"
"""Lease holders named with this prefix are a durable-workflow engine's run of the plan (the
Temporal backend's workflow), not a process: the process that took the lease for it may die
while the workflow goes on in another worker, so such a holder is never "dead"."""


def holder_is_dead(execution: ExecutionRecord) -> bool:
    """Whether the lease holder was a process on this host that no longer exists (read from the
    typed ``owner_host``/``owner_pid`` the store recorded with the lease)."""
    if (execution.worker_id or "").startswith(ENGINE_HOLDER_PREFIX):
        return False
    if execution.owner_pid is None or execution.owner_host != socket.gethostname():
        return False
    try:
        os.kill(execution.owner_pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def take_lease(
    store: _Leases, execution: ExecutionRecord, worker_id: str, lease_seconds: float
) -> ExecutionRecord:
    """Take the lease of ``execution`` for ``worker_id`` and return the execution as it stands
    under the lease, or raise :class:`ExecutionBusy` (blocking: call it off the event loop).

    ``execution`` (as last read) only tells whether its holder died; the returned record is read
    once the lease is held, so a step another holder finished meanwhile is never run again.
    """
    plan_id = execution.plan_id
    expected = execution.worker_id if holder_is_dead(execution) else None
    # The capability by its method: a runtime Protocol check costs more than taking the lease
    # on an in-memory store, once per execution.
    acquire_execution = getattr(store, "acquire_execution", None)
    if callable(acquire_execution):
        current = cast(LeaseReader, store).acquire_execution(
            plan_id, worker_id, lease_seconds, expected_owner=expected
        )
    elif store.acquire(plan_id, worker_id, lease_seconds, expected_owner=expected):
        current = store.get_execution(plan_id)
    else:
        current = None
    if current is None:
        raise ExecutionBusy(
            f"plan {plan_id!r} is being executed by {execution.worker_id} right now; "
            "wait for it to finish, then run `toolplan show` to see the result"
        )
    return current


async def acquire_lease(
    store: _Leases, execution: ExecutionRecord, worker_id: str, lease_seconds: float
) -> ExecutionRecord:
    """:func:`take_lease` off the event loop."""
    return await asyncio.to_thread(take_lease, store, execution, worker_id, lease_seconds)


async def _heartbeat(store: _Leases, plan_id: str, worker_id: str, lease: float) -> None:
    while True:
        await asyncio.sleep(lease / 3)
        if not await asyncio.to_thread(store.renew_lease, plan_id, worker_id, lease):
            if await asyncio.to_thread(store.get_execution, plan_id) is None:
                raise ExecutionGone(plan_id, "its lease cannot be renewed")
            raise ExecutionBusy(
                f"lost the lease on the execution of {plan_id!r} (another worker took it over)"
            )


async def while_holding(
    store: _Leases, plan_id: str, worker_id: str, lease_seconds: float, work: Awaitable[T]
) -> T:
    """Await ``work`` while renewing the lease; cancel it and raise :class:`ExecutionBusy` if the
    lease is lost (:class:`ExecutionGone` if the execution itself is). The lease is not
    released here: the caller releases it once the execution's final status is stored (or lets
    it expire when the run fails)."""
    task = asyncio.ensure_future(work)
    heartbeat = asyncio.ensure_future(_heartbeat(store, plan_id, worker_id, lease_seconds))
    try:
        done, _ = await asyncio.wait({task, heartbeat}, return_when=asyncio.FIRST_COMPLETED)
        if heartbeat in done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            heartbeat.result()  # raises ExecutionBusy
        return await task
    finally:
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await heartbeat
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
