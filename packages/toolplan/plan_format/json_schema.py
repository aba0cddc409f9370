"""JSON-schema helpers shared by the validator, the typed plan schema, tool outputs and the
planner's rules: the one place a schema is walked. A union is ``anyOf`` or ``oneOf`` (and, for the
values a schema lists, ``allOf``), nested at any depth; a ``type`` may be a list of types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "accepted_types",
    "declared_types",
    "inline_refs",
    "is_list",
    "items_schema",
    "listed_values",
    "object_branch",
    "object_properties",
    "union_parts",
]

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


def union_parts(schema: Any, keys: tuple[str, ...] = ("anyOf", "oneOf")) -> list[Mapping[str, Any]]:
    """``schema`` and every branch of its unions, nested at any depth (mappings only)."""
    if not isinstance(schema, Mapping):
        return []
    branches = [b for key in keys for b in schema.get(key) or []]
    return [schema, *(part for b in branches for part in union_parts(b, keys))]


def declared_types(schema: Any) -> set[str]:
    """Every JSON type ``schema`` or a branch of it names in ``type``."""
    kinds = [part.get("type") for part in union_parts(schema)]
    return {k for kind in kinds for k in (kind if isinstance(kind, list) else [kind]) if k}


def is_list(schema: Any) -> bool:
    """Whether ``schema`` (or a branch of it: ``list[str] | None``) describes a list."""
    return "array" in declared_types(schema)


def listed_values(schema: Any) -> list[Any] | None:
    """The values ``schema`` lists (``enum``, ``const``) in it or any branch, ``allOf`` too;
    ``None`` when it lists none at all (an open value, not a choice)."""
    parts = [
        p for p in union_parts(schema, ("anyOf", "oneOf", "allOf")) if "enum" in p or "const" in p
    ]
    if not parts:
        return None
    return [v for p in parts for v in ([p["const"]] if "const" in p else list(p["enum"] or []))]


def object_branch(schema: Any, value: Mapping[str, Any] | None = None) -> Mapping[str, Any] | None:
    """The object ``schema`` describes: itself, or its one object branch (the non-null one of an
    optional object); of several, the first that declares every key of ``value``, and ``None``
    without a value to tell them apart."""
    objects = [p for p in union_parts(schema) if isinstance(p.get("properties"), Mapping)]
    if not objects or objects[0] is schema or len(objects) == 1:
        return objects[0] if objects else None
    if value is None:
        return None
    return next((o for o in objects if set(value) <= set(o["properties"])), None)


def object_properties(schema: Any) -> dict[str, Any]:
    """The declared keys of the one object ``schema`` describes (:func:`object_branch`), with
    their schemas; none for a list, a scalar, or a union of objects."""
    branch = object_branch(schema)
    return dict(branch["properties"]) if branch is not None else {}


def items_schema(schema: Any) -> Mapping[str, Any] | None:
    """The schema of a list's items, in ``schema`` or its first branch that has one."""
    found = [p["items"] for p in union_parts(schema) if isinstance(p.get("items"), Mapping)]
    return found[0] if found else None


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
