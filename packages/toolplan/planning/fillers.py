"""What a model writes for an optional argument it means to leave out, dropped before validation.

Strict structured output (OpenAI strict mode, and llama.cpp or vLLM enforcing the typed schema)
needs every property required, so the typed schema makes each optional property nullable
(:mod:`toolplan.planning.schema`), at every depth: the properties of a nested object argument,
and of the objects in an array, too. The model must then write *something* for every optional
argument it has no value for. It writes ``null``, as the schema suggests, or a filler: ``""`` or
the string ``"null"``. Left in the plan, these fail validation (``null`` where the tool takes a
string) or reach the tool in place of its default.

The rule, applied to the properties an object's schema does **not** list as required, at every
depth of an argument:

- ``null`` is dropped: strict mode made the model write a value for every optional property,
  and ``null`` is how the schema told it to say "none" (a tool whose optional argument takes
  null gets its default, which for ``x: T | None = None`` is the same);
- ``""`` and ``"null"`` are dropped unless the property's schema names that exact string in
  ``enum`` or ``const`` (then it is a choice among the tool's values, not a filler).

A dropped argument is left out, so the tool's default applies. Required properties are never
touched: a filler there is an error the validator reports. The cost of the rule is that an
optional string argument cannot be set to ``""`` on purpose by a planner model; a tool whose
empty string means something should say so with an ``enum`` (or make the argument required).
Values the schema cannot place (an unknown argument, an object under a free-form or ambiguous
schema) are left as they are, for the validator to judge.

This is the ``nulls`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`), a
*format* one (it changes no meaning): it runs by default, not with
``TOOLPLAN_PLANNER_REWRITES=none``, and each change it makes is recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolplan.plan_format.json_schema import (
    inline_refs,
    items_schema,
    listed_values,
    object_branch,
)

__all__ = ["FILLER_STRINGS", "drop_fillers"]

FILLER_STRINGS = ("", "null")
"""Strings a model writes for "no value" where the schema made it write a value."""


def drop_fillers(parameters: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` (a tool's arguments) without the optional arguments, at any depth, whose
    value only says "no value": see the module's rule. ``schema`` is the tool's argument
    schema; its local ``$ref``s are followed."""
    return _object(parameters, inline_refs(dict(schema)))


def _object(value: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return value  # free-form: nothing says what is optional
    required = set(schema.get("required") or [])
    kept: dict[str, Any] = {}
    for name, item in value.items():
        prop = properties.get(name)
        if not isinstance(prop, Mapping):
            kept[name] = item  # unknown argument: the validator names it
        elif name in required or not _says_no_value(item, prop):
            kept[name] = _value(item, prop)
    return kept


def _value(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        branch = object_branch(schema, value)
        return _object(value, branch) if branch is not None else value
    if isinstance(value, list):
        items = items_schema(schema)
        return value if items is None else [_value(item, items) for item in value]
    return value


def _says_no_value(value: Any, schema: Mapping[str, Any]) -> bool:
    if value is None:
        return True
    if isinstance(value, str) and value in FILLER_STRINGS:
        return value not in (listed_values(schema) or [])
    return False
