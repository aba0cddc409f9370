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
any other; :func:`parse_python_plan` reads a whole text. Nothing of the text is ever run. The
values in the statements (arguments, conditions, what a loop goes over) are read by an
:class:`~toolplan.plan_format.python_expressions.ExpressionReader`; refusals are worded by
:mod:`~toolplan.plan_format.python_refusals`.

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
import keyword
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.names import closest_tools
from toolplan.plan_format.python_expressions import (
    IGNORED_CALLS,
    Binding,
    BrokenName,
    ExpressionReader,
    LoopName,
    LoopSource,
    StepName,
    ValueName,
    called_name,
    negated,
)
from toolplan.plan_format.python_refusals import HELP, Quiet, Refused, issue, shown, what
from toolplan.plan_format.python_source import (
    Restart,
    SourceEvent,
    SourceProblem,
    SourceSplitter,
    Statement,
)
from toolplan.plan_format.python_tools import PythonTool, PythonTools, python_name
from toolplan.plan_format.python_values import size_of
from toolplan.plan_format.templates import INDEX, ITEM

__all__ = ["PythonReader", "Written", "parse_python_plan", "read_python_plan"]


_NOT_ID = re.compile(r"[^A-Za-z0-9_]")


class Written(NamedTuple):
    """Where a step was written, and how the text names it: for problems found after reading,
    said in the plan's own language (:func:`~toolplan.plan_format.python_print.in_python`)."""

    line: int
    column: int
    call: str
    """The call as written, shortened for a message."""
    name: str
    """How the text names the step's output: its name, a bare call's id, or, for a call nested
    in an argument (whose id the text never says), the call itself."""
    positional: tuple[str, ...] = ()
    """The arguments given by position, in order."""


class _Stop(Exception):
    """Reading stops (the step limit): recorded, and nothing more is read."""


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
    reader.take(splitter.events(text))  # taken until reading stops: the rest is not looked at
    if not reader.stopped:
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
    sources: dict[str, Written] = field(default_factory=dict)
    """Where each step was written and how the text names it."""
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
        self._names: dict[str, Binding] = {}
        self._blocks: dict[str, tuple[int, int]] = {}
        """Where each name was bound: its block and line (blocks must not bind a name twice)."""
        self._taken: set[str] = set()
        self._counters: dict[str, int] = {}
        self._reads: dict[str, tuple[str, tuple[int, ...]]] = {}
        """Identical read-only calls: call key → (step id, write counts of its resources)."""
        self._writes: dict[str, int] = {}
        """How many steps so far write each resource."""
        self._expressions = ExpressionReader(
            self.tools, self.limits, self._names, lambda call: self.call_step(call, None)
        )
        """Reads the statements' expressions into values, by the names bound so far."""
        self._when: Any = None
        self._in_loop = False
        self._block = 0

    # -- what the source splitter tells ------------------------------------------------------

    def take(self, events: Iterable[SourceEvent]) -> list[dict[str, Any]]:
        """Read what the splitter found, until reading stops (no further event is taken); the
        steps new since."""
        new: list[dict[str, Any]] = []
        if self.stopped:
            return new
        for event in events:
            if isinstance(event, Restart):
                self.restarts += 1
                self._reset()
                new = []
            elif isinstance(event, SourceProblem):
                self.issues.append(issue(event.line, event.column, event.message))
                self.stopped = True
            else:
                before = len(self.steps)
                self.statement_text(event)
                new += self.steps[before:]
            if self.stopped:
                break  # before the next event is asked for: the text after is not looked at
        return new

    def statement_text(self, statement: Statement) -> None:
        """Parse one top-level statement and read it."""
        try:
            tree = ast.parse(statement.text, mode="exec")
        except SyntaxError as error:
            line = statement.line - 1 + (error.lineno or 1)
            where = f"line {line}, column {error.offset}: " if error.offset else f"line {line}: "
            self.issues.append(
                ValidationIssue(
                    "python", f"{where}the plan is not valid Python: {_syntax_problem(error)}"
                )
            )
            self._break_names_of(statement.text)
            return
        except (RecursionError, MemoryError, ValueError):
            self.issues.append(
                issue(statement.line, 1, "the statement is nested too deeply to be a plan")
            )
            return
        ast.increment_lineno(tree, statement.line - 1)
        self._block = statement.block
        self.statements(tree.body)

    def _break_names_of(self, text: str) -> None:
        """A statement that is not Python binds nothing: names it seems to bind are broken."""
        match = re.match(r"\s*([A-Za-z_]\w*)\s*=[^=]", text)
        if match:
            self._names[match.group(1)] = BrokenName()

    # -- statements ------------------------------------------------------------------------

    def statements(self, body: Sequence[ast.stmt]) -> None:
        for node in body:
            if self.stopped:
                return
            try:
                self.statement(node)
            except Refused as refused:
                self.issues.append(issue(refused.line, refused.column, refused.message))
                self._break_targets(node)
            except Quiet:
                self._break_targets(node)
            except _Stop:
                self.stopped = True
            except RecursionError:
                self.issues.append(issue(node.lineno, 1, "the statement is nested too deeply"))
                self._break_targets(node)

    def _break_targets(self, node: ast.stmt) -> None:
        if self._in_loop:
            return
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self._names[name.id] = BrokenName()

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
            raise Refused(
                node,
                "an augmented assignment (+=, ...) accumulates a value, which a plan cannot "
                "do: call a tool that computes it, or bind a new name to each call",
            )
        else:
            raise Refused(node, f"{what(node)} is not part of the plan language: {HELP}")

    def expression_statement(self, node: ast.Expr) -> None:
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return  # a docstring or a bare string: a comment
        if isinstance(value, ast.Call) and called_name(value) in IGNORED_CALLS:
            return
        if isinstance(value, ast.Call) and not self._expressions.is_conversion(value):
            self.bare(self.call_step(value, None))
        elif isinstance(value, ast.List | ast.Tuple) and any(
            isinstance(element, ast.Call) for element in value.elts
        ):
            raise Refused(
                node,
                f"the list {shown(node)} does nothing with the calls in it: write each call as "
                "a statement of its own",
            )
        elif isinstance(value, ast.ListComp):
            self.comprehension_step(value, None)
        else:
            raise Refused(node, f"the expression {shown(node)} does nothing: {HELP}")

    def assignment(self, node: ast.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            target = node.targets[0]
            if isinstance(target, ast.Tuple | ast.List):
                raise Refused(
                    node,
                    f"unpacking ({shown(target)} = ...) is not part of the plan language: bind "
                    "the call to one name and read its fields (route = tool(...), then "
                    'route["distance"])',
                )
            raise Refused(
                node,
                f"assign to one plain name (author = createAuthor(...)), not to {shown(target)}",
            )
        name = node.targets[0].id
        value = node.value
        if (
            isinstance(value, ast.Call)
            and called_name(value) not in IGNORED_CALLS
            and not self._expressions.is_conversion(value)
        ):
            self.bind(name, StepName(self.call_step(value, name)), node)
        elif isinstance(value, ast.ListComp):
            self.bind(name, StepName(self.comprehension_step(value, name)), node)
        else:
            literal = self._expressions.value(value)
            size = size_of(literal, self.limits.max_string_chars)
            if size > self.limits.max_string_chars:
                raise Refused(
                    value,
                    f"the value bound to {name!r} is larger than "
                    f"{self.limits.max_string_chars:,} characters (TOOLPLAN_MAX_STRING_CHARS)",
                )
            self.bind(name, ValueName(literal, size), node)

    def bind(self, name: str, binding: Binding, node: ast.stmt) -> None:
        if self._in_loop:
            return  # the loop's step is named after it; nothing else is bound inside a loop
        self._check_block(name, node)
        self._names[name] = binding
        self._blocks[name] = (self._block, node.lineno)

    def _check_block(self, name: str, node: ast.AST) -> None:
        """A name a block binds that an earlier block bound: the answer wrote the plan twice."""
        earlier = self._blocks.get(name)
        if earlier is not None and 0 < earlier[0] < self._block:
            raise Refused(
                node,
                f"{name!r} was bound in the answer's block {earlier[0]} already (line "
                f"{earlier[1]}): its blocks conflict. Write the plan once: one call per step, "
                "each name bound once across the blocks",
            )

    def loop(self, node: ast.For) -> None:
        if node.orelse:
            raise Refused(node.orelse[0], "a for loop's else has no meaning in a plan")
        if self._in_loop:
            raise Refused(
                node,
                "a loop inside a loop is not part of the plan language: "
                "loop over one list, with one call in the body",
            )
        body = [s for s in node.body if not _ignorable(s)]
        if not body:
            # a loop that only prints does nothing a plan does: ignored, as its prints are;
            # a tool called in what it goes over is still a step
            if any(self._calls_a_tool(n) for n in ast.walk(node.iter)):
                self._expressions.loop_source(node.iter)
            return
        if len(body) != 1 or not _is_call_statement(body[0]):
            raise Refused(node, _loop_body_problem(node, body))
        source = self._expressions.loop_source(node.iter)
        with self.loop_names(node.target, source):
            statement = body[0]
            if isinstance(statement, ast.Assign):
                target = statement.targets[0]
                if len(statement.targets) != 1 or not isinstance(target, ast.Name):
                    raise Refused(statement, "assign the loop's call to one plain name")
                call = statement.value
                name: str | None = target.id
            else:
                assert isinstance(statement, ast.Expr)
                call, name = statement.value, None
            assert isinstance(call, ast.Call)
            step_id = self.call_step(call, name, for_each=source.items)
        if name is not None:
            self._check_block(name, node)
            self._names[name] = StepName(step_id)
            self._blocks[name] = (self._block, node.lineno)
        else:
            self.bare(step_id)

    def bare(self, step_id: str) -> None:
        """A bare call's output can be read by its step id (the tool's name, made an id), as
        models write it (``createAuthor(...)``, then ``createAuthor["_id"]``); a name bound
        already keeps its meaning."""
        if not self._in_loop and step_id not in self._names:
            self._names[step_id] = StepName(step_id)
            self.sources[step_id] = self.sources[step_id]._replace(name=step_id)

    def comprehension_step(self, node: ast.ListComp, name: str | None) -> str:
        if len(node.generators) != 1:
            raise Refused(node, "a comprehension may loop over one list only")
        generator = node.generators[0]
        if generator.ifs or generator.is_async:
            raise Refused(
                node,
                "a comprehension's if has no meaning in a plan: filter with a "
                "tool, or use when (an if around the call)",
            )
        if not isinstance(node.elt, ast.Call):
            raise Refused(node.elt, "a comprehension must call one tool per item")
        source = self._expressions.loop_source(generator.iter)
        with self.loop_names(generator.target, source):
            return self.call_step(node.elt, name, for_each=source.items)

    @contextmanager
    def loop_names(self, target: ast.expr, source: LoopSource) -> Iterator[None]:
        if source.enumerated:
            if not (
                isinstance(target, ast.Tuple)
                and len(target.elts) == 2
                and all(isinstance(e, ast.Name) for e in target.elts)
            ):
                raise Refused(target, "write for i, item in enumerate(...)")
            index, item = (e.id for e in target.elts if isinstance(e, ast.Name))
            names: dict[str, Binding] = {index: LoopName(INDEX), item: LoopName(ITEM)}
        elif isinstance(target, ast.Name):
            names = {target.id: LoopName(ITEM)}
        else:
            raise Refused(target, "loop over one name: for item in ...")
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
            raise Refused(
                node,
                "an if inside an if or a loop is not part of the plan language: "
                "one condition per call (combine them with a tool)",
            )
        condition = self._expressions.condition(node.test)
        for body, when in ((node.body, condition), (node.orelse, negated(condition))):
            if not body:
                continue
            self._when = when
            try:
                self.statements(body)
            finally:
                self._when = None

    # -- calls -----------------------------------------------------------------------------

    def call_step(
        self, node: ast.Call, name: str | None, *, for_each: str | list[Any] | None = None
    ) -> str:
        called = called_name(node)
        if called is None:
            raise Refused(node, f"call a tool by its name, not {shown(node.func)}")
        if called in IGNORED_CALLS:
            raise Refused(node, f"{called}() is ignored as a statement, but its value is nothing")
        tool = self._tool(node, called)
        parameters = self._expressions.arguments(node, called, tool)
        tool_name = tool.name if tool is not None else called
        key = None
        if tool is not None and tool.read_only and for_each is None:
            key = json.dumps([tool_name, parameters, self._when], sort_keys=True, default=str)
            known = self._reads.get(key)
            if known is not None and known[1] == self._write_counts(tool):
                return known[0]  # the same read, with nothing written between: one step
        if self.max_steps is not None and len(self.steps) >= self.max_steps:
            self.issues.append(
                issue(
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
        self.sources[step_id] = Written(
            node.lineno,
            node.col_offset + 1,
            shown(node),
            name or _said(node),
            tuple(tool.parameters[: len(node.args)]) if tool is not None else (),
        )
        if key is not None:
            assert tool is not None
            self._reads[key] = (step_id, self._write_counts(tool))
        elif tool is None or not tool.read_only:
            for resource in tool.resources if tool is not None else ("default",):
                self._writes[resource] = self._writes.get(resource, 0) + 1
        return step_id

    def _calls_a_tool(self, node: ast.AST) -> bool:
        """``node`` calls a tool (any name, when the tools are not known)."""
        if not isinstance(node, ast.Call):
            return False
        called = called_name(node)
        if called is None or called in IGNORED_CALLS or called == "enumerate":
            return False
        return self.tools is None or self.tools.tool(called) is not None

    def _tool(self, node: ast.Call, called: str) -> PythonTool | None:
        if self.tools is None:
            return None
        tool = self.tools.tool(called)
        if tool is not None:
            return tool
        colliding = self.tools.collisions.get(called)
        if colliding:
            raise Refused(
                node,
                f"{called!r} would name each of the tools {', '.join(map(repr, colliding))}: "
                "rename one of them so that each has a Python name of its own",
            )
        raise Refused(node, f"{called!r} is not a tool{_close(called, node, self.tools)}")

    def _write_counts(self, tool: PythonTool) -> tuple[int, ...]:
        return tuple(self._writes.get(resource, 0) for resource in tool.resources)

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


def _ignorable(node: ast.stmt) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if not isinstance(node, ast.Expr):
        return False
    value = node.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return True
    return isinstance(value, ast.Call) and called_name(value) in IGNORED_CALLS


def _is_call_statement(node: ast.stmt) -> bool:
    if isinstance(node, ast.Expr | ast.Assign):
        return isinstance(node.value, ast.Call)
    return False


def _loop_body_problem(node: ast.For, body: Sequence[ast.stmt]) -> str:
    """Why a loop's body is refused, naming the statements to move: those that do not use the
    loop's item run once, so they go before or after the loop."""
    problem = "a for loop's body must be exactly one tool call (it becomes one call per item)"
    item = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    apart = [
        s for s in body if not any(isinstance(n, ast.Name) and n.id in item for n in ast.walk(s))
    ]
    if apart and len(apart) < len(body):
        moved = ", ".join(f"{shown(s)} (line {s.lineno})" for s in apart)
        names = " or ".join(sorted(item))
        return f"{problem}: {moved} does not use {names}: move it before or after the loop"
    return f"{problem}: write one loop per call, or move other calls out of the loop"


def _close(name: str, node: ast.Call, known: PythonTools) -> str:
    """The tools a call of the unknown ``name`` may have meant, those that take its arguments
    first, or the tools there are."""
    close = closest_tools(
        name,
        {called: known[called].parameters for called in known},
        keywords=[keyword.arg for keyword in node.keywords if keyword.arg is not None],
        positional=sum(not isinstance(arg, ast.Starred) for arg in node.args),
    )
    if close:
        return "; did you mean " + " or ".join(map(repr, close)) + "?"
    listed = list(known)[:15]
    return "; tools: " + (", ".join(listed) or "none") + (" ..." if len(known) > 15 else "")


_SAID_CHARS = 120
"""The longest call a problem repeats as written; a longer one is named by its tool."""


def _said(node: ast.Call) -> str:
    """How the text names the output of a call no name is bound to: the call as written, which
    a problem can show inside a fix (``str(route(a="NY")["distance"])``); too long a call is
    shortened to its tool (``route(...)``), which a model reads as "bind it to a name"."""
    text = ast.unparse(node)
    if len(text) <= _SAID_CHARS:
        return text
    return f"{ast.unparse(node.func)}(...)"


_KEYWORD_ARGUMENT = re.compile(r"([A-Za-z_]\w*)\s*=(?!=)")

_SHOWN_LINE = 120
"""The longest line a syntax problem quotes; a longer one is cut."""


def _syntax_problem(error: SyntaxError) -> str:
    """What Python said, and the line it said it of: told only "line 18: invalid syntax", a
    model wrote the same line again (NESTFUL executable-3's ``class=["eco"]``). An argument named
    by a keyword gets its alias (:func:`~toolplan.plan_format.python_tools.argument_aliases`)."""
    text = (error.text or "").splitlines()[0].strip() if error.text else ""
    if not text:
        return error.msg
    at = (error.text or "")[(error.offset or 1) - 1 :]
    named = _KEYWORD_ARGUMENT.match(at)
    if named and keyword.iskeyword(named.group(1)):
        word = named.group(1)
        return (
            f"{word!r} is a Python keyword, so no argument is written {word}=...: a tool's "
            f"argument {word!r} is written {python_name(word)}=..., as its signature shows"
        )
    if len(text) > _SHOWN_LINE:
        text = text[: _SHOWN_LINE - 1] + "…"
    return f"{error.msg}; the line reads: {text}"
