"""What the planner is doing while the model works, as events (:class:`PlanningEvent`).

A small model takes 10 to 60 s, or more on a CPU, for one plan. The planning graph tells of each
step of its work: before the first call (``planning``), each step of the plan as soon as the
streamed answer has it whole (``step``, with its tool and arguments), before a repair
(``repairing``, with the first problem the model is asked to fix), before asking again with a
larger output limit (``retrying``) and after each answer (``answered``, with the elapsed time and
the tokens so far).

Two ways to listen, both optional: the planner context's ``listener`` (the CLI prints the events
on stderr), and LangGraph's custom stream (``stream_mode="custom"``), where each event arrives as
its JSON form (:meth:`PlanningEvent.to_json`). Planning code never prints, and progress is never
part of planning: a listener that raises is ignored (:func:`notify`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["PlanningEvent", "PlanningEventKind", "PlanningListener", "notify"]

_log = logging.getLogger(__name__)

PlanningEventKind = Literal[
    "planning", "step", "repairing", "retrying", "answered", "rewritten", "early"
]
"""``planning``: the first call is about to be made. ``step``: the answer being written has one
more step (only when it is streamed: :mod:`toolplan.planning.streaming`; a step may be told again
by the answer of a repair or a retry). ``repairing``: the last answer had problems
and the model is asked again with them (or, ``afresh``, for a new plan in another format).
``retrying``: the answer stopped at the output limit and the same request is asked again with a
larger one. ``answered``: an answer came back.
``rewritten``: the plan was stored, with every change the rewrite rules made to the
model's answer (:mod:`toolplan.planning.rewrites`; told even when there is none). ``early``:
a step of the answer being written started early, finished, or was settled when the plan was
stored (``early``: what happened; :mod:`toolplan.pipeline.early_start`)."""


@dataclass(frozen=True)
class PlanningEvent:
    """One step of the planner's work."""

    kind: PlanningEventKind
    model: str
    """The ``provider:model`` planning."""
    attempt: int
    """Which plan the model is writing: 1 for the first, 2 for the first repair..."""
    attempts: int
    """How many plans it may write: 1 + the repairs allowed."""
    elapsed_ms: float
    """Since planning started."""
    llm_calls: int
    """Answered calls so far."""
    usage: dict[str, int] = field(default_factory=dict)
    """Tokens so far (``inputTokens``, ``outputTokens``)."""
    problem: str | None = None
    """``repairing``: the first problem of the last answer."""
    problems: int = 0
    """``repairing``: how many problems it had."""
    afresh: str | None = None
    """``repairing``: the format the plan is asked for afresh in, instead of repaired
    (``json``: the first JSON attempt of a Python planning,
    :func:`toolplan.planning.graph.attempt_format`);
    ``None``: the answer is sent back with its problems."""
    max_tokens: int | None = None
    """``retrying``: the larger output limit."""
    steps: int | None = None
    """``answered``: the steps read from the answer (``None``: no plan could be read);
    ``step``: the steps of the answer so far, this one included."""
    step: dict[str, Any] | None = None
    """``step``: the step as the model wrote it: ``id``, ``tool`` and ``parameters`` (read as
    the whole answer will be, fillers left out). Shown, not yet validated."""
    tokens: int | None = None
    """``step``: the answer's output so far, in streamed chunks (about one token each; the
    exact count comes with ``answered``)."""
    changes: list[dict[str, Any]] = field(default_factory=list)
    """``rewritten``: each change as ``{rule, step, before, after}``."""
    early: str | None = None
    """``early``: ``started``, ``finished``, ``failed`` (the call), then ``adopted``,
    ``cancelled`` or ``unused`` (settled when the plan is stored or planning failed)."""
    duration_ms: float | None = None
    """``early``: how long the call ran so far (not when ``started``)."""

    def to_json(self) -> dict[str, Any]:
        """The event as LangGraph's custom stream carries it."""
        data: dict[str, Any] = {
            "event": "planning",
            "kind": self.kind,
            "model": self.model,
            "attempt": self.attempt,
            "attempts": self.attempts,
            "elapsedMs": round(self.elapsed_ms, 1),
            "llmCalls": self.llm_calls,
            "usage": dict(self.usage),
        }
        if self.kind == "repairing":
            data.update(problem=self.problem, problems=self.problems, afresh=self.afresh)
        elif self.kind == "retrying":
            data["maxTokens"] = self.max_tokens
        elif self.kind == "answered":
            data["steps"] = self.steps
        elif self.kind == "step":
            data.update(step=dict(self.step or {}), steps=self.steps, tokens=self.tokens)
        elif self.kind == "rewritten":
            data["changes"] = [dict(change) for change in self.changes]
        elif self.kind == "early":
            data.update(step=dict(self.step or {}), early=self.early, durationMs=self.duration_ms)
        return data


PlanningListener = Callable[[PlanningEvent], None]
"""Told of every :class:`PlanningEvent`, on the event loop: it should return at once."""


def notify(
    event: PlanningEvent,
    listener: PlanningListener | None,
    writer: Callable[[Any], None] | None = None,
) -> None:
    """Tell ``listener`` and LangGraph's stream ``writer`` of ``event``. Never raises: progress
    that cannot be shown (a closed stderr, a broken listener) must not fail planning."""
    if listener is not None:
        _quietly(listener, event)
    if writer is not None:
        _quietly(writer, event.to_json())


def _quietly(deliver: Callable[[Any], None], payload: Any) -> None:
    try:
        deliver(payload)
    except Exception:  # progress is never part of planning
        _log.debug("planning progress could not be delivered", exc_info=True)
