"""Function calls read leniently from a model's text reply (the "text" baseline).

Small models served without a tool-call parser often answer a ``tools=`` request in text: a
Hermes ``<tool_call>{...}</tool_call>`` block, a JSON object or list in a markdown fence, or a
Python call such as ``[math.factorial(number=5)]`` (BFCL's prompting format). This reads all of
those into BFCL's answer format ``[{name: {arg: value}}]``, with names mapped back through the
entry's :class:`~bench.bfcl.functions.Toolbox`. Only the shape is lenient: the values are taken
as written, and the official checker judges them.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from bench.bfcl.functions import Toolbox
from bench.harness import json_values

__all__ = ["read_calls"]

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "params", "input")


def _pieces(text: str) -> list[str]:
    """The parts of ``text`` that may hold calls: tool-call blocks, else fences, else all."""
    for pattern in (_TOOL_CALL, _FENCE):
        found = [m.group(1) for m in pattern.finditer(text) if m.group(1).strip()]
        if found:
            return found
    return [text]


def _from_json(value: Any, box: Toolbox) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return [call for item in value for call in _from_json(item, box)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _from_json(value["tool_calls"], box)
    if isinstance(value.get("function"), dict):
        return _from_json(value["function"], box)
    name = value.get("name") or value.get("function") or value.get("tool")
    if isinstance(name, str):
        arguments: Any = next((value[k] for k in _ARGUMENT_KEYS if k in value), {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return []
        return [{box.bfcl_name(name): arguments}] if isinstance(arguments, dict) else []
    if len(value) == 1:  # BFCL's own {name: {arg: value}}
        ((name, arguments),) = value.items()
        if isinstance(arguments, dict):
            return [{box.bfcl_name(name): arguments}]
    return []


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)  # a name or expression: kept as text, the checker decides


def _from_python(text: str, box: Toolbox) -> list[dict[str, Any]]:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return []
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls = []
    for node in nodes:
        name = _dotted(node.func) if isinstance(node, ast.Call) else None
        if not isinstance(node, ast.Call) or name is None:
            return []
        order = box.parameter_order(name)
        arguments = dict(zip(order, (_literal(a) for a in node.args), strict=False))
        arguments.update({k.arg: _literal(k.value) for k in node.keywords if k.arg})
        calls.append({box.bfcl_name(name): arguments})
    return calls


def read_calls(text: str, box: Toolbox) -> list[dict[str, Any]]:
    """The calls written in ``text`` (``[]`` if none can be read)."""
    calls: list[dict[str, Any]] = []
    for piece in _pieces(text):
        found = [c for value in json_values(piece) for c in _from_json(value, box)]
        found = found or _from_python(piece, box)
        if not found:  # a call on a line of its own, amid prose
            found = [c for line in piece.splitlines() for c in _from_python(line, box)]
        calls.extend(found)
    return calls
