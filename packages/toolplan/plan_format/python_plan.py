"""Plans written as Python statements: read with :func:`ast.parse`, never executed.

A code model writes tool calls as Python more readily than as a JSON document, so a plan may be
written the way such a model answers::

    author = createAuthor(name="Ada", email="ada@example.com")
    blog = createBlog(authorId=author["_id"], title="Tips", content=f"by {author['name']}")
    for post in listBlogs(authorId=author["_id"])["blogs"]:
        createComment(blogId=post["_id"], text="Nice!")
    if checkThreshold(metric="cpu", threshold=80)["exceeded"]:
        page(team="ops")

:func:`parse_python_plan` reads that text into the canonical plan document, the same one a JSON
plan is (:class:`~toolplan.plan_format.plan.Plan`), which is then validated like any other. Nothing of
the text is ever run: it is a syntax for the plan, read statement by statement.

- ``name = tool(...)`` is a step with id ``name``; a bare ``tool(...)`` is a step with an id made
  from the tool's name, and later statements may read its output by that id. A call nested in
  an argument is a step of its own, before the call.
- ``name["key"]``, ``name.key`` and ``name["list"][0]`` of a step are templates
  (``{{name.key}}``); so are the parts of an f-string that use them.
- ``for item in source:`` with one call in its body, or ``[tool(...) for item in source]``, is a
  ``forEach`` step; ``for i, item in enumerate(source)`` gives ``{{$index}}``.
- ``if ref:``, ``if not ref:`` (and ``else:``) around calls set their ``when``; a call in the
  test is a step, and the condition reads its output.
- Positional arguments are read in the order of the tool's signature (``signatures``).
- A name bound again is a new step; references written before keep the old one. A name bound
  to a literal (``threshold = 100``) is folded into the calls that use it. ``print(...)``,
  comments and bare strings are ignored.

Anything else (``import``, ``while``, ``def``, ``lambda``, arithmetic on a step's output, a call
of something that is not a tool, more positional arguments than the signature has) is a
:class:`~toolplan.errors.PlanInvalid` whose issues name the line and column, so the repair loop
can quote them back to the model against its own text.

:func:`toolplan.plan_format.python_print.render_python_plan` writes a plan in this form.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.templates import INDEX, ITEM, contains_template, exact_template

__all__ = ["parse_python_plan"]


_IGNORED_CALLS = frozenset({"print"})
_NOT_ID = re.compile(r"[^A-Za-z0-9_]")


class _Refused(Exception):
    """One statement cannot be read as a plan; the reader records it and goes on."""

    def __init__(self, node: ast.AST, message: str) -> None:
        super().__init__(message)
        self.line = getattr(node, "lineno", 0)
        self.column = getattr(node, "col_offset", -1) + 1
        self.message = message


@dataclass(frozen=True)
class _Step:
    """A name bound to a step's output."""

    step_id: str


@dataclass(frozen=True)
class _Value:
    """A name bound to a literal (folded where it is used) or to a reference (a template)."""

    value: Any


@dataclass(frozen=True)
class _Loop:
    """A loop variable: the current item (``$item``) or its position (``$index``)."""

    source: str


_Binding = _Step | _Value | _Loop


def parse_python_plan(
    text: str, *, signatures: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Any]:
    """The canonical plan document that the Python statements ``text`` describe.

    ``signatures`` maps each tool to its parameter names in order: calls of anything else are
    refused, and positional arguments are read in that order. Without it, every call is taken
    for a tool call and positional arguments are refused. Raises
    :class:`~toolplan.errors.PlanInvalid` with one issue per statement that cannot be read (the
    others are still read, so every problem is reported at once).
    """
    try:
        tree = ast.parse(text, mode="exec")
    except SyntaxError as error:
        where = f"line {error.lineno}, column {error.offset}: " if error.lineno else ""
        raise PlanInvalid(
            [ValidationIssue("python", f"{where}the plan is not valid Python: {error.msg}")]
        ) from None
    except (RecursionError, MemoryError, ValueError) as error:
        raise PlanInvalid(
            [ValidationIssue("python", f"the plan cannot be read as Python: {error}")]
        ) from None
    reader = _Reader(signatures)
    reader.statements(tree.body)
    if reader.issues:
        raise PlanInvalid(reader.issues)
    return {"steps": reader.steps}


class _Reader:
    """Reads statements into steps, keeping what each name is bound to."""

    def __init__(self, signatures: Mapping[str, Sequence[str]] | None) -> None:
        self.signatures = signatures
        self.steps: list[dict[str, Any]] = []
        self.issues: list[ValidationIssue] = []
        self.names: dict[str, _Binding] = {}
        self.taken: set[str] = set()
        self.when: Any = None
        """The condition of the ``if`` being read (``None`` outside one)."""
        self.in_loop = False

    # -- statements ------------------------------------------------------------------------

    def statements(self, body: Sequence[ast.stmt]) -> None:
        for node in body:
            try:
                self.statement(node)
            except _Refused as refused:
                self.issues.append(
                    ValidationIssue(
                        "python", f"line {refused.line}, column {refused.column}: {refused.message}"
                    )
                )
            except RecursionError:
                self.issues.append(
                    ValidationIssue(
                        "python", f"line {node.lineno}: the statement is nested too deeply"
                    )
                )

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Expr):
            self.expression_statement(node)
        elif isinstance(node, ast.Assign):
            self.assignment(node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assignment(
                ast.Assign(
                    targets=[node.target],
                    value=node.value,
                    lineno=node.lineno,
                    col_offset=node.col_offset,
                )
            )
        elif isinstance(node, ast.For):
            self.loop(node)
        elif isinstance(node, ast.If):
            self.branch(node)
        elif isinstance(node, ast.Pass):
            return
        elif isinstance(node, ast.AugAssign):
            raise _Refused(
                node,
                "an augmented assignment (+=, ...) accumulates a value, which a plan cannot "
                "do: call a tool that computes it, or bind a new name to each call",
            )
        else:
            raise _Refused(node, f"{_what(node)} is not part of the plan language: {_HELP}")

    def expression_statement(self, node: ast.Expr) -> None:
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return  # a docstring or a bare string: a comment
        if isinstance(value, ast.Call) and _called_name(value) in _IGNORED_CALLS:
            return
        if isinstance(value, ast.Call):
            self.bare(self.call_step(value, None))
        elif (
            isinstance(value, ast.List | ast.Tuple)
            and value.elts
            and all(isinstance(element, ast.Call) for element in value.elts)
        ):
            # BFCL's answer form, [f(a=1), g(b=2)]: one step per call
            for element in value.elts:
                assert isinstance(element, ast.Call)
                self.call_step(element, None)
        elif isinstance(value, ast.ListComp):
            self.comprehension_step(value, None)
        else:
            raise _Refused(node, f"the expression {_shown(node)} does nothing: {_HELP}")

    def assignment(self, node: ast.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            raise _Refused(
                node,
                "assign to one plain name (author = createAuthor(...)), not to "
                f"{_shown(node.targets[0])}",
            )
        name = node.targets[0].id
        value = node.value
        if isinstance(value, ast.Call) and _called_name(value) not in _IGNORED_CALLS:
            self.bind(name, _Step(self.call_step(value, name)))
        elif isinstance(value, ast.ListComp):
            self.bind(name, _Step(self.comprehension_step(value, name)))
        else:
            self.bind(name, _Value(self.value(value)))

    def bind(self, name: str, binding: _Binding) -> None:
        if self.in_loop:
            return  # the loop's step is named after it; nothing else is bound inside a loop
        self.names[name] = binding

    def loop(self, node: ast.For) -> None:
        if node.orelse:
            raise _Refused(node.orelse[0], "a for loop's else has no meaning in a plan")
        if self.in_loop:
            raise _Refused(
                node,
                "a loop inside a loop is not part of the plan language: "
                "loop over one list, with one call in the body",
            )
        body = [s for s in node.body if not _ignorable(s)]
        if len(body) != 1 or not _is_call_statement(body[0]):
            raise _Refused(node, _loop_body_problem(node, body))
        source = self.loop_source(node.iter)
        with self.loop_names(node.target, source):
            statement = body[0]
            if isinstance(statement, ast.Assign):
                target = statement.targets[0]
                if len(statement.targets) != 1 or not isinstance(target, ast.Name):
                    raise _Refused(statement, "assign the loop's call to one plain name")
                call = statement.value
                name: str | None = target.id
            else:
                assert isinstance(statement, ast.Expr)
                call, name = statement.value, None
            assert isinstance(call, ast.Call)
            step_id = self.call_step(call, name, for_each=source.items)
        if name is not None:
            self.names[name] = _Step(step_id)
        else:
            self.bare(step_id)

    def bare(self, step_id: str) -> None:
        """A bare call's output can be read by its step id (the tool's name, made an id), as
        models write it (``createAuthor(...)``, then ``createAuthor["_id"]``); a name bound
        already keeps its meaning."""
        if not self.in_loop and step_id not in self.names:
            self.names[step_id] = _Step(step_id)

    def comprehension_step(self, node: ast.ListComp, name: str | None) -> str:
        if len(node.generators) != 1:
            raise _Refused(node, "a comprehension may loop over one list only")
        generator = node.generators[0]
        if generator.ifs or generator.is_async:
            raise _Refused(
                node,
                "a comprehension's if has no meaning in a plan: filter with a "
                "tool, or use when (an if around the call)",
            )
        if not isinstance(node.elt, ast.Call):
            raise _Refused(node.elt, "a comprehension must call one tool per item")
        source = self.loop_source(generator.iter)
        with self.loop_names(generator.target, source):
            return self.call_step(node.elt, name, for_each=source.items)

    def loop_source(self, node: ast.expr) -> _LoopSource:
        enumerated = (
            isinstance(node, ast.Call)
            and _called_name(node) == "enumerate"
            and len(node.args) == 1
            and not node.keywords
        )
        inner = node.args[0] if enumerated and isinstance(node, ast.Call) else node
        items = self.value(inner)
        if isinstance(items, str) and exact_template(items) is None:
            raise _Refused(inner, f"a loop goes over a list, not {_shown(inner)}")
        if not isinstance(items, str | list):
            raise _Refused(inner, f"a loop goes over a list, not {_shown(inner)}")
        return _LoopSource(items, enumerated)

    def loop_names(self, target: ast.expr, source: _LoopSource) -> _Scope:
        if source.enumerated:
            if not (
                isinstance(target, ast.Tuple)
                and len(target.elts) == 2
                and all(isinstance(e, ast.Name) for e in target.elts)
            ):
                raise _Refused(target, "write for i, item in enumerate(...)")
            index, item = (e.id for e in target.elts if isinstance(e, ast.Name))
            return _Scope(self, {index: _Loop(INDEX), item: _Loop(ITEM)})
        if not isinstance(target, ast.Name):
            raise _Refused(target, "loop over one name: for item in ...")
        return _Scope(self, {target.id: _Loop(ITEM)})

    def branch(self, node: ast.If) -> None:
        if self.when is not None or self.in_loop:
            raise _Refused(
                node,
                "an if inside an if or a loop is not part of the plan language: "
                "one condition per call (combine them with a tool)",
            )
        condition = self.condition(node.test)
        for body, when in ((node.body, condition), (node.orelse, _negated(condition))):
            if not body:
                continue
            self.when = when
            try:
                self.statements(body)
            finally:
                self.when = None

    def condition(self, node: ast.expr) -> Any:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.condition(node.operand)
            return _negated(inner)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Compare | ast.BoolOp | ast.BinOp):
            raise _Refused(
                node,
                f"the condition {_shown(node)} computes a value, which a plan cannot: test a "
                'step\'s output (if check["exceeded"]:), or call a tool that decides',
            )
        value = self.value(node)
        if not (isinstance(value, str) and exact_template(value) is not None):
            raise _Refused(node, f"a condition tests a step's output, not {_shown(node)}")
        return value

    # -- calls -----------------------------------------------------------------------------

    def call_step(
        self, node: ast.Call, name: str | None, *, for_each: str | list[Any] | None = None
    ) -> str:
        tool = _called_name(node)
        if tool is None:
            raise _Refused(node, f"call a tool by its name, not {_shown(node.func)}")
        if tool in _IGNORED_CALLS:
            raise _Refused(node, f"{tool}() is ignored as a statement, but its value is nothing")
        known = self.signatures
        if known is not None and tool not in known:
            raise _Refused(node, f"{tool!r} is not a tool{_close(tool, known)}")
        parameters = self.arguments(node, tool)
        step_id = self.new_id(name or tool)
        step: dict[str, Any] = {"id": step_id, "tool": tool, "parameters": parameters}
        if for_each is not None:
            step["forEach"] = for_each
        if self.when is not None:
            step["when"] = self.when
        self.steps.append(step)
        return step_id

    def arguments(self, node: ast.Call, tool: str) -> dict[str, Any]:
        parameters: dict[str, Any] = {}
        if node.args:
            order = (self.signatures or {}).get(tool)
            if order is None:
                raise _Refused(node, f"write {tool}'s arguments by name (name=value)")
            if any(isinstance(arg, ast.Starred) for arg in node.args):
                raise _Refused(node, "*arguments are not part of the plan language")
            if len(node.args) > len(order):
                raise _Refused(
                    node.args[len(order)],
                    f"{tool} takes {len(order)} argument{'s' if len(order) != 1 else ''} "
                    f"({', '.join(order) or 'none'}), and {len(node.args)} were given by position",
                )
            for parameter, arg in zip(order, node.args, strict=False):
                parameters[parameter] = self.value(arg)
        for keyword_arg in node.keywords:
            if keyword_arg.arg is None:
                raise _Refused(keyword_arg.value, "**arguments are not part of the plan language")
            if keyword_arg.arg in parameters:
                raise _Refused(keyword_arg.value, f"{tool} got {keyword_arg.arg!r} twice")
            parameters[keyword_arg.arg] = self.value(keyword_arg.value)
        return parameters

    def new_id(self, base: str) -> str:
        base = _NOT_ID.sub("_", base)
        if not base or base[0].isdigit():
            base = f"step_{base}"
        candidate, number = base, 1
        while candidate in self.taken:
            number += 1
            candidate = f"{base}_{number}"
        self.taken.add(candidate)
        return candidate

    # -- values ----------------------------------------------------------------------------

    def value(self, node: ast.expr) -> Any:
        """The JSON value (templates for references) an expression stands for."""
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, bool | int | float | str):
                if isinstance(node.value, float) and node.value != node.value:
                    raise _Refused(node, "NaN is not a JSON value")
                return node.value
            raise _Refused(node, f"{_shown(node)} is not a JSON value")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.value(node.operand)
            if isinstance(operand, int | float) and not isinstance(operand, bool):
                return -operand if isinstance(node.op, ast.USub) else operand
            raise _Refused(
                node, f"arithmetic on {_shown(node.operand)} is not part of the plan language"
            )
        if isinstance(node, ast.List | ast.Tuple):
            return [self.value(element) for element in node.elts]
        if isinstance(node, ast.Dict):
            result: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    raise _Refused(item, "**mapping is not part of the plan language")
                name = self.value(key)
                if not isinstance(name, str) or contains_template(name):
                    raise _Refused(key, "a dict's keys are literal strings")
                result[name] = self.value(item)
            return result
        if isinstance(node, ast.Name | ast.Subscript | ast.Attribute):
            return self.reference(node)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        if isinstance(node, ast.Call):
            if _called_name(node) in _IGNORED_CALLS:
                raise _Refused(node, "print() has no value")
            return "{{" + self.call_step(node, None) + "}}"
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
                return left + right  # text joined: a template in it is interpolated as text
            if _literal(left) and _literal(right):
                folded = _fold(node.op, left, right)
                if folded is not None:
                    return folded
            raise _Refused(
                node,
                f"arithmetic ({_shown(node)}) on a step's output is not part of the plan "
                "language: a tool must compute it",
            )
        raise _Refused(
            node, f"{_shown(node)} ({_what(node)}) is not part of the plan language: {_HELP}"
        )

    def reference(self, node: ast.expr) -> Any:
        path: list[str | int] = []
        current = node
        while isinstance(current, ast.Subscript | ast.Attribute):
            if isinstance(current, ast.Attribute):
                path.append(current.attr)
            else:
                key = current.slice
                if not isinstance(key, ast.Constant) or isinstance(key.value, bool):
                    raise _Refused(key, f"index with a literal key or position, not {_shown(key)}")
                if isinstance(key.value, int):
                    if key.value < 0:
                        raise _Refused(key, "a negative position is not part of the plan language")
                    path.append(key.value)
                elif (
                    isinstance(key.value, str)
                    and key.value
                    and not re.search(r"[.\[\]{}\s]", key.value)
                ):
                    path.append(key.value)
                else:
                    raise _Refused(key, f"the key {_shown(key)} cannot be read in a plan")
            current = current.value
        path.reverse()
        if isinstance(current, ast.Call):
            source = self.call_step(current, None)
            return _template(source, path)
        if not isinstance(current, ast.Name):
            raise _Refused(current, f"{_shown(current)} is not a step's output")
        binding = self.names.get(current.id)
        if binding is None:
            raise _Refused(
                current,
                f"name {current.id!r} is not defined: bind it first (x = tool(...)), or write the value",
            )
        if isinstance(binding, _Step):
            return _template(binding.step_id, path)
        if isinstance(binding, _Loop):
            if binding.source == INDEX and path:
                raise _Refused(node, "the loop's position is a number: it has no keys")
            return _template(binding.source, path)
        return _lookup(binding.value, path, node)

    def fstring(self, node: ast.JoinedStr) -> str:
        parts: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    raise _Refused(part, "format specs and !r/!s are not part of the plan language")
                value = self.value(part.value)
                parts.append(value if isinstance(value, str) else _text(value))
        return "".join(parts)


@dataclass(frozen=True)
class _LoopSource:
    items: str | list[Any]
    enumerated: bool


class _Scope:
    """The loop variables bound while a loop's body is read (then unbound again)."""

    def __init__(self, reader: _Reader, names: dict[str, _Binding]) -> None:
        self.reader = reader
        self.names = names
        self.saved: dict[str, _Binding | None] = {}

    def __enter__(self) -> None:
        for name, binding in self.names.items():
            self.saved[name] = self.reader.names.get(name)
            self.reader.names[name] = binding
        self.reader.in_loop = True

    def __exit__(self, *exc: object) -> None:
        self.reader.in_loop = False
        for name, previous in self.saved.items():
            if previous is None:
                self.reader.names.pop(name, None)
            else:
                self.reader.names[name] = previous


_HELP = (
    "write tool calls (x = tool(a=1)), references to their outputs (x['key']), for loops and "
    "comprehensions over a list with one call each, and if/else on a step's output"
)


def _template(source: str, path: Sequence[str | int]) -> str:
    text = source + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return "{{" + text + "}}"


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
            raise _Refused(node, f"{_shown(node)} does not exist in the value it reads") from None
    return current


def _literal(value: Any) -> bool:
    return not (isinstance(value, str) and contains_template(value)) and not (
        isinstance(value, list | dict) and contains_template(json.dumps(value))
    )


def _fold(op: ast.operator, left: Any, right: Any) -> Any:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right))
    if not numbers:
        return None
    try:
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div):
            return left / right
    except ZeroDivisionError:
        return None
    return None


def _negated(condition: Any) -> Any:
    if isinstance(condition, bool):
        return not condition
    if isinstance(condition, dict):
        return condition["not"]
    return {"not": condition}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _called_name(node: ast.Call) -> str | None:
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


def _ignorable(node: ast.stmt) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if not isinstance(node, ast.Expr):
        return False
    value = node.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return True
    return isinstance(value, ast.Call) and _called_name(value) in _IGNORED_CALLS


def _is_call_statement(node: ast.stmt) -> bool:
    if isinstance(node, ast.Expr | ast.Assign):
        return isinstance(node.value, ast.Call)
    return False


def _what(node: ast.AST) -> str:
    names = {
        "Import": "import",
        "ImportFrom": "import",
        "While": "a while loop",
        "FunctionDef": "def",
        "AsyncFunctionDef": "async def",
        "ClassDef": "class",
        "Lambda": "lambda",
        "Return": "return",
        "With": "with",
        "Try": "try",
        "Raise": "raise",
        "Delete": "del",
        "Global": "global",
        "Nonlocal": "nonlocal",
        "Await": "await",
        "Compare": "a comparison",
        "BoolOp": "and/or",
        "IfExp": "a conditional expression",
        "Set": "a set",
        "SetComp": "a set comprehension",
        "DictComp": "a dict comprehension",
        "GeneratorExp": "a generator",
    }
    return names.get(type(node).__name__, type(node).__name__)


def _shown(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # an AST built by hand, say: name its kind
        return _what(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _loop_body_problem(node: ast.For, body: Sequence[ast.stmt]) -> str:
    """Why a loop's body is refused, naming the statements to move: those that do not use the
    loop's item run once, so they go before or after the loop."""
    problem = "a for loop's body must be exactly one tool call (it becomes one call per item)"
    item = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    apart = [
        s for s in body if not any(isinstance(n, ast.Name) and n.id in item for n in ast.walk(s))
    ]
    if apart and len(apart) < len(body):
        shown = ", ".join(f"{_shown(s)} (line {s.lineno})" for s in apart)
        names = " or ".join(sorted(item))
        return f"{problem}: {shown} does not use {names}: move it before or after the loop"
    return f"{problem}: write one loop per call, or move other calls out of the loop"


def _close(name: str, known: Mapping[str, Sequence[str]]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if close:
        return "; did you mean " + " or ".join(map(repr, close)) + "?"
    shown = list(known)[:15]
    return "; tools: " + (", ".join(shown) or "none") + (" ..." if len(known) > 15 else "")
