"""Maps and branches checked before anything runs: ``forEach``, ``maxItems`` and ``when``.

A ``forEach`` step calls its tool once per item of a list; its parameters (and its fallback's)
may use ``{{$item}}``, ``{{$item.path}}`` and ``{{$index}}``. A ``when`` condition skips its
step when falsy. Both name the steps they read through templates, and those steps become
dependencies (:func:`control_references`). The problems found here are reported with every other
problem of the plan by :func:`toolplan.validation.dag.analyze`; type checks against declared
outputs (a ``forEach`` over something that is not a list, an ``$item`` path that cannot exist)
live with the other template type checks in :mod:`toolplan.validation.types`.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator
from typing import Any

from toolplan.errors import ValidationIssue
from toolplan.plan_format.json_schema import accepted_types
from toolplan.plan_format.plan import DEFAULT_MAX_ITEMS, Step
from toolplan.plan_format.templates import (
    INDEX,
    Template,
    find_templates,
    malformed_templates,
)
from toolplan.tools.catalog import ToolCatalog

__all__ = ["check_control_flow", "control_references", "list_over_limit", "whole_template"]


def whole_template(text: str) -> Template | None:
    """The template ``text`` consists of, alone (spaces around it allowed); else ``None``."""
    stripped = text.strip()
    if not stripped.startswith("{{"):
        return None
    return Template.parse(stripped)


def _control_texts(step: Step) -> Iterator[tuple[str, str]]:
    """(field, text) of the templates written in ``forEach`` and ``when``."""
    if isinstance(step.for_each, str):
        yield "forEach", step.for_each
    if step.condition is not None:
        yield "when", step.condition


def control_references(step: Step) -> list[str]:
    """The steps ``forEach`` and ``when`` read: dependencies of ``step``."""
    found: dict[str, None] = {}
    for _, text in _control_texts(step):
        template = whole_template(text)
        if template is not None and not template.is_loop:
            found.setdefault(template.step, None)
    return list(found)


def list_over_limit(count: int, step_limit: int | None, ceiling: int) -> str | None:
    """Why a list of ``count`` items is over the limit of its step, or ``None`` when it is not.

    ``ceiling`` is the operator's ``TOOLPLAN_MAX_ITEMS``; a step's ``maxItems`` can only lower
    it (a plan, which a model or anyone may write, cannot raise what the operator allows). The
    engine applies the same rule to a list known only at run time
    (:func:`toolplan.engine.items.item_list`).
    """
    if step_limit is not None and step_limit < ceiling:
        if count <= step_limit:
            return None
        return (
            f"{count} items, more than the limit of {step_limit} (its maxItems); raise "
            f"maxItems on the step (up to TOOLPLAN_MAX_ITEMS, {ceiling}) if this is intended, "
            "or split the list"
        )
    if count <= ceiling:
        return None
    lifted = (
        f"; its maxItems of {step_limit} cannot raise the operator's limit"
        if step_limit is not None
        else ""
    )
    return (
        f"{count} items, more than the limit of {ceiling} (TOOLPLAN_MAX_ITEMS){lifted}: split "
        "the list, or ask the operator to raise TOOLPLAN_MAX_ITEMS"
    )


def _close(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _producers(template: Template, catalog: ToolCatalog | None) -> str:
    """For a ``forEach`` over a step that does not exist: the tools whose declared output
    holds a list under the template's first key, as the step to add (a small model tends to
    write the map and forget the step that lists what it maps over)."""
    if catalog is None or not template.path or not isinstance(template.path[0], str):
        return ""
    key = template.path[0]
    tools = []
    for name in catalog.names:
        returns = catalog.info(name).returns or {}
        found = (returns.get("properties") or {}).get(key)
        if isinstance(found, dict) and "array" in (accepted_types(found) or ()):
            tools.append(name)
    if not tools or len(tools) > 3:
        return ""
    options = " or ".join(repr(t) for t in tools)
    return (
        f"; add the step that lists them first: a step with id {template.step!r} calling "
        f"{options} (its output has {key!r})"
    )


def _tool_named(template: Template, catalog: ToolCatalog | None) -> str:
    """A template naming a tool where a step belongs (``{{check_threshold.exceeded}}``)."""
    if catalog is None or template.step not in catalog:
        return ""
    return (
        f"; {template.step!r} is a tool, not a step: add a step with id {template.step!r} "
        "calling it, or name the step that calls it"
    )


def check_control_flow(
    step: Step,
    ids: Collection[str],
    *,
    max_items: int = DEFAULT_MAX_ITEMS,
    catalog: ToolCatalog | None = None,
) -> list[ValidationIssue]:
    """Problems of one step's ``forEach``, ``maxItems``, ``when`` and loop templates.

    ``ids`` are the plan's step ids; ``max_items`` is the operator's ceiling on items
    (``TOOLPLAN_MAX_ITEMS``), which a step's ``maxItems`` may lower, never raise;
    ``catalog`` lets a ``forEach`` over a missing step name the tool that would list it.
    """
    where = f"step {step.id!r}"
    issues: list[ValidationIssue] = []

    def problem(code: str, message: str) -> None:
        issues.append(ValidationIssue(code, f"{where}: {message}", step.id))

    for field, text in _control_texts(step):
        template = whole_template(text)
        if template is None:
            example = "{{posts.blogs}}" if field == "forEach" else "{{check.exceeded}}"
            shown = malformed_templates(text)
            detail = f"malformed template {shown[0]!r}" if shown else f"{text!r} is not a template"
            problem(
                "template",
                f"{field}: {detail}; write one template alone, e.g. {example!r}"
                + (" (or a literal list)" if field == "forEach" else ""),
            )
        elif template.is_loop:
            problem(
                "item",
                f"{field} {text!r} uses {template.step}, which exists only inside the "
                "items of a forEach step; name a step's output instead, e.g. '{{posts.blogs}}'",
            )
        elif template.step not in ids:
            problem(
                "reference",
                f"{field} {text!r} names unknown step {template.step!r} "
                f"(steps: {', '.join(ids)})"
                + (
                    _close(template.step, ids)
                    or _tool_named(template, catalog)
                    or (_producers(template, catalog) if field == "forEach" else "")
                ),
            )

    calls: list[tuple[str, Any]] = [("parameters", step.parameters)]
    if step.fallback is not None:
        calls.append(("fallback parameters", step.fallback.parameters))
    for label, parameters in calls:
        for template in find_templates(parameters):
            if not template.is_loop:
                continue
            if step.for_each is None:
                problem(
                    "item",
                    f"{label}: template {template.text!r} is only defined in a step with "
                    "forEach; add forEach with a template of the list to call the tool for, "
                    "once per item (a list that another step of the plan returns), or "
                    "reference a step's output instead",
                )
            elif template.step == INDEX and template.path:
                problem(
                    "item",
                    f"{label}: template {template.text!r}: {{{{$index}}}} is a number and has "
                    "no fields; write {{$index}} alone, or {{$item.field}} for the item",
                )

    if isinstance(step.for_each, list):
        problem_text = list_over_limit(len(step.for_each), step.max_items, max_items)
        if problem_text is not None:
            problem("limit", f"forEach lists {problem_text}")
    if step.max_items is not None and step.for_each is None:
        problem("item", "maxItems applies only to a step with forEach; remove it or add forEach")
    return issues
