"""What a tool returns: the JSON schema of its output, declared or read from its return type.

The validator uses it to check templates before anything runs (:mod:`toolplan.validation.types`):
``{{metrics[0]}}`` when ``metrics`` returns an object, a key the tool never returns, or a whole
output passed where a number is expected. The planner shows it in the catalog.

Sources, first match wins:
- ``tagged(tool, returns=...)``: a JSON schema (dict) or a type (``TypedDict``, pydantic model,
  ``list[...]``...);
- the tool function's return annotation, when it is more than ``Any``.

``None`` means unknown: nothing is checked against it. A string output counts as unknown, because
the engine parses a string holding a JSON object or list (:func:`toolplan.engine.step.normalize_output`).
"""

from __future__ import annotations

import json
import keyword
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolplan.plan_format.json_schema import inline_refs

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["compact_shape", "returns_schema", "schema_for_type", "shown_shape"]

_DROPPED = {"title", "description", "default", "examples"}


def schema_for_type(annotation: Any) -> dict[str, Any] | None:
    """The JSON schema of values of ``annotation`` as the engine stores them (serialised)."""
    if annotation is Any or annotation is None or annotation is type(None):
        return None
    from pydantic import TypeAdapter  # loaded with LangChain tools anyway; not at import time

    try:
        # by field name: the engine stores pydantic models with model_dump(mode="json")
        schema = TypeAdapter(annotation).json_schema(mode="serialization", by_alias=False)
    except Exception:  # typing.TypedDict before 3.12, arbitrary classes...: unknown, not an error
        return None
    return _known(_clean(inline_refs(schema)))


def _known(schema: Any) -> dict[str, Any] | None:
    """``schema``, or ``None`` when it says nothing certain about the stored output: the engine
    parses a string output that holds a JSON object or list, so a ``str`` tool may store either."""
    if not isinstance(schema, dict) or not schema:
        return None
    branches = schema.get("anyOf") or [schema]
    if any(isinstance(b, Mapping) and b.get("type") == "string" for b in branches):
        return None
    return schema


def _clean(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_clean(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        # "properties" maps names to schemas: keep every name, clean each schema.
        out[key] = (
            {name: _clean(sub) for name, sub in value.items()}
            if key == "properties" and isinstance(value, Mapping)
            else _clean(value)
        )
    return out


def returns_schema(tool: BaseTool) -> dict[str, Any] | None:
    """The tool's output schema, or ``None`` when it is unknown."""
    declared = (tool.metadata or {}).get("returns")
    if isinstance(declared, Mapping):
        return _known(_clean(inline_refs(dict(declared))))
    if declared is not None:
        return schema_for_type(declared)
    if getattr(tool, "response_format", "content") != "content":
        return None  # (content, artifact) tuples: the engine stores the content
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if function is None:
        return None
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable forward references: unknown
        return None
    return schema_for_type(hints.get("return", Any))


def compact_shape(schema: Mapping[str, Any], depth: int = 0) -> str:
    """A short, readable sketch of an output schema for the planner's catalog:
    ``{metrics: [{name: string, unit: string}]}``."""
    if depth > 4:
        return "..."
    branches = [b for b in schema.get("anyOf") or [] if b.get("type") != "null"]
    if branches:
        shown = " | ".join(compact_shape(b, depth + 1) for b in branches)
        return shown + (" | null" if len(branches) < len(schema["anyOf"]) else "")
    if "enum" in schema:
        return " | ".join(map(_literal, schema["enum"]))
    if "const" in schema:
        return _literal(schema["const"])
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if not properties:
            return "object"
        inner = ", ".join(
            f"{name if _plain(name) else _literal(name)}: {compact_shape(sub, depth + 1)}"
            for name, sub in properties.items()
        )
        return "{" + inner + "}"
    if kind == "array":
        items = schema.get("items")
        return (
            f"[{compact_shape(items, depth + 1)}]"
            if isinstance(items, Mapping) and items
            else "list"
        )
    if isinstance(kind, list):
        return " | ".join(kind)
    return str(kind) if kind else "any"


def _plain(name: str) -> bool:
    """A key the sketch may show unquoted: a Python name (the Python planner shows the sketch
    as a return annotation, which must compile)."""
    return name.isidentifier() and not keyword.iskeyword(name)


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def shown_shape(schema: Mapping[str, Any] | None) -> str | None:
    """The sketch worth showing a reader, or ``None`` when it would say only "object"."""
    if not schema:
        return None
    shape = compact_shape(schema)
    return None if shape in ("object", "any") else shape
