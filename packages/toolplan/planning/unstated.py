"""Optional values the request never stated, dropped before validation: the tool's default applies.

Strict structured output makes a model write every optional argument (:mod:`.fillers`), and a
small model fills some with a value of its own instead of "none": ``unit: "miles"`` where the
tool says "(optional, default is kilometers)" and the request names no unit,
``optional_meal_time: "Dinner"`` for "how many calories in the Beef Lasagna recipe". Each is
data nobody gave, and it reaches the tool in place of the default its author chose. On BFCL's
tuning entries (issue 28), such values were 3 of the 11 misses of ``multiple``.

An argument is *unstated*, and dropped, when all of these hold, each read so that a value the
user gave or the model had to choose is kept:

* the tool does not require it, and says what happens without it: its schema has a
  ``default``, or its description says ``default`` or ``optional`` (not "no default");
* it is not a choice from a closed list (no ``enum`` or ``const``, in any branch): a model
  that maps "below 20" to the operator ``lt`` chose it from the request's meaning, which the
  request's words do not show;
* its value is not the tool's own ``default`` (dropping that would change nothing), and is a
  literal string of one or two words: no template (what another step found), no
  number or digit (``days_ahead: 30`` for "next month", a date for "March 12th": right
  inferences), no list, no longer text (a draft's content the model was asked to write);
* the request does not mention it (:func:`~toolplan.planning.unasked.mentions`: a word of it, its
  first four letters, initials, an abbreviation like ``km``, a code in capitals), and is written
  in a Latin script, so that a value translated from another one (Beijing for 北京) is never
  taken for made up.

``python -m bench.grounding`` measures the drops BFCL's own answers would suffer (an argument
BFCL does not allow to be left out): 3 of 2,351 entries, each a value the model inferred from
the request's meaning ("intermediate" for "not beginners but not advanced", ``women`` for
"female"). Only a step's top-level arguments are read. The planning record names what was dropped
(``unstatedArguments``: ``{step id: {argument: value}}``), so it is never silent.

This is the ``unstated`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`), a
*heuristic* one: it runs only with ``TOOLPLAN_PLANNER_REWRITES=all`` (or
``Toolplan(rewrites="all")``), and each change it makes is recorded as ``{rule, step, before,
after}`` and printed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolplan.plan_format.json_schema import inline_refs, listed_values
from toolplan.plan_format.templates import contains_template
from toolplan.planning.unasked import latin_script, mentions
from toolplan.tools.catalog import ToolCatalog

__all__ = ["drop_unstated"]

_STATES_DEFAULT = re.compile(r"\b(?:default|defaults|optional)\b", re.IGNORECASE)
_DENIES_DEFAULT = re.compile(r"\b(?:no|not|without(?: a)?) (?:default|optional)\b", re.IGNORECASE)
_MAX_WORDS = 2


def drop_unstated(
    data: dict[str, Any], catalog: ToolCatalog, request: str
) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """``data`` (plan JSON as read from the model) without its unstated arguments (see the
    module's rule), and those as ``{step id: {argument: value}}``. ``request`` is everything
    the planner was told: the query, and a replan's context."""
    if not request.strip() or not latin_script(request):
        return data, {}
    dropped: dict[str, dict[str, str]] = {}
    steps: list[Any] = []
    for step in data.get("steps") or []:
        found = _unstated(step, catalog, request)
        if found:
            dropped.setdefault(step["id"], {}).update(found)  # two steps may share an id
            parameters = {k: v for k, v in step["parameters"].items() if k not in found}
            step = dict(step, parameters=parameters)
        steps.append(step)
    return (dict(data, steps=steps), dropped) if dropped else (data, {})


def _unstated(step: Any, catalog: ToolCatalog, request: str) -> dict[str, str]:
    if not isinstance(step, dict) or not isinstance(step.get("id"), str):
        return {}
    tool, parameters = step.get("tool"), step.get("parameters")
    if not isinstance(tool, str) or tool not in catalog or not isinstance(parameters, dict):
        return {}
    schema = inline_refs(dict(catalog.info(tool).parameters or {}))
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}  # free-form: nothing says what is optional
    required = set(schema.get("required") or [])
    return {
        name: value
        for name, value in parameters.items()
        if name not in required
        and isinstance(prop := properties.get(name), Mapping)
        and isinstance(value, str)
        and value != prop.get("default")  # the default itself: dropping it changes nothing
        and _optional_with_default(prop)
        and _short_literal(value)
        and not mentions(request, value)
    }


def _optional_with_default(schema: Mapping[str, Any]) -> bool:
    """Whether the property says what happens without it, and is no closed choice."""
    if listed_values(schema) is not None:
        return False
    description = schema.get("description")
    if "default" in schema:
        return True
    return (
        isinstance(description, str)
        and _STATES_DEFAULT.search(description) is not None
        and _DENIES_DEFAULT.search(description) is None
    )


def _short_literal(value: str) -> bool:
    """One or two words, no digit (a date, a time, ``m^2``: computed from the request, and
    not matched by its words), no template."""
    return (
        0 < len(value.split()) <= _MAX_WORDS
        and not any(c.isdigit() for c in value)
        and not contains_template(value)
    )
