"""Conditions a planner wrote on a value that is not a yes/no: checked for model-written plans.

``"when": "{{cpu.current}}"`` is valid (a number is falsy only when it is 0), runs, and is almost
never what "if CPU is above 80%" meant: any load but exactly 0 opens the incident. A small model
writes it when it skips the tool that compares. A string is the same (any non-empty text is
true). So a ``when`` on a declared number or string is refused at planning time, with a repair
message that says to compare first; lists, objects, booleans and values of unknown type pass.

Hand-written plans are not checked here: a person who conditions on a count ("if any errors")
means it. Only the planner runs this check, as it runs :mod:`toolplan.analysis.grounding`.
"""

from __future__ import annotations

from toolplan.analysis.control_flow import whole_template
from toolplan.analysis.types import declared_schema, schema_kind
from toolplan.errors import ValidationIssue
from toolplan.plans.plan import Plan
from toolplan.tools.catalog import ToolCatalog

__all__ = ["check_conditions"]

_NOT_YES_NO = {"number": "a number", "integer": "a number", "string": "text"}


def check_conditions(plan: Plan, catalog: ToolCatalog) -> list[ValidationIssue]:
    """One issue per ``when`` whose template names a declared number or string."""
    issues = []
    for step in plan.steps:
        text = step.condition
        template = whole_template(text) if text is not None else None
        if template is None or template.is_loop:
            continue
        schema = declared_schema(plan, catalog, template)
        kind = schema_kind(schema) if schema is not None else None
        if kind not in _NOT_YES_NO:
            continue
        comparing = _comparing_tools(catalog)
        suggestion = f" (e.g. {', '.join(map(repr, comparing[:3]))})" if comparing else ""
        issues.append(
            ValidationIssue(
                "condition",
                f"step {step.id!r}: when {template.text!r} is {_NOT_YES_NO[kind]}, not a yes/no "
                "value, so it is true for almost any value; to act when it is above or below a "
                f"limit, add a step whose tool compares it{suggestion} and use that step's "
                "yes/no output as the condition",
                step.id,
            )
        )
    return issues


def _comparing_tools(catalog: ToolCatalog) -> list[str]:
    """Tools whose declared output has a yes/no field: the ones that compare."""
    return [
        name
        for name in catalog.names
        if any(
            schema_kind(p) == "boolean"
            for p in ((catalog.info(name).returns or {}).get("properties") or {}).values()
        )
    ]
