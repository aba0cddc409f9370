"""The retry loop of a tool call: attempts numbered on from an earlier run's, retried only for
transient failures, with the policy's backoff between them; and the error of a fallback that
failed too.

A plain step (:class:`~toolplan.engine.step.StepRunner`) and each item of a ``forEach`` step
(:class:`~toolplan.engine.foreach.ForEachRunner`) retry the same way; what one attempt does and
how a retry is recorded are theirs, passed in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from toolplan.engine.toolcall import AttemptFailed, without_surrogates
from toolplan.errors import ExecutionBusy, Unavailable

__all__ = ["RUN_STOPPERS", "FallbackFailed", "GaveUp", "internal_error", "with_retries"]

RUN_STOPPERS: tuple[type[BaseException], ...] = (asyncio.CancelledError, Unavailable, ExecutionBusy)
"""What stops a run rather than failing a step: a cancellation, a store or service fault, a
lost lease. Every other exception raised while a step runs is the step's failure, recorded."""


def internal_error(step_id: str, error: BaseException, *, item: int | None = None) -> str:
    """The error recorded on a step (or one of its items) that an unexpected exception ended."""
    where = f"step {step_id!r}" + (f" item {item}" if item is not None else "")
    return without_surrogates(
        f"internal error in {where}: {type(error).__name__}: {error} (an unexpected exception, "
        "recorded as the step's failure; please report it)"
    )


T = TypeVar("T")


@dataclass(frozen=True)
class GaveUp:
    """No attempt is left: the last one, number ``attempt``, failed with ``failure``."""

    failure: AttemptFailed
    attempt: int


class FallbackFailed(Exception):
    """A step's (or an item's) fallback failed too; the message says both failures."""


async def with_retries(
    attempt: Callable[[int, bool], Awaitable[T]],
    *,
    prior: int,
    max_attempts: int,
    retrying: Callable[[int, AttemptFailed], None],
    backoff: Callable[[int], float],
) -> T | GaveUp:
    """``attempt(number, first)`` until it returns, at most ``max_attempts`` times.

    Numbers go on from ``prior`` (attempts an earlier run made). An :class:`AttemptFailed` that is
    not :attr:`~AttemptFailed.retryable`, or the last attempt's, ends the loop as :class:`GaveUp`;
    otherwise ``retrying(number, failure)`` is told and ``backoff(k)`` seconds are waited after the
    ``k``-th failure (1-based) before the next attempt.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
    index = 0
    while True:
        number = prior + index + 1
        try:
            return await attempt(number, index == 0)
        except AttemptFailed as failed:
            if not failed.retryable or index == max_attempts - 1:
                return GaveUp(failed, number)
            retrying(number, failed)
            index += 1
            await asyncio.sleep(backoff(index))
