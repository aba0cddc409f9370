"""Conditions on text, refused for every plan (:func:`check_text_conditions`, part of
:func:`toolplan.validation.dag.analyze`): text is never read as true or false at run time
(:func:`toolplan.engine.items.condition_holds` skips the step), because a tool that answers
``"false"`` or ``"no"`` in text, as MCP tools do, would otherwise let a guarded side effect
through. The planner's check on numbers (:mod:`toolplan.planning.number_conditions`) walks the
same declared conditions (:func:`declared_conditions`)."""

from __future__ import annotations

from collections.abc import Iterator

from toolplan.errors import ValidationIssue
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import Template
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation.control_flow import whole_template
from toolplan.validation.types import declared_schema, schema_kind

__all__ = ["check_text_conditions", "comparing_suggestion", "declared_conditions"]


def check_text_conditions(plan: Plan, catalog: ToolCatalog) -> list[ValidationIssue]:
    """One issue per ``when`` whose template names a declared string (every plan)."""
    return [
        ValidationIssue(
            "condition",
            f"step {step.id!r}: when {template.text!r} is text, not a yes/no value: text is "
            "never read as true or false, so the step would never run; return a boolean from "
            f"{template.step!r}'s tool and use it, or add a step whose tool compares the "
            f"text{comparing_suggestion(catalog)} and use that step's yes/no output as the condition",
            step.id,
        )
        for step, template, kind in declared_conditions(plan, catalog)
        if kind == "string"
    ]


def declared_conditions(
    plan: Plan, catalog: ToolCatalog
) -> Iterator[tuple[Step, Template, str | None]]:
    """Each step whose ``when`` is one template naming a step's output, with the kind of JSON
    value that output is declared as there (``None``: not declared)."""
    for step in plan.steps:
        text = step.condition
        template = whole_template(text) if text is not None else None
        if template is None or template.is_loop:
            continue
        schema = declared_schema(plan, catalog, template)
        yield step, template, schema_kind(schema) if schema is not None else None


def comparing_suggestion(catalog: ToolCatalog) -> str:
    """`` (e.g. 'check_threshold')``: tools that compare, to name in a message."""
    comparing = _comparing_tools(catalog)
    return f" (e.g. {', '.join(map(repr, comparing[:3]))})" if comparing else ""


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
