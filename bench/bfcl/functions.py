"""BFCL function docs as tools: JSON schema, names an OpenAI-compatible API accepts, and back.

BFCL writes parameter types the Gorilla way (``dict``, ``float``, ``tuple``, ``any``) and names
with dots (``math.factorial``), which OpenAI's ``^[a-zA-Z0-9_-]{1,64}$`` refuses. The conversion
follows BFCL's own for OpenAI function-calling models (``convert_to_tool`` with
``GORILLA_TO_OPENAPI`` in ``bfcl_eval.model_handler.utils``: dots become ``_``, ``float`` becomes
``number`` with "This is a float type value." appended to its description, an unknown or missing
type becomes ``string``), applied at every depth. toolplan's planner and the native baseline see
the same tools; the answers are mapped back to BFCL's names before scoring.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from bench.harness import api_name, never_run
from toolplan.tools.catalog import ToolCatalog

__all__ = ["Toolbox", "to_json_schema"]

_TYPES: dict[str, str] = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "any": "string",
}
"""BFCL's Gorilla types -> JSON schema, as BFCL maps them for OpenAI models (``any`` included)."""

_FLOAT_NOTE = " This is a float type value."
_NOT_SCHEMA = ("optional",)
"""Keys in BFCL's docs that are not JSON schema keywords."""


def to_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """One BFCL parameter schema (at any depth) as JSON schema; the input is not modified."""
    out = {k: copy.deepcopy(v) for k, v in schema.items() if k not in _NOT_SCHEMA}
    gorilla = schema.get("type")
    out["type"] = _TYPES.get(gorilla, "string") if isinstance(gorilla, str) else "string"
    if gorilla == "float":
        out["description"] = str(schema.get("description", "")) + _FLOAT_NOTE
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: to_json_schema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = to_json_schema(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = to_json_schema(schema["additionalProperties"])
    return out


def _parameters(function: dict[str, Any]) -> dict[str, Any]:
    parameters = to_json_schema(function.get("parameters") or {"type": "dict"})
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return parameters


@dataclass(frozen=True)
class Toolbox:
    """An entry's functions, under API-safe names, with the way back to BFCL's names."""

    functions: tuple[dict[str, Any], ...]
    """BFCL's function docs, unchanged."""
    api_names: tuple[str, ...]
    """The name each function is offered under, in the same order."""

    @classmethod
    def of(cls, functions: Iterable[dict[str, Any]]) -> Toolbox:
        """Name every function (dots and other characters an API refuses become ``_``; a
        clash gets a ``_2`` suffix)."""
        docs = tuple(functions)
        taken: set[str] = set()
        names = []
        for function in docs:
            name = api_name(function["name"], taken)
            taken.add(name)
            names.append(name)
        return cls(docs, tuple(names))

    def bfcl_name(self, name: str) -> str:
        """BFCL's name for a name a model used: an API name maps back, BFCL's own name (a
        model may write ``math.factorial`` in text) stays, anything else is returned as is."""
        for function, api in zip(self.functions, self.api_names, strict=True):
            if name in (api, function["name"]):
                return str(function["name"])
        return name

    def parameter_order(self, name: str) -> list[str]:
        """Parameter names of the function called ``name`` (either naming), in doc order:
        how positional arguments of a call written as text are read."""
        wanted = self.bfcl_name(name)
        for function in self.functions:
            if function["name"] == wanted:
                return list((function.get("parameters") or {}).get("properties") or {})
        return []

    def openai_tools(self) -> list[dict[str, Any]]:
        """The functions in OpenAI's ``tools=[{"type": "function", ...}]`` format."""
        return [
            {
                "type": "function",
                "function": {
                    "name": api,
                    "description": str(function.get("description") or ""),
                    "parameters": _parameters(function),
                },
            }
            for function, api in zip(self.functions, self.api_names, strict=True)
        ]

    def tools(self) -> list[BaseTool]:
        """LangChain tools with these schemas; planned, never run."""
        return [
            StructuredTool(
                name=tool["function"]["name"],
                description=tool["function"]["description"] or tool["function"]["name"],
                args_schema=tool["function"]["parameters"],
                func=never_run("BFCL"),
            )
            for tool in self.openai_tools()
        ]

    def catalog(self) -> ToolCatalog:
        """A toolplan catalog of these tools, for the planner."""
        return ToolCatalog(self.tools(), source="bfcl")
