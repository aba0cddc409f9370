"""The retry loop a plain step and each ``forEach`` item share (``engine.attempts``), driven by
the retry policy's one decision (``RetryPolicy.after``)."""

from __future__ import annotations

from toolplan.config.retry import RetryPolicy
from toolplan.engine.attempts import GaveUp, with_retries
from toolplan.engine.toolcall import AttemptFailed


class Calls:
    """An attempt that fails with the given kinds in turn, then returns its number."""

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.seen: list[tuple[int, bool]] = []
        self.retries: list[tuple[int, str]] = []
        self.asked: list[int] = []

    async def attempt(self, number: int, first: bool) -> int:
        self.seen.append((number, first))
        if self.failures:
            kind = self.failures.pop(0)
            raise AttemptFailed(f"{kind} on {number}", kind=kind)  # type: ignore[arg-type]
        return number

    def retrying(self, number: int, failed: AttemptFailed) -> None:
        self.retries.append((number, str(failed)))

    async def run(self, *, prior: int = 0, max_attempts: int = 3) -> int | GaveUp:
        policy = RetryPolicy(max_attempts=max_attempts, initial_backoff=0.0, jitter=0)

        def after(failed: AttemptFailed, attempts: int) -> float | None:
            self.asked.append(attempts)
            return policy.after(failed, "t", attempts)

        return await with_retries(self.attempt, prior=prior, after=after, retrying=self.retrying)


async def test_transient_failures_are_retried_numbered_on_from_prior() -> None:
    calls = Calls("timeout", "exception")
    assert await calls.run(prior=2, max_attempts=5) == 5
    assert calls.seen == [(3, True), (4, False), (5, False)]
    assert calls.retries == [(3, "timeout on 3"), (4, "exception on 4")]
    assert calls.asked == [3, 4]  # the policy counts the earlier run's attempts too


async def test_a_resumed_call_has_only_the_attempts_left_and_at_least_one() -> None:
    calls = Calls("timeout", "timeout")
    result = await calls.run(prior=2, max_attempts=3)
    assert isinstance(result, GaveUp) and result.attempt == 3 and calls.seen == [(3, True)]
    spent = Calls("timeout")
    result = await spent.run(prior=3, max_attempts=3)  # stopped in its last attempt: once more
    assert isinstance(result, GaveUp) and result.attempt == 4 and spent.retries == []


async def test_a_tool_error_is_not_retried() -> None:
    calls = Calls("tool_error")
    result = await calls.run()
    assert isinstance(result, GaveUp)
    assert (result.attempt, result.failure.kind) == (1, "tool_error")
    assert calls.retries == []


async def test_the_last_attempt_gives_up_without_waiting() -> None:
    calls = Calls("timeout", "timeout", "timeout", "timeout")
    result = await calls.run(max_attempts=3)
    assert isinstance(result, GaveUp) and result.attempt == 3
    assert str(result.failure) == "timeout on 3"
    assert [n for n, _ in calls.seen] == [1, 2, 3] and len(calls.retries) == 2
