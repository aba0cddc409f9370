"""The JSON schema the model answers in: typed by the catalog, or the generic fallback.

**Typed** (the default): each step is one ``anyOf`` branch per catalog tool, with ``"tool":
{"const": NAME}`` and ``parameters`` that tool's own argument object, so a schema-enforcing server
(llama.cpp, vLLM, OpenAI strict mode) cannot emit an unknown tool, an unknown argument or
unparseable parameters. An argument whose type is not already string also accepts a whole-value
template string (``"{{stepId.path}}"``), which the engine resolves to the referenced JSON value.
For strict mode every property is required, so optional arguments become nullable and the reader
drops the nulls (:mod:`toolplan.planning.parsing`).

**Generic**: ``parameters`` is a JSON object *encoded as a string* and ``tool`` any string. It
fits any catalog; it is used for catalogs larger than ``TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS`` tools
and when that setting is 0. For a server that rejected the schema it was sent, the generic schema
without a ``pattern`` is the fallback, which fits any server.

Step ids (a step's ``id``, ``dependsOn`` and ``outputSteps``) carry the validator's
:data:`~toolplan.validation.dag.STEP_ID_PATTERN` in both schemas, so a grammar-enforcing server
cannot emit one that a template cannot name (``2d_releases``). OpenAI's strict mode, llama.cpp and
vLLM accept ``pattern``; a server that does not gets the fallback.

The engine's plan format is the same either way.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Literal

from toolplan.config import DEFAULT_TYPED_SCHEMA_MAX_TOOLS
from toolplan.plan_format.json_schema import inline_refs
from toolplan.tools.catalog import ToolCatalog, ToolInfo
from toolplan.validation.dag import STEP_ID_PATTERN

__all__ = [
    "DEFAULT_TYPED_SCHEMA_MAX_TOOLS",
    "TEMPLATE_PATTERN",
    "PlanSchema",
    "SchemaKind",
    "generic_plan_schema",
    "plan_schema",
    "typed_plan_schema",
]

SchemaKind = Literal["typed", "generic"]
"""``typed``: one branch per tool with typed parameters; ``generic``: parameters as a string."""

TEMPLATE_PATTERN = (
    r"^\{\{([$]item|[$]index|[A-Za-z_][A-Za-z0-9_-]*)([.][A-Za-z0-9_-]+|\[[0-9]+\])*\}\}$"
)
"""A whole-value template as the typed schema accepts it for a non-string argument. Narrower
than the template grammar (keys of letters, digits, ``_`` and ``-``) so every grammar engine can
compile it; the validator checks the real grammar afterwards."""

SCHEMA_NAME = "LLMPlan"
"""The schema's title: the function name in function calling, the json_schema name."""

_PLAN_DESCRIPTION = "A complete plan: a DAG of tool calls run by a deterministic engine."
_KEPT = {
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "anyOf",
    "description",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "additionalProperties",
}
"""Keywords a tool's argument schema keeps: what OpenAI strict mode accepts (``default``,
``title`` and ``examples`` are dropped; a default applies anyway when the argument is left out)."""


@dataclass(frozen=True)
class PlanSchema:
    """The schema sent to the model and how to send it."""

    kind: SchemaKind
    schema: dict[str, Any]
    strict: bool
    """Whether ``strict`` mode can be requested: false when a tool takes a free-form object,
    which OpenAI's strict mode rejects (llama.cpp and vLLM enforce the schema either way)."""

    @property
    def size(self) -> int:
        """Characters of the compact JSON schema."""
        return len(json.dumps(self.schema, separators=(",", ":")))


def _step_id(pattern: bool) -> dict[str, Any]:
    return {"type": "string", "pattern": STEP_ID_PATTERN} if pattern else {"type": "string"}


def _step_common(pattern: bool) -> dict[str, Any]:
    return {
        "id": {
            **_step_id(pattern),
            "description": "Unique step id: letters, digits, _ or -, starting with a letter.",
        },
        "dependsOn": {
            "type": "array",
            "items": _step_id(pattern),
            "description": "Ids of steps that must finish first although no template names "
            "them (only for an order the request asks for); usually [].",
        },
        "confidence": {
            "type": "number",
            "description": "Confidence from 0 to 1 that this step is right.",
        },
        # The fallback for servers that reject ``pattern`` has none anywhere, templates included.
        "forEach": _FOR_EACH if pattern else _for_each(_PLAIN_TEMPLATE),
        "when": _WHEN if pattern else _when(_PLAIN_TEMPLATE),
    }


def _for_each(template: dict[str, Any]) -> dict[str, Any]:
    return {
        "anyOf": [template, {"type": "null"}],
        "description": "null, or a template of a list another step returns, e.g. "
        '"{{posts.blogs}}": the tool is called once per item, and parameters use {{$item}}, '
        "{{$item.field}} and {{$index}}.",
    }


def _when(template: dict[str, Any]) -> dict[str, Any]:
    negated = {
        "type": "object",
        "properties": {"not": template},
        "required": ["not"],
        "additionalProperties": False,
    }
    return {
        "anyOf": [template, negated, {"type": "null"}],
        "description": 'null, or a condition: "{{check.exceeded}}" runs the step only if it is '
        'true; {"not": "{{check.exceeded}}"} only if it is false.',
    }


_TEMPLATE = {"type": "string", "pattern": TEMPLATE_PATTERN}
_PLAIN_TEMPLATE = {"type": "string", "description": 'A template, e.g. "{{stepId.field}}".'}
_FOR_EACH = _for_each(_TEMPLATE)
_WHEN = _when(_TEMPLATE)


def _plan(step_schema: dict[str, Any], step_id: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": SCHEMA_NAME,
        "description": _PLAN_DESCRIPTION,
        "type": "object",
        "properties": {
            "reasoning": {
                "type": "string",
                "description": "One or two sentences on how the steps achieve the request.",
            },
            "steps": {"type": "array", "items": step_schema, "description": "The tool calls."},
            "outputSteps": {
                "type": "array",
                "items": step_id,
                "description": "Ids of the steps whose outputs answer the request.",
            },
        },
        "required": ["reasoning", "steps", "outputSteps"],
        "additionalProperties": False,
    }


def generic_plan_schema(*, step_id_pattern: bool = True) -> PlanSchema:
    """``parameters`` as a JSON string, ``tool`` any string: fits every catalog; without
    ``step_id_pattern``, every server too (the fallback)."""
    properties = _step_common(step_id_pattern)
    step = {
        "type": "object",
        "properties": {
            "id": properties["id"],
            "tool": {"type": "string", "description": "Exact tool name from the catalog."},
            "parameters": {
                "type": "string",
                "description": 'The arguments as a JSON object encoded as a string, e.g. "{\\"name\\": '
                '\\"Alice\\"}". Strings may contain templates like {{stepId.field}}.',
            },
            "dependsOn": properties["dependsOn"],
            "confidence": properties["confidence"],
            "forEach": properties["forEach"],
            "when": properties["when"],
        },
        "required": ["id", "tool", "parameters", "dependsOn", "confidence", "forEach", "when"],
        "additionalProperties": False,
    }
    return PlanSchema("generic", _plan(step, _step_id(step_id_pattern)), strict=True)


_TEMPLATE_REF = {"$ref": "#/$defs/template"}


def _accepts_string(schema: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return schema["$ref"] == _TEMPLATE_REF["$ref"]
    if not schema or ("type" not in schema and "anyOf" not in schema and "enum" not in schema):
        return True  # no constraint: anything goes, a template included
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return "enum" not in schema and "const" not in schema
    return any(_accepts_string(branch) for branch in schema.get("anyOf") or [])


class _Conversion:
    """Turns one tool's argument schema into its typed ``parameters`` schema."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.free_form = False
        """A free-form object was seen: strict mode cannot express it."""

    def value(self, schema: Any) -> dict[str, Any]:
        """A value position: cleaned, and accepting a whole-value template where it does not
        already accept strings."""
        return _with_template(self.clean(schema if isinstance(schema, dict) else {}))

    def clean(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Only the keywords structured-output engines accept; objects closed, their optional
        properties nullable in strict mode (which needs every property required)."""
        out = {key: copy.deepcopy(value) for key, value in schema.items() if key in _KEPT}
        if "anyOf" in out:
            out["anyOf"] = [self.clean(branch) for branch in out["anyOf"]]
        if isinstance(out.get("items"), dict):
            out["items"] = self.value(out["items"])
        if out.get("type") == "object" or ("type" not in out and "properties" in out):
            return self.object(out)
        return out

    def object(self, schema: dict[str, Any]) -> dict[str, Any]:
        properties = schema.get("properties") or {}
        if not properties or schema.get("additionalProperties") not in (None, False):
            self.free_form = True
            return {"type": "object"}
        required = [name for name in schema.get("required") or [] if name in properties]
        converted = {}
        for name, value in properties.items():
            value = self.value(value)
            converted[name] = value if name in required or not self.strict else _nullable(value)
        out: dict[str, Any] = {"type": "object", "properties": converted}
        out["required"] = list(converted) if self.strict else required
        out["additionalProperties"] = False
        if "description" in schema:
            out["description"] = schema["description"]
        return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    description = schema.get("description")
    body = {k: v for k, v in schema.items() if k != "description"}
    branches = list(body["anyOf"]) if set(body) == {"anyOf"} else [body]
    if not any(b.get("type") == "null" for b in branches):
        branches.append({"type": "null"})
    out: dict[str, Any] = {"anyOf": branches}
    if description:
        out["description"] = description
    return out


def _with_template(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``, also accepting a whole-value template where it does not accept strings."""
    if _accepts_string(schema):
        return schema
    description = schema.get("description")
    body = {k: v for k, v in schema.items() if k != "description"}
    branches = list(body["anyOf"]) if set(body) == {"anyOf"} else [body]
    out: dict[str, Any] = {"anyOf": [*branches, dict(_TEMPLATE_REF)]}
    if description:
        out["description"] = description
    return out


def _arguments(info: ToolInfo, conversion: _Conversion) -> dict[str, Any]:
    schema = inline_refs(info.parameters)
    if schema.get("type", "object") != "object":
        conversion.free_form = True
        return {"type": "object"}
    if not schema.get("properties") and schema.get("additionalProperties") in (None, False):
        return {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    return conversion.object({**schema, "type": "object"})


def typed_plan_schema(catalog: ToolCatalog, *, strict: bool = True) -> PlanSchema:
    """One ``anyOf`` branch per tool: ``tool`` a constant, ``parameters`` its typed arguments.

    With ``strict``, optional arguments are required-and-nullable (strict mode's rule). The parts
    every branch shares are ``$defs``, so the schema grows by about one tool schema per tool."""
    conversion = _Conversion(strict)
    branches = [
        {
            "type": "object",
            "properties": {
                "id": {"$ref": "#/$defs/id"},
                "tool": {"const": info.name},
                "parameters": _arguments(info, conversion),
                "dependsOn": {"$ref": "#/$defs/dependsOn"},
                "confidence": {"type": "number"},
                "forEach": {"$ref": "#/$defs/forEach"},
                "when": {"$ref": "#/$defs/when"},
            },
            "required": ["id", "tool", "parameters", "dependsOn", "confidence", "forEach", "when"],
            "additionalProperties": False,
        }
        for info in catalog.infos()
    ]
    schema = _plan({"anyOf": branches}, {"$ref": "#/$defs/id"})
    schema["$defs"] = {
        "id": _step_id(True),
        "dependsOn": {"type": "array", "items": {"$ref": "#/$defs/id"}},
        "template": {"type": "string", "pattern": TEMPLATE_PATTERN},
        "forEach": _for_each(dict(_TEMPLATE_REF)),
        "when": _when(dict(_TEMPLATE_REF)),
    }
    return PlanSchema("typed", schema, strict=not conversion.free_form)


def plan_schema(
    catalog: ToolCatalog,
    *,
    max_typed_tools: int = DEFAULT_TYPED_SCHEMA_MAX_TOOLS,
    strict: bool = True,
) -> PlanSchema:
    """The typed schema for catalogs of up to ``max_typed_tools`` tools, else the generic one."""
    if 0 < len(catalog) <= max_typed_tools:
        return typed_plan_schema(catalog, strict=strict)
    return generic_plan_schema()
