"""NESTFUL specs as tools: inputs as JSON schema, outputs declared, names mapped both ways.

A v1 spec is ``{"name", "description", "query_parameters": {arg: {...}}, "output_parameters":
{field: {...}}}``. The ``sgd`` specs give no types (only ``allowed_values`` and
``default_value``); ``glaive`` and ``executable`` use JSON-schema types plus a few of their own
(``float``, ``file``, ``Date (yyyy-mm-dd)``). The conversion, applied at every depth:

- inputs: a known type maps to its JSON-schema type (``float`` -> ``number``, ``file`` ->
  ``string``); an unknown one becomes ``string`` with the type written into the description; a
  missing one becomes ``string``, as BFCL's conversion does (every ``sgd`` gold value is a
  string); non-empty ``allowed_values`` become ``enum``; ``default_value``/``default`` become
  ``default``; ``required: true`` makes an argument required;
- outputs (``returns``, which toolplan's validator checks references against): the same types,
  but a field without one stays untyped (unknown), since nothing says what it holds.

Names: an OpenAI-compatible API takes ``^[a-zA-Z0-9_-]{1,64}$``, so ``Buses.FindBus`` is offered
as ``Buses_FindBus`` (every other character becomes ``_``; ``-`` is kept, as in BFCL's mapping).
That is not always a Python identifier (``Real-Time_Product_Search_Search``): toolplan's Python
plans meet such names as they are, and the bench records what happens. Every contestant sees
the same names; answers are mapped back before scoring.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from bench.harness import api_name, never_run
from bench.nestful.data import declared_default
from toolplan.tools.catalog import ToolCatalog, tagged

__all__ = ["Toolbox", "input_schema", "output_schema"]

_TYPES: dict[str, str] = {
    "string": "string",
    "str": "string",
    "file": "string",
    "integer": "integer",
    "int": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "object": "object",
    "dict": "object",
}
_KEPT = ("description", "enum", "minimum", "maximum", "format")
"""Keys of a spec's parameter that are JSON-schema keywords with the same meaning."""


def _typed(spec: dict[str, Any], *, missing: str | None) -> dict[str, Any]:
    """One parameter or output field of a spec as JSON schema. ``missing`` is the type given
    when the spec names none (``None``: leave it untyped)."""
    out = {k: copy.deepcopy(spec[k]) for k in _KEPT if k in spec}
    written = spec.get("type")
    if isinstance(written, str) and written.strip().lower() in _TYPES:
        out["type"] = _TYPES[written.strip().lower()]
    elif isinstance(written, str) and written.strip():
        out["type"] = "string"
        out["description"] = f"{out.get('description', '')} (type: {written})".strip()
    elif missing is not None:
        out["type"] = missing
    allowed = spec.get("allowed_values")
    if isinstance(allowed, list) and allowed and "enum" not in out:
        out["enum"] = list(allowed)
    default = declared_default(spec)
    if default is not None:
        out["default"] = default
    if isinstance(spec.get("properties"), dict):
        out["properties"] = {
            k: _typed(v, missing=missing)
            for k, v in spec["properties"].items()
            if isinstance(v, dict)
        }
    if isinstance(spec.get("items"), dict):
        out["items"] = _typed(spec["items"], missing=missing)
    if "format" in out and out.get("type") != "string":
        del out["format"]
    return out


def input_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's ``query_parameters`` as a JSON-schema object."""
    parameters = spec.get("query_parameters") or spec.get("parameters") or {}
    properties = {k: _typed(v, missing="string") for k, v in parameters.items()}
    required = [
        k for k, v in parameters.items() if v.get("required") is True and not v.get("optional")
    ]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def output_schema(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The spec's ``output_parameters`` as a JSON-schema object (``None`` when it has none)."""
    outputs = spec.get("output_parameters") or {}
    if not outputs:
        return None
    return {
        "type": "object",
        "properties": {k: _typed(v, missing=None) for k, v in outputs.items()},
    }


@dataclass(frozen=True)
class Toolbox:
    """A sample's specs under API-safe names, and the way back to NESTFUL's names."""

    specs: tuple[dict[str, Any], ...]
    api_names: tuple[str, ...]

    @classmethod
    def of(cls, specs: Iterable[dict[str, Any]]) -> Toolbox:
        """Name every spec (other characters than ``[A-Za-z0-9_-]`` become ``_``; a clash gets
        a ``_2`` suffix)."""
        docs = tuple(specs)
        taken: set[str] = set()
        names = []
        for spec in docs:
            name = api_name(spec["name"], taken)
            taken.add(name)
            names.append(name)
        return cls(docs, tuple(names))

    def api_name(self, name: str) -> str:
        """The name NESTFUL's function ``name`` is offered under (``name`` itself if unknown)."""
        for spec, api in zip(self.specs, self.api_names, strict=True):
            if spec["name"] == name:
                return api
        return name

    def nestful_name(self, name: str) -> str:
        """NESTFUL's name for a name a model used: an offered name maps back, NESTFUL's own
        name stays, anything else is returned as written (and scores as a wrong function)."""
        for spec, api in zip(self.specs, self.api_names, strict=True):
            if name in (api, spec["name"]):
                return str(spec["name"])
        return name

    def openai_tools(self) -> list[dict[str, Any]]:
        """OpenAI's ``tools=[{"type": "function", ...}]``: the native tool-call contestant's."""
        return [
            {
                "type": "function",
                "function": {
                    "name": api,
                    "description": str(spec.get("description") or ""),
                    "parameters": input_schema(spec),
                },
            }
            for spec, api in zip(self.specs, self.api_names, strict=True)
        ]

    def prompt_tools(self) -> list[dict[str, Any]]:
        """The specs as NESTFUL's prompt shows them (``name``, ``description``,
        ``parameters``, ``output_parameters``, as in its v2 data), under the offered names; the
        endpoint details of ``executable`` specs (host, URL, method) are left out."""
        return [
            {
                "name": api,
                "description": spec.get("description") or "",
                "parameters": copy.deepcopy(spec.get("query_parameters") or {}),
                "output_parameters": copy.deepcopy(spec.get("output_parameters") or {}),
            }
            for spec, api in zip(self.specs, self.api_names, strict=True)
        ]

    def tools(self) -> list[BaseTool]:
        """LangChain tools with these input schemas and declared outputs; planned, never run."""
        made: list[BaseTool] = []
        for spec, api in zip(self.specs, self.api_names, strict=True):
            tool = StructuredTool(
                name=api,
                description=str(spec.get("description") or api),
                args_schema=input_schema(spec),
                func=never_run("NESTFUL"),
            )
            returns = output_schema(spec)
            made.append(tagged(tool, returns=returns) if returns is not None else tool)
        return made

    def catalog(self) -> ToolCatalog:
        """A toolplan catalog of these tools, for the planner and the validator."""
        return ToolCatalog(self.tools(), source="nestful")
