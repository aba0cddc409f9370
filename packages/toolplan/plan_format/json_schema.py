"""Small JSON-schema helpers shared by the validator, the typed plan schema and tool outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["accepted_types", "inline_refs"]

_MAX_REF_DEPTH = 8


def inline_refs(schema: Any, defs: Mapping[str, Any] | None = None, depth: int = 0) -> Any:
    """``schema`` with its local ``$ref``s replaced by their definitions.

    ``defs`` defaults to the schema's own ``$defs`` / ``definitions``, which are dropped from the
    result. Recursion is cut after 8 levels: a recursive or unknown reference becomes ``{}``
    (unconstrained), which every caller treats as "anything goes"."""
    if defs is None:
        if not isinstance(schema, Mapping):
            return schema
        defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
        schema = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    if isinstance(schema, list):
        return [inline_refs(item, defs, depth) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if depth > _MAX_REF_DEPTH or name not in defs:
            return {}
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return inline_refs({**defs[name], **rest}, defs, depth + 1)
    return {key: inline_refs(value, defs, depth) for key, value in schema.items()}


def accepted_types(schema: Mapping[str, Any]) -> set[str] | None:
    """The JSON types ``schema`` accepts, or ``None`` for "any" (no ``type`` constraint)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"] or [])
        return {_json_type(value) for value in values} or None
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        found: set[str] = set()
        for branch in branches:
            types = accepted_types(branch) if isinstance(branch, Mapping) else None
            if types is None:
                return None
            found |= types
        return found
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
