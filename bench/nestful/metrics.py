"""The bench's own NESTFUL metrics: F1 over functions and over parameters, partial and full
sequence accuracy, and the share of requests with no answer.

Both sequences are first put in the form they are compared in (:func:`~bench.nestful.sequence.
canonical`): ``var_result`` dropped; a reference names the call it reads by function and
occurrence (``$calculate_route#1.distance$``), whatever the labels were; scalars compare as text
in JSON's spelling (``3`` = ``3.0`` = ``"3"``, ``true`` = ``"true"``); lists in order, objects by
key. Two calls are equal when they have the same function and the same arguments (names and
values). Per sample, with gold ``G`` (``n`` calls) and the answer ``P`` (``m`` calls; no answer,
or an answer with no call, is ``m = 0``):

- **F1 functions**: the called names as multisets; hits = the size of their intersection.
  Over a set of samples, micro-averaged: ``2 * sum(hits) / (sum(m) + sum(n))``.
- **F1 parameters**: the same over ``(function, argument, value)`` triples of every call.
- **Partial sequence accuracy**: the most calls of ``P`` that equal calls of ``G`` in the same
  order (their longest common subsequence), over ``max(n, m)`` (0 with no answer); the mean
  over samples. Where ``P`` differs from ``G`` only in some calls' arguments, that is the share
  of positions that match.
- **Full sequence accuracy**: ``P`` equals ``G`` call for call (same length, same order).
- **No answer**: the contestant gave no sequence (toolplan made no plan; the reply could not
  be read; it held no call).

Deliberate differences from NESTFUL's scorer (``src/scorer.py``, re-derived in
:mod:`bench.nestful.official` and checked against it in ``tests/unit/test_bench_nestful.py``):

1. Micro- not macro-averaged F1: NESTFUL averages over the function names (and ``arg = value``
   strings) of the gold of the samples scored together, so a figure depends on which samples
   share a table, and a name no gold uses counts for nothing. Here every call counts once,
   wherever it is, and a call of a function no gold uses is a false positive.
2. Multisets, not sets: calling the right function twice where the gold calls it once costs
   precision; NESTFUL counts a name once per sample, and for parameters keeps only the last
   call of each function.
3. Parameters are ``(function, argument, value)``; NESTFUL's are ``argument = value``, whatever
   the function.
4. Values compare as JSON-spelled text with numbers by value (``3`` = ``3.0``); NESTFUL
   compares Python's ``str()`` (``3`` = ``"3"`` but ``3`` != ``3.0``, ``True`` != ``"true"``).
5. A reference names the call it reads by function *and occurrence*; NESTFUL's names the
   function only, so of two calls of one function it cannot tell which one is read.
6. Partial accuracy aligns the two sequences by their longest common subsequence. NESTFUL
   compares position by position when the lengths are equal (a swap of two calls loses both),
   and otherwise walks the gold until a name equals the answer's next one, padding each side
   with blanks: a missing call is skipped over, but one extra call at the start leaves no
   match at all (``n + m`` positions, none equal).
7. NESTFUL appends a ``$`` to a predicted string that starts with one and does not end with
   one (``"$var1.x"`` reads as a reference); here that holds only where the label is one of the
   answer's own (``"$100"`` stays text).

A second reading, reported beside these and never instead of them (``run.summarize`` with the
split's declared defaults): **an argument at its declared default read as omitted**. The gold
writes defaults out (``"limit": 20`` where the spec declares 20), and a call that leaves one
out makes the same call, so every argument equal to its function's declared default is dropped
from both sequences before scoring (:func:`~bench.nestful.sequence.without_defaults`). Full,
partial and F1 parameters may change; F1 functions does not. NESTFUL's scorer has no such
reading.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.nestful.sequence import Call, canonical

__all__ = ["SampleScore", "Scores", "aggregate", "score_sample"]


@dataclass(frozen=True)
class SampleScore:
    """One sample's counts, from which every metric over a set of samples is computed."""

    gold_calls: int
    answer_calls: int
    name_hits: int
    gold_parameters: int
    answer_parameters: int
    parameter_hits: int
    partial: float
    full: bool
    answered: bool
    """The contestant gave a sequence with at least one call."""

    def to_json(self) -> dict[str, Any]:
        """JSON form for the per-sample rows."""
        return {
            "goldCalls": self.gold_calls,
            "answerCalls": self.answer_calls,
            "nameHits": self.name_hits,
            "goldParameters": self.gold_parameters,
            "answerParameters": self.answer_parameters,
            "parameterHits": self.parameter_hits,
            "partial": round(self.partial, 4),
            "full": self.full,
            "answered": self.answered,
        }


def _hits(gold: Iterable[Any], answer: Iterable[Any]) -> int:
    return sum((Counter(gold) & Counter(answer)).values())


def _common_subsequence(first: Sequence[Any], second: Sequence[Any]) -> int:
    """The length of the longest common subsequence (a few calls each: quadratic is fine)."""
    previous = [0] * (len(second) + 1)
    for item in first:
        current = [0]
        for j, other in enumerate(second):
            current.append(previous[j] + 1 if item == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def score_sample(gold: Sequence[Call], answer: Sequence[Call] | None) -> SampleScore:
    """Score one answer (``None``: no answer) against the gold (both without ``var_result``)."""
    expected = canonical(gold)
    got = canonical(answer or [])
    triples_gold = [(c.name, k, v) for c in expected for k, v in c.arguments]
    triples_got = [(c.name, k, v) for c in got for k, v in c.arguments]
    matches = _common_subsequence(expected, got)
    longest = max(len(expected), len(got))
    return SampleScore(
        gold_calls=len(expected),
        answer_calls=len(got),
        name_hits=_hits((c.name for c in expected), (c.name for c in got)),
        gold_parameters=len(triples_gold),
        answer_parameters=len(triples_got),
        parameter_hits=_hits(triples_gold, triples_got),
        partial=matches / longest if longest else 0.0,
        full=bool(got) and got == expected,
        answered=bool(got),
    )


@dataclass(frozen=True)
class Scores:
    """The metrics over a set of samples."""

    samples: int
    full: int
    """Samples answered exactly (the full-sequence count; :attr:`full_share` is the accuracy)."""
    partial: float
    f1_functions: float
    f1_parameters: float
    no_answer: int

    @property
    def full_share(self) -> float:
        """Full-sequence accuracy."""
        return self.full / self.samples if self.samples else 0.0

    def to_json(self) -> dict[str, Any]:
        """JSON form for the summary."""
        return {
            "samples": self.samples,
            "full": self.full,
            "fullShare": round(self.full_share, 4),
            "partial": round(self.partial, 4),
            "f1Functions": round(self.f1_functions, 4),
            "f1Parameters": round(self.f1_parameters, 4),
            "noAnswer": self.no_answer,
        }


def _f1(hits: int, answered: int, expected: int) -> float:
    return 2 * hits / (answered + expected) if answered + expected else 0.0


def aggregate(scores: Sequence[SampleScore]) -> Scores:
    """The metrics over ``scores`` (micro-averaged F1s, mean partial accuracy)."""
    return Scores(
        samples=len(scores),
        full=sum(s.full for s in scores),
        partial=statistics.fmean(s.partial for s in scores) if scores else 0.0,
        f1_functions=_f1(
            sum(s.name_hits for s in scores),
            sum(s.answer_calls for s in scores),
            sum(s.gold_calls for s in scores),
        ),
        f1_parameters=_f1(
            sum(s.parameter_hits for s in scores),
            sum(s.answer_parameters for s in scores),
            sum(s.gold_parameters for s in scores),
        ),
        no_answer=sum(not s.answered for s in scores),
    )
