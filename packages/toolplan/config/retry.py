"""Retrying a tool call: one frozen policy, and the one place a retry is decided.

:meth:`RetryPolicy.after` is asked after every failed attempt, by the in-process engine
(:func:`toolplan.engine.attempts.with_retries`) and by the Temporal step activity alike, so both
backends retry exactly the same failures, the same number of times, after the same backoff. As
LangGraph's ``RetryPolicy(retry_on=...)`` takes exception types or a predicate, ``retry_on`` here
takes failure kinds (:data:`~toolplan.errors.FailureKind`) or a predicate
``retry_on(failure, tool) -> bool`` given the :class:`~toolplan.errors.AttemptFailed` (with the
exception the tool raised) and the tool's name.

A tool may declare its own ``max_attempts`` and ``retry_on`` (``toolplan.tagged(tool,
max_attempts=5, retry_on={"timeout"})``); a step's ``maxAttempts`` in the plan wins over both
(:meth:`RetryPolicy.for_call`). Attempts count across runs: a step resumed after a crash has
``max_attempts`` in all, the earlier run's included, and at least one more.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from toolplan.errors import AttemptFailed, FailureKind, failure_kinds
from toolplan.tools.catalog import MAX_ATTEMPTS_KEY, RETRY_ON_KEY

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["TRANSIENT", "RetryOn", "RetryPolicy"]

RetryOn: TypeAlias = Callable[[AttemptFailed, str], bool]
"""A predicate ``retry_on(failure, tool)``: whether the failed attempt of ``tool`` (its name)
may be tried again, attempts left aside."""

TRANSIENT: frozenset[FailureKind] = frozenset({"timeout", "exception"})
"""The failures retried by default: a timeout and an unexpected exception may pass on a retry;
a business error (``ToolException``), rejected arguments and an output the record cannot hold
would come again (and the tool already ran)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts, exponential backoff with jitter, and which failures are retried.

    By default a timeout and an unexpected exception are retried up to ``max_attempts``; a tool
    raising ``langchain_core.tools.ToolException`` reports a business error and is never retried
    (nor are rejected arguments, nor an output the record cannot hold).
    """

    max_attempts: int = 3
    """Attempts per call, the first included; a tool's own and a step's ``maxAttempts`` win."""
    initial_backoff: float = 0.5
    """Seconds before the second attempt."""
    backoff_factor: float = 2.0
    max_backoff: float = 10.0
    jitter: float = 0.25
    """Each delay is scaled by a random factor in [1 - jitter, 1 + jitter]."""
    retry_on: Collection[FailureKind] | RetryOn = TRANSIENT
    """Failure kinds that are retried, or a predicate ``retry_on(failure, tool)``. Kinds cross
    to Temporal workers; a predicate cannot (declare it on the tool instead: the workers load
    the tool, and with it its ``retry_on``)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not callable(self.retry_on):
            object.__setattr__(self, "retry_on", failure_kinds(self.retry_on))

    @property
    def kinds(self) -> frozenset[FailureKind] | None:
        """The failure kinds retried; ``None`` when a predicate decides."""
        return None if callable(self.retry_on) else frozenset(self.retry_on)

    def retries(self, failure: AttemptFailed, tool: str) -> bool:
        """Whether ``failure`` of ``tool`` may be tried again, attempts left aside."""
        if callable(self.retry_on):
            return bool(self.retry_on(failure, tool))
        return failure.kind in self.retry_on

    def delay(self, failed_attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after attempt number ``failed_attempt`` (1-based) failed."""
        base = min(
            self.max_backoff, self.initial_backoff * self.backoff_factor ** (failed_attempt - 1)
        )
        spread = (rng or random).uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else 1.0
        return max(0.0, base * spread)

    def after(
        self, failure: AttemptFailed, tool: str, attempts: int, rng: random.Random | None = None
    ) -> float | None:
        """The one retry decision. ``attempts`` attempts of a call of ``tool`` were made (an
        earlier run's included), the last failing with ``failure``: the seconds to wait before
        the next attempt, or ``None`` when none follows (the call gives up: its fallback, or
        its failure)."""
        if attempts >= self.max_attempts or not self.retries(failure, tool):
            return None
        return self.delay(attempts, rng)

    def exhausted(self, failure: AttemptFailed, tool: str, attempts: int) -> bool:
        """Whether the call gave up because its attempts ran out (not because ``failure`` is
        one that is never retried): its error then says how many were made."""
        return 1 < self.max_attempts <= attempts and self.retries(failure, tool)

    def for_call(self, tool: BaseTool, max_attempts: int | None = None) -> RetryPolicy:
        """The policy of one call of ``tool``: the tool's own ``max_attempts`` and ``retry_on``
        (declared with ``toolplan.tagged``) over this one, and a step's ``maxAttempts``
        (``max_attempts``) over both."""
        metadata = tool.metadata or {}
        changes: dict[str, Any] = {}
        if metadata.get(MAX_ATTEMPTS_KEY) is not None:
            changes["max_attempts"] = metadata[MAX_ATTEMPTS_KEY]
        if metadata.get(RETRY_ON_KEY) is not None:
            changes["retry_on"] = metadata[RETRY_ON_KEY]
        if max_attempts:
            changes["max_attempts"] = max_attempts
        return replace(self, **changes) if changes else self
