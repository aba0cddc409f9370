"""Expressions of a Python plan read into the plan's values, never evaluated: literals, checked
against the input limits and folded where they compute (:mod:`toolplan.plan_format.python_values`);
references to a step's output (``author["_id"]``, ``author.name``, ``rows[0]``), which are
templates (``{{author._id}}``); f-strings; the conversions ``str``/``int``/``float``/``bool``; a
call written inside an expression, which is a step of its own; and, in a statement's place, a
call's arguments, an ``if``'s condition and what a loop goes over.

:class:`ExpressionReader` reads them for :class:`~toolplan.plan_format.python_plan.PythonReader`,
which reads the statements: it binds the names (:data:`Binding`) this reader reads, and makes the
steps of the calls it finds. Whatever is not part of the plan language is refused
(:class:`~toolplan.plan_format.python_refusals.Refused`) where it is written.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.python_refusals import HELP, Quiet, Refused, shown, what
from toolplan.plan_format.python_tools import PythonTool, PythonTools, argument_aliases
from toolplan.plan_format.python_values import (
    CONVERSIONS,
    Budget,
    TooBig,
    check_number,
    check_text,
    convert_literal,
    fold,
)
from toolplan.plan_format.templates import (
    INDEX,
    contains_template,
    exact_template,
    key_writable,
    reference_text,
)

__all__ = [
    "IGNORED_CALLS",
    "Binding",
    "BrokenName",
    "ExpressionReader",
    "LoopName",
    "LoopSource",
    "StepName",
    "ValueName",
    "called_name",
    "negated",
]


IGNORED_CALLS = frozenset({"print"})
"""Calls that are no step: a statement of one is ignored, and it has no value."""

_TYPES_OF = {"int": {"integer", "number"}, "float": {"number"}, "bool": {"boolean"}}


@dataclass(frozen=True)
class StepName:
    """A name bound to a step's output."""

    step_id: str


@dataclass(frozen=True)
class ValueName:
    """A name bound to a literal (folded where it is used) or to a reference (a template)."""

    value: Any
    size: int


@dataclass(frozen=True)
class LoopName:
    """A loop variable: the current item (``$item``) or its position (``$index``)."""

    source: str


@dataclass(frozen=True)
class BrokenName:
    """A name whose statement was refused: reading it says nothing more."""


Binding = StepName | ValueName | LoopName | BrokenName
"""What a name of the plan stands for."""


@dataclass(frozen=True)
class LoopSource:
    """What a loop goes over, and whether it numbers the items (``enumerate``)."""

    items: str | list[Any]
    enumerated: bool


@dataclass
class ExpressionReader:
    """Reads the expressions of one plan into JSON values (templates for what steps output),
    by the names its statements bound so far; one per reading, which its budget is for."""

    tools: PythonTools | None
    """The tools calls may name (``None``: any call is a tool call)."""
    limits: InputLimits
    """What every value is checked against before it is built."""
    names: Mapping[str, Binding]
    """What each name is bound to: the statement reader's own mapping, which it updates as it
    binds."""
    call_step: Callable[[ast.Call], str]
    """Makes a call written in an expression a step of its own (before the step whose argument
    it is); returns the step's id."""
    budget: Budget = field(init=False)
    """What the reading may still fold, and copy through names bound to literals."""

    def __post_init__(self) -> None:
        self.budget = Budget(self.limits)

    def value(self, node: ast.expr, schema: Mapping[str, Any] | None = None) -> Any:
        """The JSON value (templates for references) an expression stands for; ``schema``, when
        known, is what the argument it is passed to takes."""
        limits = self.limits
        try:
            return self._value(node, schema, limits)
        except TooBig as error:
            raise Refused(node, str(error)) from None

    def _value(self, node: ast.expr, schema: Mapping[str, Any] | None, limits: InputLimits) -> Any:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or value is None:
                return value
            if isinstance(value, int | float):
                if isinstance(value, float) and value != value:
                    raise Refused(node, "NaN is not a JSON value")
                return check_number(value, limits)
            if isinstance(value, str):
                return check_text(value, limits)
            raise Refused(node, f"{shown(node)} is not a JSON value")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.value(node.operand)
            if isinstance(operand, int | float) and not isinstance(operand, bool):
                return -operand if isinstance(node.op, ast.USub) else operand
            raise Refused(
                node, f"arithmetic on {shown(node.operand)} is not part of the plan language"
            )
        if isinstance(node, ast.List | ast.Tuple):
            items = _items(schema)
            return [self.value(element, items) for element in node.elts]
        if isinstance(node, ast.Dict):
            result: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    raise Refused(item, "**mapping is not part of the plan language")
                name = self.value(key)
                if not isinstance(name, str) or contains_template(name):
                    raise Refused(key, "a dict's keys are literal strings")
                result[name] = self.value(item, _property(schema, name))
            return result
        if isinstance(node, ast.Name | ast.Subscript | ast.Attribute):
            return self.reference(node)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        if isinstance(node, ast.Call):
            if called_name(node) in IGNORED_CALLS:
                raise Refused(node, "print() has no value")
            if self.is_conversion(node):
                return self.conversion(node, schema)
            return "{{" + self.call_step(node) + "}}"
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
                if exact_template(left) is not None and exact_template(right) is not None:
                    # two outputs added: numbers in Python, which the plan cannot compute;
                    # reading it as text would change what was written
                    raise Refused(
                        node,
                        f"{shown(node)} adds two steps' outputs, which the plan language does "
                        "not compute: a tool must (to join them as text, write "
                        'f"{a}{b}")',
                    )
                return fold(node.op, left, right, self.budget)  # text joined (templates too)
            if _literal(left) and _literal(right):
                folded = fold(node.op, left, right, self.budget)
                if folded is not None:
                    return folded
                raise Refused(
                    node,
                    f"{shown(node)}: the plan language computes + - * / on literal numbers "
                    "and joins text with +, nothing else: write the value",
                )
            raise Refused(
                node,
                f"arithmetic ({shown(node)}) on a step's output is not part of the plan "
                "language: a tool must compute it",
            )
        raise Refused(
            node, f"{shown(node)} ({what(node)}) is not part of the plan language: {HELP}"
        )

    def is_conversion(self, node: ast.Call) -> bool:
        """Whether ``node`` is ``str(x)``, ``int(x)``, ``float(x)`` or ``bool(x)`` (and no tool
        has that name)."""
        called = called_name(node)
        return (
            called in CONVERSIONS
            and not (self.tools is not None and called in self.tools)
            and len(node.args) == 1
            and not node.keywords
        )

    def conversion(self, node: ast.Call, schema: Mapping[str, Any] | None) -> Any:
        """``str``/``int``/``float``/``bool`` of a value: of a literal, computed; of a step's
        value, ``str`` is its text (as ``f"{x}"``) and the others are read where ``schema``
        (the argument's) takes that type."""
        kind = called_name(node)
        assert kind is not None
        inner = self.value(node.args[0])
        if _literal(inner):
            try:
                return convert_literal(kind, inner, self.limits)
            except ValueError as error:
                raise Refused(node, f"{shown(node)}: {error}") from None
        if kind == "str":
            return inner if isinstance(inner, str) else _text(inner)
        wanted = _TYPES_OF[kind]
        accepted = _accepted(schema)
        if accepted is None:
            raise Refused(
                node,
                f"{shown(node)} cannot be checked here (no argument type to check it against): "
                f"pass {shown(node.args[0])} as it is, and the tool's argument type converts it",
            )
        if not accepted & wanted:
            raise Refused(
                node,
                f"{shown(node)} makes a {kind}, but the argument takes "
                f"{' or '.join(sorted(accepted))}: pass {shown(node.args[0])} as it is"
                + (" (or str(...) of it)" if "string" in accepted else ""),
            )
        return inner  # the tool reads the value as the type it takes

    def reference(self, node: ast.expr) -> Any:
        """A name, or keys and positions read from it (``x["a"][0]``, ``x.a``): a template for a
        step's output or a loop's item, the value itself for a name bound to a literal."""
        path: list[str | int] = []
        current = node
        while isinstance(current, ast.Subscript | ast.Attribute):
            if isinstance(current, ast.Attribute):
                path.append(current.attr)
            else:
                key = current.slice
                if not isinstance(key, ast.Constant) or isinstance(key.value, bool):
                    raise Refused(key, f"index with a literal key or position, not {shown(key)}")
                if isinstance(key.value, int):
                    if key.value < 0:
                        raise Refused(key, "a negative position is not part of the plan language")
                    path.append(key.value)
                elif isinstance(key.value, str) and key_writable(key.value):
                    path.append(key.value)
                else:
                    raise Refused(
                        key,
                        f"the key {shown(key)} cannot be read in a plan (a key may not hold "
                        "both quotes, a backslash, brackets or braces)",
                    )
            current = current.value
        path.reverse()
        if isinstance(current, ast.Call):
            if self.is_conversion(current):
                raise Refused(current, f"{shown(current)} has no keys to read")
            source = self.call_step(current)
            return _template(source, path)
        if not isinstance(current, ast.Name):
            raise Refused(current, f"{shown(current)} is not a step's output")
        binding = self.names.get(current.id)
        if binding is None:
            raise Refused(
                current,
                f"name {current.id!r} is not defined: bind it first (x = tool(...)), or write the value",
            )
        if isinstance(binding, BrokenName):
            raise Quiet()
        if isinstance(binding, StepName):
            return _template(binding.step_id, path)
        if isinstance(binding, LoopName):
            if binding.source == INDEX and path:
                raise Refused(node, "the loop's position is a number: it has no keys")
            return _template(binding.source, path)
        self.budget.copy(binding.size)
        return _lookup(binding.value, path, node)

    def fstring(self, node: ast.JoinedStr) -> str:
        """An f-string's text, its values written in (references as templates)."""
        parts: list[str] = []
        size = 0
        for part in node.values:
            if isinstance(part, ast.Constant):
                text = str(part.value)
            elif isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    raise Refused(part, "format specs and !r/!s are not part of the plan language")
                value = self.value(part.value)
                text = value if isinstance(value, str) else _text(value)
            else:
                continue
            size += len(text)
            if size > self.limits.max_string_chars:
                raise Refused(
                    node, f"the text is longer than {self.limits.max_string_chars:,} characters"
                )
            parts.append(text)
        return "".join(parts)

    def condition(self, node: ast.expr) -> Any:
        """The ``when`` an ``if``'s test stands for: a step's output (a template), ``not`` of
        one, or ``True``/``False``."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.condition(node.operand)
            return negated(inner)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Compare | ast.BoolOp | ast.BinOp):
            raise Refused(
                node,
                f"the condition {shown(node)} computes a value, which a plan cannot: test a "
                'step\'s output (if check["exceeded"]:), or call a tool that decides',
            )
        value = self.value(node)
        if not (isinstance(value, str) and exact_template(value) is not None):
            raise Refused(node, f"a condition tests a step's output, not {shown(node)}")
        return value

    def loop_source(self, node: ast.expr) -> LoopSource:
        """What a loop or a comprehension goes over: a literal list or a reference (a template),
        and whether ``enumerate`` numbers its items."""
        enumerated = (
            isinstance(node, ast.Call)
            and called_name(node) == "enumerate"
            and len(node.args) == 1
            and not node.keywords
        )
        inner = node.args[0] if enumerated and isinstance(node, ast.Call) else node
        items = self.value(inner)
        if isinstance(items, str) and exact_template(items) is None:
            raise Refused(inner, f"a loop goes over a list, not {shown(inner)}")
        if not isinstance(items, str | list):
            raise Refused(inner, f"a loop goes over a list, not {shown(inner)}")
        return LoopSource(items, enumerated)

    def arguments(self, node: ast.Call, called: str, tool: PythonTool | None) -> dict[str, Any]:
        """The parameters of a call of ``called`` (``tool``, when the tools are known): positional
        arguments in the order of its signature, each value read against its argument's schema."""
        parameters: dict[str, Any] = {}
        if node.args:
            if tool is None:
                raise Refused(node, f"write {called}'s arguments by name (name=value)")
            order = tool.parameters
            if any(isinstance(arg, ast.Starred) for arg in node.args):
                raise Refused(node, "*arguments are not part of the plan language")
            if len(node.args) > len(order):
                raise Refused(
                    node.args[len(order)],
                    f"{called} takes {len(order)} argument{'s' if len(order) != 1 else ''} "
                    f"({', '.join(order) or 'none'}), and {len(node.args)} were given by position"
                    + _by_name(called, order, node.args),
                )
            for parameter, arg in zip(order, node.args, strict=False):
                parameters[parameter] = self.value(arg, _schema(tool, parameter))
        for keyword_arg in node.keywords:
            if keyword_arg.arg is None:
                raise Refused(keyword_arg.value, "**arguments are not part of the plan language")
            # an alias (``from_=``) is the argument a keyword or a dash keeps out of Python
            name = tool.argument(keyword_arg.arg) if tool is not None else keyword_arg.arg
            if name in parameters:
                raise Refused(keyword_arg.value, f"{called} got {keyword_arg.arg!r} twice")
            parameters[name] = self.value(keyword_arg.value, _schema(tool, name))
        return parameters


_SHOWN_CALL = 400
"""The longest call a problem writes out by name; a longer one is left to the model."""


def _by_name(called: str, order: Sequence[str], args: Sequence[ast.expr]) -> str:
    """The call the positions mean, written by name, and the values no argument takes: a model
    told only how many it gave wrote ten positions for eight again (NESTFUL sgd-27)."""
    written = argument_aliases(order)
    named = ", ".join(
        f"{written[name]}={ast.unparse(arg)}" for name, arg in zip(order, args, strict=False)
    )
    extra = ", ".join(ast.unparse(arg) for arg in args[len(order) :])
    call = f"{called}({named})"
    if len(call) + len(extra) > _SHOWN_CALL:
        return "; write each argument by name, and leave out what the tool does not take"
    one = len(args) - len(order) == 1
    matches, them = ("matches", "it") if one else ("match", "them")
    return (
        f"; by name, the positions mean {call}, and {extra} {matches} no argument: leave {them} out"
    )


def _items(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    items = (schema or {}).get("items")
    return items if isinstance(items, Mapping) else None


def _property(schema: Mapping[str, Any] | None, name: str) -> Mapping[str, Any] | None:
    properties = (schema or {}).get("properties")
    found = properties.get(name) if isinstance(properties, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _accepted(schema: Mapping[str, Any] | None) -> set[str] | None:
    """The JSON types ``schema`` takes (``None``: unknown, or any)."""
    if not schema:
        return None
    from toolplan.plan_format.json_schema import accepted_types

    return accepted_types(schema)


def _template(source: str, path: Sequence[str | int]) -> str:
    return "{{" + reference_text(source, path) + "}}"


def _lookup(value: Any, path: Sequence[str | int], node: ast.expr) -> Any:
    """A path into a literal (a name bound to a literal dict or list, or to a reference)."""
    current = value
    for position, segment in enumerate(path):
        parsed = exact_template(current) if isinstance(current, str) else None
        if parsed is not None:
            return _template(parsed.step, [*parsed.path, *path[position:]])
        try:
            current = current[segment]
        except (KeyError, IndexError, TypeError):
            raise Refused(node, f"{shown(node)} does not exist in the value it reads") from None
    return current


def _literal(value: Any) -> bool:
    return not (isinstance(value, str) and contains_template(value)) and not (
        isinstance(value, list | dict) and contains_template(json.dumps(value))
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _schema(tool: PythonTool | None, argument: str) -> Mapping[str, Any] | None:
    return tool.argument_schema(argument) if tool is not None else None


def negated(condition: Any) -> Any:
    """The ``when`` that holds where ``condition`` does not (an ``else``, a ``not``)."""
    if isinstance(condition, bool):
        return not condition
    if isinstance(condition, dict):
        return condition["not"]
    return {"not": condition}


def called_name(node: ast.Call) -> str | None:
    """``tool`` or ``a.b.tool`` for a call of a (dotted) name; ``None`` for anything else."""
    parts: list[str] = []
    current: ast.expr = node.func
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    parts.append(current.id)
    return ".".join(reversed(parts))
