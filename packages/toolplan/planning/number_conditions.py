"""A ``when`` on a declared number (or string), refused in a model-written plan: ``"when":
"{{cpu.current}}"`` is valid and runs, but is almost never what "if CPU is above 80%" meant (any
load but exactly 0 opens the incident); the repair message says to compare first. A person's plan
is not checked for numbers (a count in "if any errors" is meant); text is refused for every plan
(:mod:`toolplan.validation.conditions`)."""

from __future__ import annotations

from toolplan.errors import ValidationIssue
from toolplan.plan_format.plan import Plan
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation.conditions import comparing_suggestion, declared_conditions

__all__ = ["check_conditions"]

_NOT_YES_NO = {"number": "a number", "integer": "a number", "string": "text"}


def check_conditions(plan: Plan, catalog: ToolCatalog) -> list[ValidationIssue]:
    """One issue per ``when`` whose template names a declared number or string (model-written
    plans; a string is refused for every plan by :func:`check_text_conditions` as well)."""
    return [
        ValidationIssue(
            "condition",
            f"step {step.id!r}: when {template.text!r} is {_NOT_YES_NO[kind]}, not a yes/no "
            "value, so it is true for almost any value; to act when it is above or below a "
            f"limit, add a step whose tool compares it{comparing_suggestion(catalog)} and use that "
            "step's yes/no output as the condition",
            step.id,
        )
        for step, template, kind in declared_conditions(plan, catalog)
        if kind in _NOT_YES_NO
    ]
