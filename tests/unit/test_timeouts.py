"""The adaptive-timeout rule: p99 of a tool's observed durations x factor, clamped to
[floor, default], only once there are enough observations; a plan's own timeout wins."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

import pytest

from toolplan.config import Settings
from toolplan.config.policies import TimeoutPolicy, quantile
from toolplan.engine.timeouts import EffectiveTimeout, load_step_timeouts, step_timeouts
from toolplan.errors import InvalidInput
from toolplan.plan_format.plan import parse_plan


def test_quantile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert quantile(values, 0.99) == 99.0
    assert quantile(values, 0.5) == 50.0
    assert quantile([5.0], 0.99) == 5.0
    assert quantile([3.0, 1.0, 2.0], 1.0) == 3.0
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_from_history_needs_enough_observations_and_clamps() -> None:
    policy = TimeoutPolicy(min_observations=5, factor=3.0)
    assert policy.from_history([2000.0] * 4, default=30) is None  # too few
    assert policy.from_history([2000.0] * 5, default=30) == 6.0  # 2 s x 3
    assert policy.from_history([10.0] * 50, default=30) == 1.0  # floor
    assert policy.from_history([20_000.0] * 50, default=30) == 30  # ceiling: the default
    # p99 of 100 values: the 99th, not the single largest outlier.
    durations = [1000.0] * 98 + [3000.0, 60_000.0]
    assert policy.from_history(durations, default=30) == 9.0
    assert TimeoutPolicy(enabled=False).from_history([2000.0] * 50, default=30) is None


PLAN = parse_plan(
    {
        "steps": [
            {"id": "own", "tool": "slow", "parameters": {}, "timeout": 7},
            {"id": "learned", "tool": "slow", "parameters": {}},
            {"id": "unseen", "tool": "new", "parameters": {}},
        ]
    }
)


def test_step_timeouts_name_their_source() -> None:
    history = {"slow": [2000.0] * 20}
    assert step_timeouts(PLAN, history, TimeoutPolicy(), 30) == {
        "own": EffectiveTimeout(7.0, "plan"),
        "learned": EffectiveTimeout(6.0, "history"),
        "unseen": EffectiveTimeout(30, "default"),
    }


class _Durations:
    def __init__(self) -> None:
        self.asked: list[tuple[list[str], int]] = []

    def tool_durations(self, tools: Collection[str], limit: int) -> dict[str, list[float]]:
        self.asked.append((sorted(tools), limit))
        return {tool: [2000.0] * 30 for tool in tools}


def test_history_is_read_once_for_steps_without_a_timeout() -> None:
    store = _Durations()
    timeouts = asyncio.run(load_step_timeouts(store, PLAN, TimeoutPolicy(history=50), 30))  # type: ignore[arg-type]
    assert store.asked == [(["new", "slow"], 50)]
    assert timeouts["learned"].source == "history" and timeouts["own"].source == "plan"
    off = asyncio.run(load_step_timeouts(store, PLAN, TimeoutPolicy(enabled=False), 30))  # type: ignore[arg-type]
    assert len(store.asked) == 1  # turned off: no read
    assert off["learned"] == EffectiveTimeout(30, "default")


def test_settings_read_the_policy_and_refuse_nonsense() -> None:
    env = {
        "TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS": "5",
        "TOOLPLAN_TIMEOUT_FACTOR": "2.5",
        "TOOLPLAN_TIMEOUT_HISTORY": "40",
        "TOOLPLAN_ADAPTIVE_TIMEOUTS": "0",
    }
    policy = Settings.from_env(env).execution.timeouts
    assert (policy.min_observations, policy.factor, policy.history, policy.enabled) == (
        5,
        2.5,
        40,
        False,
    )
    assert Settings.from_env({}).execution.timeouts == TimeoutPolicy()
    for name, value in (
        ("TOOLPLAN_TIMEOUT_FACTOR", "0.5"),
        ("TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS", "0"),
        ("TOOLPLAN_TIMEOUT_HISTORY", "3"),
        ("TOOLPLAN_ADAPTIVE_TIMEOUTS", "maybe"),
    ):
        with pytest.raises(InvalidInput, match=name):
            Settings.from_env({name: value})
