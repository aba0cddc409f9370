"""What planning returns: the validated plan, its analysis and how it was made
(:func:`toolplan.planning.planner.plan_query`); whoever keeps the plan stores the record with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolplan.plan_format.plan import Plan
from toolplan.planning.rewrites import Change
from toolplan.store.protocol import PlanStatus
from toolplan.validation import Analysis

__all__ = ["PlanningRecord", "PlanningResult"]


@dataclass(frozen=True)
class PlanningRecord:
    """How a plan was made: the model, its calls and what they cost, and every change the
    rewrite rules made to its answer. Stored with the plan as its planning record
    (:meth:`to_meta`)."""

    model: str
    llm_calls: int
    usage: dict[str, int]
    planning_ms: float
    prompt_version: str | None = None
    plan_schema: str | None = None
    """``python``, ``typed`` or ``generic``: what the last answer was asked in."""
    repairs: int = 0
    changes: tuple[Change, ...] = ()
    """What the rewrite rules changed in the model's answer (:mod:`toolplan.planning.rewrites`);
    empty when the plan is as the model wrote it."""

    def to_meta(self, plan: Plan) -> dict[str, Any]:
        """The planning record of ``plan`` as its ``meta`` holds it: ``model``, ``llmCalls``,
        ``usage``, ``planningMs``, ``promptVersion``, ``planSchema``, ``confidence``,
        ``repairs``, ``reasoning``, ``changes``."""
        return {
            "model": self.model,
            "llmCalls": self.llm_calls,
            "usage": self.usage,
            "planningMs": self.planning_ms,
            "promptVersion": self.prompt_version,
            "planSchema": self.plan_schema,
            "confidence": plan.min_confidence,
            "repairs": self.repairs,
            "reasoning": plan.reasoning,
            "changes": [change.to_json() for change in self.changes],
        }


@dataclass(frozen=True)
class PlanningResult:
    """What planning returns: a plan that passed the validator and the planner's own checks, its
    analysis, and how it was made. Not stored yet."""

    plan: Plan
    analysis: Analysis
    record: PlanningRecord
    status: PlanStatus
    """``planned``, or ``needs_review`` when a step's confidence is below the threshold."""
