"""The retry loop a plain step and each ``forEach`` item share (``engine.attempts``)."""

from __future__ import annotations

import pytest

from toolplan.engine.attempts import GaveUp, with_retries
from toolplan.engine.toolcall import AttemptFailed


class Calls:
    """An attempt that fails with the given kinds in turn, then returns its number."""

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.seen: list[tuple[int, bool]] = []
        self.retries: list[tuple[int, str]] = []
        self.waits: list[int] = []

    async def attempt(self, number: int, first: bool) -> int:
        self.seen.append((number, first))
        if self.failures:
            kind = self.failures.pop(0)
            raise AttemptFailed(f"{kind} on {number}", kind=kind)  # type: ignore[arg-type]
        return number

    def retrying(self, number: int, failed: AttemptFailed) -> None:
        self.retries.append((number, str(failed)))

    def backoff(self, failures: int) -> float:
        self.waits.append(failures)
        return 0.0

    async def run(self, *, prior: int = 0, max_attempts: int = 3) -> int | GaveUp:
        return await with_retries(
            self.attempt,
            prior=prior,
            max_attempts=max_attempts,
            retrying=self.retrying,
            backoff=self.backoff,
        )


async def test_transient_failures_are_retried_with_growing_backoff_numbered_from_prior() -> None:
    calls = Calls("timeout", "exception")
    assert await calls.run(prior=2) == 5
    assert calls.seen == [(3, True), (4, False), (5, False)]
    assert calls.retries == [(3, "timeout on 3"), (4, "exception on 4")]
    assert calls.waits == [1, 2]


async def test_a_tool_error_is_not_retried() -> None:
    calls = Calls("tool_error")
    result = await calls.run()
    assert isinstance(result, GaveUp)
    assert (result.attempt, result.failure.kind) == (1, "tool_error")
    assert calls.retries == [] and calls.waits == []


async def test_the_last_attempt_gives_up_without_waiting() -> None:
    calls = Calls("timeout", "timeout", "timeout", "timeout")
    result = await calls.run(max_attempts=3)
    assert isinstance(result, GaveUp) and result.attempt == 3
    assert str(result.failure) == "timeout on 3"
    assert [n for n, _ in calls.seen] == [1, 2, 3] and calls.waits == [1, 2]


async def test_no_attempt_at_all_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        await Calls().run(max_attempts=0)
