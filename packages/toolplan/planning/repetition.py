"""Text that repeats itself: the end of an answer the model is writing in a loop.

A small model at temperature 0 can fall into a loop inside one string of its plan, as
Qwen2.5-Coder-1.5B did on a request to "remove the timer.exe ... using the taskkill command":
its ``command`` argument went on with ``/FI "IMAGENAME ne opera-stable-dev"
/FI "IMAGENAME ne opera-beta-stable-dev"`` for 6,400 tokens, and, asked again with twice the
limit, would have for 12,800 more. No step is ever complete, so the stop for a repeated step
(:mod:`toolplan.planning.streaming`) cannot see it; :func:`repeating_tail` can, once the same
stretch of at most :data:`MAX_PERIOD` characters has come :data:`MIN_REPEATS` times in a row
over at least :data:`MIN_SPAN` characters.

Nothing in a plan repeats like that: steps differ at least by their ids, and a string that
really is one character over and over (a rule of ``=``) is far shorter. Replayed on 1,744 texts
from our runs (the model's raw answers on the query sets and on public function-calling
requests; BENCHMARKS.md), it stops that runaway and nothing else; the longest other repeat is 446 characters, 4
times (two identical calls, which a raw answer would have told apart by their step ids)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_PERIOD", "MIN_REPEATS", "MIN_SPAN", "Repetition", "repeating_tail"]

MAX_PERIOD = 256
"""The longest stretch looked for, in characters (the runaway above repeats 81)."""

MIN_REPEATS = 8
"""How many times in a row the stretch must come."""

MIN_SPAN = 512
"""How many characters the repeats must cover at least (a stretch of one character: 512)."""


@dataclass(frozen=True)
class Repetition:
    """The end of a text, repeating."""

    unit: str
    """The stretch that repeats (its last occurrence)."""
    span: int
    """How many characters at the end of the text repeat it."""

    @property
    def repeats(self) -> int:
        return self.span // len(self.unit)


def repeating_tail(text: str) -> Repetition | None:
    """The stretch ``text`` ends repeating, when it has come :data:`MIN_REPEATS` times in a
    row over :data:`MIN_SPAN` characters or more; ``None`` otherwise. The shortest such stretch
    is the one returned (a text repeating ``ab`` also repeats ``abab``)."""
    n = len(text)
    for period in range(1, MAX_PERIOD + 1):
        span = max(MIN_SPAN, MIN_REPEATS * period)
        if span > n:
            continue
        # ends with ``span`` characters of this period: each equals the one ``period`` before
        if (
            text[-1] == text[-1 - period]
            and text[n - span + period :] == text[n - span : n - period]
        ):
            return Repetition(text[n - period :], _extent(text, period))
    return None


def _extent(text: str, period: int) -> int:
    """How many characters at the end of ``text`` have ``period``."""
    at = len(text) - 1
    while at >= period and text[at] == text[at - period]:
        at -= 1
    return len(text) - at - 1 + period
