"""Unasked steps: a planner check for a step whose values the request never mentions.

Given several tools, a small model calls the ones the request asked for and then some that only
look related, with values it makes up: "run a t-test on groups A and B" also got
``get_personality_traits(hobby="reading")``, and a guitar's price got
``identify_color_rgb(color_name="white")``. Given a request no tool fits, it calls the nearest
tool anyway, with made-up arguments (``bloodcell_classification(cell_shape="round")``). Every
schema accepts such a step, and it runs. The grounding checks
(:mod:`toolplan.analysis.grounding`) do not see it: it takes nothing from another step, so
there is no template to suggest.

A step is *unasked* when all of these hold:

* it takes nothing from another step (no template, no ``forEach``, no ``when``): a step that
  does is there to use what the plan found;
* its tool's required arguments include literal strings, and the request mentions none of
  them. *Mentions* is read loosely, because a model rightly rewrites what it was told: a word
  of the value in the request (``"Boston, MA"`` for Boston), the same first four letters
  (``hearts``, ``Germany`` for "German"), initials (``Los Angeles`` for LA), a code in capitals
  (``USD`` for "US dollars", ``AAPL``), or a value the catalog offers: one of the argument's
  ``enum``, its ``default``, or a word of its description (``'dontcare'`` when the user has
  no preference). Words are split at underscores and capitals (``disk_io`` for disk,
  ``cpuUsage`` for CPU). A string with a digit is a number written as text (``"17:00"``,
  ``"2023-07-15"``) or a code (``"C12H22O11"`` for sucrose), and is left out with numbers;
* the request is written in a Latin script: a value translated from another one (Beijing for
  北京) cannot be matched by its letters, so such a request is not checked. Nor is a plan
  with no request at all (a document).

Numbers are left out because a model rightly computes them (4 kings in a deck of 52).

When the plan has other steps and nothing depends on the unasked ones, the planner drops them
itself (:func:`drop_unasked`), and the planning record says so (``unaskedSteps``): told to
remove such a step, the small model kept it in both repairs, and planning failed. When every
step is unasked, the refusal goes back to the model, which uses the request's values or (when no
tool does what was asked) answers with no steps. ``python -m bench.grounding`` measures the false
refusals on BFCL's answers, which only use the request's values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from toolplan.errors import ValidationIssue
from toolplan.plans.plan import Plan, Step, parse_plan
from toolplan.plans.templates import contains_template, references
from toolplan.tools.catalog import ToolCatalog

__all__ = ["check_unasked", "drop_unasked", "mentions"]

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_DIGIT = re.compile(r"\d")
_CODE = re.compile(r"[A-Z][A-Z0-9]{1,4}")
_LETTER = re.compile(r"[^\W\d_]")
_STEM = 4
_LATIN_SHARE = 0.8
_SHOWN = 3


def _latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return not letters or sum(c.isascii() for c in letters) / len(letters) > _LATIN_SHARE


def mentions(request: str, value: str) -> bool:
    """Whether ``request`` mentions ``value``, read loosely (see the module's docstring)."""
    stripped = value.strip()
    folded = stripped.casefold()
    if not folded or folded in request.casefold() or _CODE.fullmatch(stripped):
        return True
    said = set(_WORD.findall(request.casefold()))
    words = _WORD.findall(_CAMEL.sub(" ", stripped).casefold())
    if not words:
        return True
    stems = {w[:_STEM] for w in said if len(w) >= _STEM}
    if any(w in said or (len(w) >= _STEM and w[:_STEM] in stems) for w in words):
        return True
    initials = "".join(w[0] for w in words)
    return any(2 <= len(w) <= len(initials) and initials.startswith(w) for w in said)


def _in_words(text: str, value: str) -> bool:
    """Whether ``value`` is a word (or words) of ``text``: ``'dontcare'`` in an argument's
    description that says to pass it when the user has no preference."""
    folded = value.strip().casefold()
    return (
        bool(folded)
        and re.search(rf"(?<!\w){re.escape(folded)}(?!\w)", text.casefold()) is not None
    )


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str) and value.strip():
        yield value


def _takes_from_others(step: Step) -> bool:
    return (
        step.for_each is not None
        or step.condition is not None
        or contains_template(step.parameters)
    )


def _unmentioned(step: Step, schema: Mapping[str, Any], request: str) -> list[tuple[str, str]]:
    """The required arguments' literal strings, as ``(argument, value)``, if the request
    mentions none of them (else nothing)."""
    assert isinstance(step.parameters, dict)
    properties = schema.get("properties") or {}
    found: list[tuple[str, str]] = []
    for name in schema.get("required") or []:
        if name not in step.parameters:
            continue
        schema_of = properties.get(name) or {}
        allowed = [*(schema_of.get("enum") or []), schema_of.get("default")]
        described = str(schema_of.get("description") or "")
        for value in _strings(step.parameters[name]):
            if value in allowed or mentions(request, value) or _in_words(described, value):
                return []
            if not _LETTER.search(value) or _DIGIT.search(value):
                continue  # a number written as text (a time, a date), or a code (C6H12O6)
            found.append((name, value))
    return found


def check_unasked(plan: Plan, catalog: ToolCatalog, request: str) -> list[ValidationIssue]:
    """One issue per step the request does not ask for (see the module's docstring).
    ``request`` is everything the planner was told: the query, and a replan's context."""
    if not request.strip() or not _latin(request):
        return []  # nothing to compare with, or nothing its letters can match
    unasked: list[tuple[Step, list[tuple[str, str]]]] = []
    for step in plan.steps:
        if step.tool not in catalog or not isinstance(step.parameters, dict):
            continue
        if _takes_from_others(step):
            continue
        found = _unmentioned(step, catalog.info(step.tool).parameters, request)
        if found:
            unasked.append((step, found))
    every = len(unasked) == len(plan.steps)
    issues = []
    for step, found in unasked:
        shown = ", ".join(f"{value!r} ({name})" for name, value in found[:_SHOWN])
        fix = (
            "if no tool does what the request asks, answer with no steps"
            if every
            else f"if the request does not ask for what {step.tool!r} does, remove the step"
        )
        issues.append(
            ValidationIssue(
                "unasked",
                f"step {step.id!r}: the request mentions none of the values it passes to tool "
                f"{step.tool!r}: {shown}. Use the values the request gives; {fix}",
                step.id,
            )
        )
    return issues


def drop_unasked(
    plan: Plan, issues: Sequence[ValidationIssue]
) -> tuple[Plan, dict[str, str]] | None:
    """``plan`` without its unasked steps, and those as ``{step id: tool}``, when that is all
    that is wrong with it: every issue is an unasked step, no step uses or waits for one, and a
    step the request asked for is left. ``None`` otherwise (the issues go to the model)."""
    unasked = {issue.step for issue in issues if issue.code == "unasked"}
    if not unasked or any(issue.code != "unasked" or not issue.step for issue in issues):
        return None
    kept = [step for step in plan.steps if step.id not in unasked]
    if not kept:
        return None
    for step in kept:
        used = set(step.depends_on) | references(step.model_dump(by_alias=True, exclude={"id"}))
        if used & unasked:
            return None
    data = plan.to_json()
    data["steps"] = [step for step in data["steps"] if step["id"] not in unasked]
    outputs = [o for o in data.pop("outputSteps", None) or [] if o not in unasked]
    if outputs:  # else the model's outputs were the dropped steps: every step is one
        data["outputSteps"] = outputs
    dropped = {step.id: step.tool for step in plan.steps if step.id in unasked}
    return parse_plan(data), dropped
