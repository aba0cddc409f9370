"""Execution policies: frozen objects, so a run's behaviour is fixed when it starts. The retry
policy has a module of its own (:mod:`toolplan.config.retry`), re-exported here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from toolplan.config.retry import RetryPolicy
from toolplan.plan_format.plan import DEFAULT_MAX_ITEMS

__all__ = ["DEFAULT_CONCURRENCY", "ExecutionOptions", "RetryPolicy", "TimeoutPolicy", "quantile"]

DEFAULT_CONCURRENCY = 10


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank, so always an observed value)."""
    if not values:
        raise ValueError("quantile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class TimeoutPolicy:
    """How a step's timeout follows from its tool's observed durations."""

    enabled: bool = True
    """``adaptive_timeouts = false`` (project config) turns history-based timeouts off (the
    default applies)."""
    min_observations: int = 20
    """Observed durations a tool needs before history sets its timeout
    (``timeout_min_observations``)."""
    factor: float = 3.0
    """The timeout is this many times the observed ``quantile`` (``timeout_factor``)."""
    quantile: float = 0.99
    history: int = 100
    """Latest durations per tool that are read (``timeout_history``): the window
    follows a tool that got slower or faster."""
    floor: float = 1.0
    """Seconds: no history-based timeout is shorter (scheduling noise on fast tools)."""

    def __post_init__(self) -> None:
        if self.min_observations < 1:
            raise ValueError(
                f"TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS must be at least 1, got {self.min_observations}"
            )
        if self.factor < 1:
            raise ValueError(f"TOOLPLAN_TIMEOUT_FACTOR must be at least 1, got {self.factor}")
        if self.history < self.min_observations:
            raise ValueError(
                f"TOOLPLAN_TIMEOUT_HISTORY ({self.history}) must be at least "
                f"TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS ({self.min_observations})"
            )
        if not 0 < self.quantile <= 1:
            raise ValueError(f"quantile must be in (0, 1], got {self.quantile}")

    def from_history(self, durations_ms: Sequence[float], default: float) -> float | None:
        """Seconds for a tool with these observed durations, or ``None`` when history does not
        decide (too few observations, or turned off): then ``default`` applies."""
        if not self.enabled or len(durations_ms) < self.min_observations:
            return None
        seconds = quantile(durations_ms, self.quantile) / 1000 * self.factor
        return round(min(default, max(self.floor, seconds)), 3)


@dataclass(frozen=True)
class ExecutionOptions:
    """How a plan runs. Every field has a production default; tests shrink the delays."""

    concurrency: int = DEFAULT_CONCURRENCY
    """Most steps running at once."""
    fail_fast: bool = False
    """Stop at the first failed step (seed 002 behaviour) instead of failing forward."""
    default_timeout: float = 30.0
    """Seconds per attempt when a step sets no ``timeout``."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeouts: TimeoutPolicy = field(default_factory=TimeoutPolicy)
    """How a step without its own ``timeout`` gets one from its tool's history (adaptive)."""
    output_limit_bytes: int = 1_000_000
    """Step outputs larger than this (as JSON) are stored truncated and flagged."""
    lease_seconds: float = 30.0
    """How long an execution's lease lasts without a heartbeat."""
    cancel_poll: float = 0.25
    """Seconds between two checks, while an execution runs, for a cancel request
    (``toolplan cancel``): the upper bound of the time it takes to notice one."""
    cache: bool = True
    """Answer calls of read-only tools from the store's result cache (``--no-cache``: never)."""
    cache_ttl: float = 300.0
    """Seconds a cached result is reused, for a read-only tool without its own ``cache_ttl``."""
    max_items: int = DEFAULT_MAX_ITEMS
    """The longest list a ``forEach`` step without ``maxItems`` runs over
    (``TOOLPLAN_MAX_ITEMS``); a longer one fails the step before any call."""
    approve_all: bool = False
    """Pre-approve every step: none waits for a person (``--approve-all``, for scripts and
    tests). Each gated step it lets through gets a decision recorded on it, with ``via``
    ``approveAll``."""
    approver: str | None = None
    """Who ``approve_all`` approves as, in the decisions it records (default: the OS user)."""
    graph_checkpoints: bool = False
    """Also run the execution graph under the store's LangGraph checkpointer (thread = plan ID),
    so LangGraph tooling sees each execution's node boundaries (``graph_checkpoints = true``).
    Off by default: the step records are the source of truth for resuming either way, and the
    layer costs most of a short plan's fixed cost."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.max_items < 1:
            raise ValueError(f"max_items must be at least 1, got {self.max_items}")
        if self.default_timeout <= 0:
            raise ValueError(f"default_timeout must be positive, got {self.default_timeout}")
        if self.cache_ttl < 0:
            raise ValueError(f"cache_ttl must not be negative, got {self.cache_ttl}")
        if self.cancel_poll <= 0:
            raise ValueError(f"cancel_poll must be positive, got {self.cancel_poll}")
