"""Adaptive timeouts: a step without its own ``timeout`` gets one from its tool's history.

The rule (:meth:`TimeoutPolicy.from_history`): once a tool has at least ``min_observations``
recorded durations (successful first attempts, not from the cache, the latest ``history`` of
them), a step calling it times out after the ``quantile`` (p99) of those durations times
``factor``, clamped to [``floor``, the default timeout]. Fewer observations, or the policy turned
off, give the default (``TOOLPLAN_TIMEOUT``); a ``timeout`` in the plan always wins.

Why p99 x 3: the tail of real tool latencies is heavy (lognormal-ish), so a timeout near the
observed tail cuts good calls. Three times the p99 leaves room for a tail the history has not
seen yet; BENCHMARKS.md measures the false-timeout rate this gives on lognormal latencies. The
default stays the ceiling: history only ever tightens the timeout, so a hung tool is noticed
sooner, never later than without history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolplan.config.policies import TimeoutPolicy
from toolplan.plan_format.plan import Plan
from toolplan.store.protocol import ExecutionLog, TimeoutSource

__all__ = [
    "EffectiveTimeout",
    "TimeoutPolicy",
    "load_step_timeouts",
    "read_step_timeouts",
    "step_timeouts",
]


@dataclass(frozen=True)
class EffectiveTimeout:
    """The timeout each attempt of a step gets, and where it came from."""

    seconds: float
    source: TimeoutSource


def step_timeouts(
    plan: Plan,
    history: Mapping[str, Sequence[float]],
    policy: TimeoutPolicy,
    default: float,
) -> dict[str, EffectiveTimeout]:
    """The effective timeout of every step of ``plan``: its own ``timeout`` (``plan``), else
    one from its tool's observed durations in ``history`` (``history``), else ``default``."""
    timeouts: dict[str, EffectiveTimeout] = {}
    for step in plan.steps:
        if step.timeout:
            timeouts[step.id] = EffectiveTimeout(float(step.timeout), "plan")
            continue
        learned = policy.from_history(history.get(step.tool, ()), default)
        timeouts[step.id] = (
            EffectiveTimeout(learned, "history")
            if learned is not None
            else EffectiveTimeout(default, "default")
        )
    return timeouts


def read_step_timeouts(
    store: ExecutionLog, plan: Plan, policy: TimeoutPolicy, default: float
) -> dict[str, EffectiveTimeout]:
    """:func:`step_timeouts` with the history read from ``store`` (one read, for the tools of
    the steps that set no timeout; none when the policy is off). A store error propagates: it
    stops the run, it is no step's failure. Blocking: call it off the event loop."""
    tools = sorted({step.tool for step in plan.steps if not step.timeout})
    history: Mapping[str, Sequence[float]] = {}
    if policy.enabled and tools:
        history = store.tool_durations(tools, policy.history)
    return step_timeouts(plan, history, policy, default)


async def load_step_timeouts(
    store: ExecutionLog, plan: Plan, policy: TimeoutPolicy, default: float
) -> dict[str, EffectiveTimeout]:
    """:func:`read_step_timeouts` off the event loop."""
    return await asyncio.to_thread(read_step_timeouts, store, plan, policy, default)
