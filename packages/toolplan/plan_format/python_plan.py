"""Plans written as Python statements: read with :func:`ast.parse`, never executed.

A code model writes tool calls as Python more readily than as a JSON document, so a plan may be
written the way such a model answers::

    author = createAuthor(name="Ada", email="ada@example.com")
    blog = createBlog(authorId=author["_id"], title="Tips", content=f"by {author['name']}")
    for post in listBlogs(authorId=author["_id"])["blogs"]:
        createComment(blogId=post["_id"], text="Nice!")
    if checkThreshold(metric="cpu", threshold=80)["exceeded"]:
        page(team="ops")

:class:`PythonReader` reads that text statement by statement (cut by
:class:`~toolplan.plan_format.python_source.SourceSplitter`) into the canonical plan document, the
same one a JSON plan is (:class:`~toolplan.plan_format.plan.Plan`), which is then validated like
any other; :func:`parse_python_plan` reads a whole text. Nothing of the text is ever run.

- ``name = tool(...)`` is a step with id ``name``; a bare ``tool(...)`` is a step with an id made
  from the tool's name, and later statements may read its output by that id. A call nested in
  an argument is a step of its own, before the call. Identical calls of a **read-only** tool
  (same tool, arguments, condition), with no write on what it reads between them, are one step:
  ``pace(route(a="NY")["distance"], route(a="NY")["time"])`` routes once. A tool with side
  effects is called as often as it is written.
- ``name["key"]``, ``name.key`` and ``name["list"][0]`` of a step are templates
  (``{{name.key}}``); so are the parts of an f-string that use them.
- ``str(x)`` of a step's value is that value as text, as ``f"{x}"`` is; ``int(x)``,
  ``float(x)`` and ``bool(x)`` are read where the argument they are passed to takes that type
  (the tool converts the value); of a literal, each is computed.
- ``for item in source:`` with one call in its body, or ``[tool(...) for item in source]``, is a
  ``forEach`` step; ``for i, item in enumerate(source)`` gives ``{{$index}}``.
- ``if ref:``, ``if not ref:`` (and ``else:``) around calls set their ``when``; a call in the
  test is a step, and the condition reads its output.
- Positional arguments are read in the order of the tool's signature. A tool whose name is not a
  Python name is called by its alias (:mod:`toolplan.plan_format.python_tools`).
- A name bound again is a new step; references written before keep the old one. A name bound
  to a literal (``threshold = 100``) is folded into the calls that use it. ``print(...)``,
  comments and bare strings are ignored.

Anything else (``import``, ``while``, ``def``, ``lambda``, arithmetic on a step's output, a call
of something that is not a tool) is refused with its line and column; a statement refused does
not make later ones fail again for naming what it bound. Reading is linear in the text: every
value is checked against the input limits before it is built, and reading stops at the step
limit.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.python_source import (
    Restart,
    SourceEvent,
    SourceProblem,
    SourceSplitter,
    Statement,
)
from toolplan.plan_format.python_tools import PythonTool, PythonTools
from toolplan.plan_format.python_values import (
    CONVERSIONS,
    Budget,
    TooBig,
    check_number,
    check_text,
    convert_literal,
    fold,
    size_of,
)
from toolplan.plan_format.templates import INDEX, ITEM, contains_template, exact_template

__all__ = ["PythonReader", "parse_python_plan", "read_python_plan"]


_IGNORED_CALLS = frozenset({"print"})
_NOT_ID = re.compile(r"[^A-Za-z0-9_]")
_TYPES_OF = {"int": {"integer", "number"}, "float": {"number"}, "bool": {"boolean"}}


class _Refused(Exception):
    """One statement cannot be read as a plan; the reader records it and goes on."""

    def __init__(self, node: ast.AST | None, message: str) -> None:
        super().__init__(message)
        self.line = getattr(node, "lineno", 0)
        self.column = getattr(node, "col_offset", -1) + 1
        self.message = message


class _Quiet(Exception):
    """A statement uses a name whose own statement was refused: said once, not again."""


class _Stop(Exception):
    """Reading stops (the step limit): recorded, and nothing more is read."""


@dataclass(frozen=True)
class _Step:
    """A name bound to a step's output."""

    step_id: str


@dataclass(frozen=True)
class _Value:
    """A name bound to a literal (folded where it is used) or to a reference (a template)."""

    value: Any
    size: int


@dataclass(frozen=True)
class _Loop:
    """A loop variable: the current item (``$item``) or its position (``$index``)."""

    source: str


@dataclass(frozen=True)
class _Broken:
    """A name whose statement was refused: reading it says nothing more."""


_Binding = _Step | _Value | _Loop | _Broken


def parse_python_plan(
    text: str,
    *,
    signatures: Mapping[str, Sequence[str]] | None = None,
    tools: PythonTools | None = None,
    limits: InputLimits | None = None,
    max_steps: int | None = None,
) -> dict[str, Any]:
    """The canonical plan document that the Python statements ``text`` describe (a plan file:
    no Markdown fences).

    ``tools`` (or, knowing less, ``signatures``: each tool's parameter names in order) are what
    calls may name: calls of anything else are refused, and positional arguments are read in
    their order. Without either, every call is taken for a tool call and positional arguments
    are refused. Raises :class:`~toolplan.errors.PlanInvalid` with one issue per statement that
    cannot be read (the others are still read, so every problem is reported at once).
    """
    return read_python_plan(
        text, signatures=signatures, tools=tools, limits=limits, max_steps=max_steps
    ).steps_document()


def read_python_plan(
    text: str,
    *,
    signatures: Mapping[str, Sequence[str]] | None = None,
    tools: PythonTools | None = None,
    limits: InputLimits | None = None,
    max_steps: int | None = None,
) -> PythonReader:
    """:func:`parse_python_plan`'s reading, with where each step was written
    (:attr:`PythonReader.sources`); raises :class:`~toolplan.errors.PlanInvalid` as it does."""
    reader = PythonReader(
        _tools(tools, signatures), limits=limits or InputLimits(), max_steps=max_steps
    )
    splitter = SourceSplitter(fences=False, limits=reader.limits)
    reader.take(splitter.feed(text))
    reader.take(splitter.finish())
    if reader.issues:
        raise PlanInvalid(reader.issues)
    return reader


def _tools(
    tools: PythonTools | None, signatures: Mapping[str, Sequence[str]] | None
) -> PythonTools | None:
    if tools is not None or signatures is None:
        return tools
    if isinstance(signatures, PythonTools):
        return signatures
    return PythonTools.from_signatures(signatures)


@dataclass
class PythonReader:
    """Reads statements into steps, keeping what each name is bound to; fed statement by
    statement (:meth:`take`), as a streamed answer completes them."""

    tools: PythonTools | None = None
    limits: InputLimits = field(default_factory=InputLimits)
    max_steps: int | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    issues: list[ValidationIssue] = field(default_factory=list)
    sources: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    """Each step's line, column and call as written in the text (for problems found later,
    said in the plan's own language: :func:`~toolplan.plan_format.python_print.in_python`)."""
    stopped: bool = False
    """Reading stopped (the step limit, or a problem of the text itself)."""
    restarts: int = 0
    """How many times the text read so far turned out to be prose (:class:`Restart`)."""

    def __post_init__(self) -> None:
        self._reset()

    def steps_document(self) -> dict[str, Any]:
        """The plan document read: ``{"steps": [...]}``."""
        return {"steps": self.steps}

    def _reset(self) -> None:
        self.steps, self.issues, self.sources = [], [], {}
        self._names: dict[str, _Binding] = {}
        self._blocks: dict[str, tuple[int, int]] = {}
        """Where each name was bound: its block and line (blocks must not bind a name twice)."""
        self._taken: set[str] = set()
        self._counters: dict[str, int] = {}
        self._reads: dict[str, tuple[str, tuple[int, ...]]] = {}
        """Identical read-only calls: call key → (step id, write counts of its resources)."""
        self._writes: dict[str, int] = {}
        """How many steps so far write each resource."""
        self._budget = Budget(self.limits)
        self._when: Any = None
        self._in_loop = False
        self._block = 0

    # -- what the source splitter tells ------------------------------------------------------

    def take(self, events: Sequence[SourceEvent]) -> list[dict[str, Any]]:
        """Read what the splitter found; the steps new since."""
        new: list[dict[str, Any]] = []
        for event in events:
            if self.stopped:
                break
            if isinstance(event, Restart):
                self.restarts += 1
                self._reset()
                new = []
            elif isinstance(event, SourceProblem):
                self.issues.append(_issue(event.line, event.column, event.message))
                self.stopped = True
            else:
                before = len(self.steps)
                self.statement_text(event)
                new += self.steps[before:]
        return new

    def statement_text(self, statement: Statement) -> None:
        """Parse one top-level statement and read it."""
        try:
            tree = ast.parse(statement.text, mode="exec")
        except SyntaxError as error:
            line = statement.line - 1 + (error.lineno or 1)
            where = f"line {line}, column {error.offset}: " if error.offset else f"line {line}: "
            self.issues.append(
                ValidationIssue("python", f"{where}the plan is not valid Python: {error.msg}")
            )
            self._break_names_of(statement.text)
            return
        except (RecursionError, MemoryError, ValueError):
            self.issues.append(
                _issue(statement.line, 1, "the statement is nested too deeply to be a plan")
            )
            return
        ast.increment_lineno(tree, statement.line - 1)
        self._block = statement.block
        self.statements(tree.body)

    def _break_names_of(self, text: str) -> None:
        """A statement that is not Python binds nothing: names it seems to bind are broken."""
        match = re.match(r"\s*([A-Za-z_]\w*)\s*=[^=]", text)
        if match:
            self._names[match.group(1)] = _Broken()

    # -- statements ------------------------------------------------------------------------

    def statements(self, body: Sequence[ast.stmt]) -> None:
        for node in body:
            if self.stopped:
                return
            try:
                self.statement(node)
            except _Refused as refused:
                self.issues.append(_issue(refused.line, refused.column, refused.message))
                self._break_targets(node)
            except _Quiet:
                self._break_targets(node)
            except _Stop:
                self.stopped = True
            except RecursionError:
                self.issues.append(_issue(node.lineno, 1, "the statement is nested too deeply"))
                self._break_targets(node)

    def _break_targets(self, node: ast.stmt) -> None:
        if self._in_loop:
            return
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self._names[name.id] = _Broken()

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
        if isinstance(value, ast.Call) and not self._conversion(value):
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
            target = node.targets[0]
            if isinstance(target, ast.Tuple | ast.List):
                raise _Refused(
                    node,
                    f"unpacking ({_shown(target)} = ...) is not part of the plan language: bind "
                    "the call to one name and read its fields (route = tool(...), then "
                    'route["distance"])',
                )
            raise _Refused(
                node,
                f"assign to one plain name (author = createAuthor(...)), not to {_shown(target)}",
            )
        name = node.targets[0].id
        value = node.value
        if (
            isinstance(value, ast.Call)
            and _called_name(value) not in _IGNORED_CALLS
            and not self._conversion(value)
        ):
            self.bind(name, _Step(self.call_step(value, name)), node)
        elif isinstance(value, ast.ListComp):
            self.bind(name, _Step(self.comprehension_step(value, name)), node)
        else:
            literal = self.value(value)
            size = size_of(literal, self.limits.max_string_chars)
            if size > self.limits.max_string_chars:
                raise _Refused(
                    value,
                    f"the value bound to {name!r} is larger than "
                    f"{self.limits.max_string_chars:,} characters (TOOLPLAN_MAX_STRING_CHARS)",
                )
            self.bind(name, _Value(literal, size), node)

    def bind(self, name: str, binding: _Binding, node: ast.stmt) -> None:
        if self._in_loop:
            return  # the loop's step is named after it; nothing else is bound inside a loop
        self._check_block(name, node)
        self._names[name] = binding
        self._blocks[name] = (self._block, node.lineno)

    def _check_block(self, name: str, node: ast.AST) -> None:
        """A name a block binds that an earlier block bound: the answer wrote the plan twice."""
        earlier = self._blocks.get(name)
        if earlier is not None and 0 < earlier[0] < self._block:
            raise _Refused(
                node,
                f"{name!r} was bound in the answer's block {earlier[0]} already (line "
                f"{earlier[1]}): its blocks conflict. Write the plan once: one call per step, "
                "each name bound once across the blocks",
            )

    def loop(self, node: ast.For) -> None:
        if node.orelse:
            raise _Refused(node.orelse[0], "a for loop's else has no meaning in a plan")
        if self._in_loop:
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
            self._check_block(name, node)
            self._names[name] = _Step(step_id)
            self._blocks[name] = (self._block, node.lineno)
        else:
            self.bare(step_id)

    def bare(self, step_id: str) -> None:
        """A bare call's output can be read by its step id (the tool's name, made an id), as
        models write it (``createAuthor(...)``, then ``createAuthor["_id"]``); a name bound
        already keeps its meaning."""
        if not self._in_loop and step_id not in self._names:
            self._names[step_id] = _Step(step_id)

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

    @contextmanager
    def loop_names(self, target: ast.expr, source: _LoopSource) -> Iterator[None]:
        if source.enumerated:
            if not (
                isinstance(target, ast.Tuple)
                and len(target.elts) == 2
                and all(isinstance(e, ast.Name) for e in target.elts)
            ):
                raise _Refused(target, "write for i, item in enumerate(...)")
            index, item = (e.id for e in target.elts if isinstance(e, ast.Name))
            names: dict[str, _Binding] = {index: _Loop(INDEX), item: _Loop(ITEM)}
        elif isinstance(target, ast.Name):
            names = {target.id: _Loop(ITEM)}
        else:
            raise _Refused(target, "loop over one name: for item in ...")
        saved = {name: self._names.get(name) for name in names}
        self._names.update(names)
        self._in_loop = True
        try:
            yield
        finally:
            self._in_loop = False
            for name, previous in saved.items():
                if previous is None:
                    self._names.pop(name, None)
                else:
                    self._names[name] = previous

    def branch(self, node: ast.If) -> None:
        if self._when is not None or self._in_loop:
            raise _Refused(
                node,
                "an if inside an if or a loop is not part of the plan language: "
                "one condition per call (combine them with a tool)",
            )
        condition = self.condition(node.test)
        for body, when in ((node.body, condition), (node.orelse, _negated(condition))):
            if not body:
                continue
            self._when = when
            try:
                self.statements(body)
            finally:
                self._when = None

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
        called = _called_name(node)
        if called is None:
            raise _Refused(node, f"call a tool by its name, not {_shown(node.func)}")
        if called in _IGNORED_CALLS:
            raise _Refused(node, f"{called}() is ignored as a statement, but its value is nothing")
        tool = self._tool(node, called)
        parameters = self.arguments(node, called, tool)
        tool_name = tool.name if tool is not None else called
        key = None
        if tool is not None and tool.read_only and for_each is None:
            key = json.dumps([tool_name, parameters, self._when], sort_keys=True, default=str)
            known = self._reads.get(key)
            if known is not None and known[1] == self._write_counts(tool):
                return known[0]  # the same read, with nothing written between: one step
        if self.max_steps is not None and len(self.steps) >= self.max_steps:
            self.issues.append(
                _issue(
                    node.lineno,
                    node.col_offset + 1,
                    f"the plan has more than {self.max_steps} steps, the limit (TOOLPLAN_MAX_STEPS, "
                    "--max-steps): split it, or raise the limit if this is intended",
                )
            )
            raise _Stop()
        step_id = self.new_id(name or called)
        step: dict[str, Any] = {"id": step_id, "tool": tool_name, "parameters": parameters}
        if for_each is not None:
            step["forEach"] = for_each
        if self._when is not None:
            step["when"] = self._when
        self.steps.append(step)
        self.sources[step_id] = (node.lineno, node.col_offset + 1, _shown(node))
        if key is not None:
            assert tool is not None
            self._reads[key] = (step_id, self._write_counts(tool))
        elif tool is None or not tool.read_only:
            for resource in tool.resources if tool is not None else ("default",):
                self._writes[resource] = self._writes.get(resource, 0) + 1
        return step_id

    def _tool(self, node: ast.Call, called: str) -> PythonTool | None:
        if self.tools is None:
            return None
        tool = self.tools.tool(called)
        if tool is not None:
            return tool
        colliding = self.tools.collisions.get(called)
        if colliding:
            raise _Refused(
                node,
                f"{called!r} would name each of the tools {', '.join(map(repr, colliding))}: "
                "rename one of them so that each has a Python name of its own",
            )
        raise _Refused(node, f"{called!r} is not a tool{_close(called, self.tools)}")

    def _write_counts(self, tool: PythonTool) -> tuple[int, ...]:
        return tuple(self._writes.get(resource, 0) for resource in tool.resources)

    def arguments(self, node: ast.Call, called: str, tool: PythonTool | None) -> dict[str, Any]:
        parameters: dict[str, Any] = {}
        if node.args:
            if tool is None:
                raise _Refused(node, f"write {called}'s arguments by name (name=value)")
            order = tool.parameters
            if any(isinstance(arg, ast.Starred) for arg in node.args):
                raise _Refused(node, "*arguments are not part of the plan language")
            if len(node.args) > len(order):
                raise _Refused(
                    node.args[len(order)],
                    f"{called} takes {len(order)} argument{'s' if len(order) != 1 else ''} "
                    f"({', '.join(order) or 'none'}), and {len(node.args)} were given by position",
                )
            for parameter, arg in zip(order, node.args, strict=False):
                parameters[parameter] = self.value(arg, _schema(tool, parameter))
        for keyword_arg in node.keywords:
            if keyword_arg.arg is None:
                raise _Refused(keyword_arg.value, "**arguments are not part of the plan language")
            if keyword_arg.arg in parameters:
                raise _Refused(keyword_arg.value, f"{called} got {keyword_arg.arg!r} twice")
            parameters[keyword_arg.arg] = self.value(
                keyword_arg.value, _schema(tool, keyword_arg.arg)
            )
        return parameters

    def new_id(self, base: str) -> str:
        base = _NOT_ID.sub("_", base)
        if not base or base[0].isdigit():
            base = f"step_{base}"
        candidate = base
        number = self._counters.get(base, 1)
        while candidate in self._taken:
            number += 1
            candidate = f"{base}_{number}"
        self._counters[base] = number
        self._taken.add(candidate)
        return candidate

    # -- values ----------------------------------------------------------------------------

    def value(self, node: ast.expr, schema: Mapping[str, Any] | None = None) -> Any:
        """The JSON value (templates for references) an expression stands for; ``schema``, when
        known, is what the argument it is passed to takes."""
        limits = self.limits
        try:
            return self._value(node, schema, limits)
        except TooBig as error:
            raise _Refused(node, str(error)) from None

    def _value(self, node: ast.expr, schema: Mapping[str, Any] | None, limits: InputLimits) -> Any:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or value is None:
                return value
            if isinstance(value, int | float):
                if isinstance(value, float) and value != value:
                    raise _Refused(node, "NaN is not a JSON value")
                return check_number(value, limits)
            if isinstance(value, str):
                return check_text(value, limits)
            raise _Refused(node, f"{_shown(node)} is not a JSON value")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.value(node.operand)
            if isinstance(operand, int | float) and not isinstance(operand, bool):
                return -operand if isinstance(node.op, ast.USub) else operand
            raise _Refused(
                node, f"arithmetic on {_shown(node.operand)} is not part of the plan language"
            )
        if isinstance(node, ast.List | ast.Tuple):
            items = _items(schema)
            return [self.value(element, items) for element in node.elts]
        if isinstance(node, ast.Dict):
            result: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    raise _Refused(item, "**mapping is not part of the plan language")
                name = self.value(key)
                if not isinstance(name, str) or contains_template(name):
                    raise _Refused(key, "a dict's keys are literal strings")
                result[name] = self.value(item, _property(schema, name))
            return result
        if isinstance(node, ast.Name | ast.Subscript | ast.Attribute):
            return self.reference(node)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        if isinstance(node, ast.Call):
            if _called_name(node) in _IGNORED_CALLS:
                raise _Refused(node, "print() has no value")
            if self._conversion(node):
                return self.conversion(node, schema)
            return "{{" + self.call_step(node, None) + "}}"
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
                return fold(node.op, left, right, self._budget)  # text joined (templates too)
            if _literal(left) and _literal(right):
                folded = fold(node.op, left, right, self._budget)
                if folded is not None:
                    return folded
                raise _Refused(
                    node,
                    f"{_shown(node)}: the plan language computes + - * / on literal numbers "
                    "and joins text with +, nothing else: write the value",
                )
            raise _Refused(
                node,
                f"arithmetic ({_shown(node)}) on a step's output is not part of the plan "
                "language: a tool must compute it",
            )
        raise _Refused(
            node, f"{_shown(node)} ({_what(node)}) is not part of the plan language: {_HELP}"
        )

    def _conversion(self, node: ast.Call) -> bool:
        """Whether ``node`` is ``str(x)``, ``int(x)``, ``float(x)`` or ``bool(x)`` (and no tool
        has that name)."""
        called = _called_name(node)
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
        kind = _called_name(node)
        assert kind is not None
        inner = self.value(node.args[0])
        if _literal(inner):
            try:
                return convert_literal(kind, inner, self.limits)
            except ValueError as error:
                raise _Refused(node, f"{_shown(node)}: {error}") from None
        if kind == "str":
            return inner if isinstance(inner, str) else _text(inner)
        wanted = _TYPES_OF[kind]
        accepted = _accepted(schema)
        if accepted is None:
            raise _Refused(
                node,
                f"{_shown(node)} cannot be checked here (no argument type to check it against): "
                f"pass {_shown(node.args[0])} as it is, and the tool's argument type converts it",
            )
        if not accepted & wanted:
            raise _Refused(
                node,
                f"{_shown(node)} makes a {kind}, but the argument takes "
                f"{' or '.join(sorted(accepted))}: pass {_shown(node.args[0])} as it is"
                + (" (or str(...) of it)" if "string" in accepted else ""),
            )
        return inner  # the tool reads the value as the type it takes

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
            if self._conversion(current):
                raise _Refused(current, f"{_shown(current)} has no keys to read")
            source = self.call_step(current, None)
            return _template(source, path)
        if not isinstance(current, ast.Name):
            raise _Refused(current, f"{_shown(current)} is not a step's output")
        binding = self._names.get(current.id)
        if binding is None:
            raise _Refused(
                current,
                f"name {current.id!r} is not defined: bind it first (x = tool(...)), or write the value",
            )
        if isinstance(binding, _Broken):
            raise _Quiet()
        if isinstance(binding, _Step):
            return _template(binding.step_id, path)
        if isinstance(binding, _Loop):
            if binding.source == INDEX and path:
                raise _Refused(node, "the loop's position is a number: it has no keys")
            return _template(binding.source, path)
        self._budget.copy(binding.size)
        return _lookup(binding.value, path, node)

    def fstring(self, node: ast.JoinedStr) -> str:
        parts: list[str] = []
        size = 0
        for part in node.values:
            if isinstance(part, ast.Constant):
                text = str(part.value)
            elif isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    raise _Refused(part, "format specs and !r/!s are not part of the plan language")
                value = self.value(part.value)
                text = value if isinstance(value, str) else _text(value)
            else:
                continue
            size += len(text)
            if size > self.limits.max_string_chars:
                raise _Refused(
                    node, f"the text is longer than {self.limits.max_string_chars:,} characters"
                )
            parts.append(text)
        return "".join(parts)


@dataclass(frozen=True)
class _LoopSource:
    items: str | list[Any]
    enumerated: bool


_HELP = (
    "write tool calls (x = tool(a=1)), references to their outputs (x['key']), for loops and "
    "comprehensions over a list with one call each, and if/else on a step's output"
)


def _issue(line: int, column: int, message: str) -> ValidationIssue:
    return ValidationIssue("python", f"line {line}, column {column}: {message}")


def _schema(tool: PythonTool | None, argument: str) -> Mapping[str, Any] | None:
    return tool.argument_schema(argument) if tool is not None else None


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


def _close(name: str, known: Mapping[str, Any]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if close:
        return "; did you mean " + " or ".join(map(repr, close)) + "?"
    shown = list(known)[:15]
    return "; tools: " + (", ".join(shown) or "none") + (" ..." if len(known) > 15 else "")
