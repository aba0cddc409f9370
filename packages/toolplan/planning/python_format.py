"""The planner's Python format (``TOOLPLAN_PLAN_FORMAT=python``): the model is shown the catalog
as Python signatures and answers with Python statements, the form a code model writes best, which
:func:`toolplan.plan_format.python_plan.parse_python_plan` reads into the plan (never running them).

Three pieces, the rest of planning is shared with the JSON format (validation, repairs, storing):

- :func:`render_signatures`: each tool as ``def name(arg: type = default) -> shape:`` with its
  description as the docstring;
- :func:`read_python_answer`: the model's text (in a Markdown fence or not) into plan JSON and
  the problems found, each naming its line and column in the model's own text; an answer of comments only declines (no tool fits);
- :class:`StatementScanner`: while the answer streams, each top-level statement as soon as it is
  complete, read into its steps (what the progress lines show at once).
"""

from __future__ import annotations

import ast
import copy
import json
import keyword
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from toolplan.config.settings import PlannerRewrites
from toolplan.errors import ValidationIssue
from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.python_plan import PythonReader
from toolplan.plan_format.python_print import python_literal, python_message
from toolplan.plan_format.python_source import Restart, SourceEvent, SourceSplitter, Statement
from toolplan.plan_format.python_tools import PythonTools, argument_aliases
from toolplan.plan_format.templates import exact_template
from toolplan.planning.parsing import PlanReading
from toolplan.planning.rewrites import Change, rule_runs, step_changes
from toolplan.tools.catalog import ToolCatalog, ToolInfo
from toolplan.tools.returns import shown_shape
from toolplan.validation.types import list_in_output

__all__ = [
    "PythonAnswerReader",
    "json_answer",
    "python_problem",
    "read_python_answer",
    "render_signatures",
]

_ANY_FENCE = re.compile(r"```[ \t]*\w*[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)

_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


def render_signatures(infos: Iterable[ToolInfo], *, tools: PythonTools | None = None) -> str:
    """The catalog as Python: one ``def`` per tool, named as a plan calls it (its alias when
    its name is not a Python name: ``tools``), with its description as the docstring and the
    shape of what it returns, when declared. A tool whose alias collides with another's is
    named in a comment only: no plan can call it."""
    parts = []
    for info in infos:
        name = tools.alias(info.name) if tools is not None else info.name
        if name is None:
            parts.append(f"# {info.name!r} has no Python name: it would be another tool's")
        else:
            parts.append(_signature(info, name))
    return "\n\n".join(parts)


def _signature(info: ToolInfo, called: str) -> str:
    properties: Mapping[str, Any] = info.parameters.get("properties") or {}
    required = set(info.parameters.get("required") or [])
    written = argument_aliases(properties)  # from_, not from
    arguments: list[str] = []
    optional = False  # an optional argument came before: a required one after it follows a *
    for name, schema in properties.items():
        text = f"{written[name]}: {_type(schema)}"
        if name not in required:
            default = schema.get("default") if isinstance(schema, dict) else None
            text += " = " + python_literal(default)
        elif optional and "*" not in arguments:
            arguments.append("*")
        optional = optional or name not in required
        arguments.append(text)
    shape = shown_shape(info.returns)
    returns = f" -> {shape}" if shape else ""
    doc = (info.description or "").strip()
    described = [
        f"        {written[name]}: {' '.join(schema['description'].split())}"
        for name, schema in properties.items()
        if isinstance(schema, dict)
        and isinstance(schema.get("description"), str)
        and schema["description"].strip()
    ]
    if described:  # what each argument means, as a Google-style docstring says it
        doc = "\n\n".join(part for part in (doc, "    Args:\n" + "\n".join(described)) if part)
    doc = doc.replace('"""', "'''")
    name = called if _callable_name(called) else json.dumps(called)
    closing = "\n    " if described else ""  # a docstring of several lines closes on its own
    body = f'    """{doc}{closing}"""' if doc else "    ..."
    return f"def {name}({', '.join(arguments)}){returns}:\n{body}"


def _type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return "Literal[" + ", ".join(python_literal(v) for v in schema["enum"]) + "]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_TYPES.get(k, "Any") for k in kind if isinstance(k, str)) or "Any"
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list[{_type(schema['items'])}]"
    for branch in ("anyOf", "oneOf"):
        if isinstance(schema.get(branch), list):
            return " | ".join(_type(option) for option in schema[branch]) or "Any"
    return _TYPES.get(kind, "Any") if isinstance(kind, str) else "Any"


def _callable_name(name: str) -> bool:
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in name.split("."))


def json_answer(payload: Any) -> bool:
    """Whether an answer to the Python format's request is a JSON plan after all: a tool call's
    arguments, or text that is one JSON object (a model or server that answers JSON whatever it
    is asked; no Python plan is a lone dict). The JSON reading takes it, format rules and all."""
    if payload is None:
        return False
    if not isinstance(payload, str):
        return True
    fenced = _ANY_FENCE.search(payload)
    code = (fenced.group(1) if fenced else payload).strip()
    if not code.startswith("{"):
        return False
    try:
        return isinstance(json.loads(code), dict)
    except ValueError:
        return False


def read_python_answer(
    text: str | None,
    catalog: ToolCatalog,
    *,
    rewrites: PlannerRewrites = "format",
    limits: InputLimits | None = None,
    max_steps: int | None = None,
) -> PlanReading:
    """The model's whole Python answer as plan JSON, with every problem as an issue (naming its
    line and column in ``text``): :class:`PythonAnswerReader` fed the answer at once."""
    reader = PythonAnswerReader(catalog, rewrites=rewrites, limits=limits, max_steps=max_steps)
    reader.feed(text or "")
    return reader.finish()


class PythonAnswerReader:
    """Reads a model's Python answer, streamed or whole: :meth:`feed` it text as it comes (it
    returns the steps of the statements each piece completes), then :meth:`finish` it for the
    reading of the whole answer. Each character is looked at once and each statement parsed
    once (:class:`~toolplan.plan_format.python_source.SourceSplitter`), so a streamed answer
    costs what a whole one does.

    It owns the format's rules: every fenced block of the answer is read, in order (the text
    around them is prose; an answer with no fence is code); a tool called by a name spelled like
    exactly one tool save for case and ``_`` is that tool (``tool_names``, unless ``rewrites``
    is ``none``); a loop over a call's output that holds one list goes over that list
    (``loop_lists``); an answer of comments only is a plan with no step, its comments the
    reasoning (no tool fits)."""

    def __init__(
        self,
        catalog: ToolCatalog,
        *,
        rewrites: PlannerRewrites = "format",
        limits: InputLimits | None = None,
        max_steps: int | None = None,
    ) -> None:
        self.catalog = catalog
        self.rewrites = rewrites
        self.reader = PythonReader(
            catalog.python_tools, limits=limits or InputLimits(), max_steps=max_steps
        )
        self.splitter = SourceSplitter(fences=True, limits=self.reader.limits)
        self.changes: list[Change] = []
        self._respelled: set[str] = set()
        self._comments: list[str] = []
        self._calls_by_block: dict[int, list[str]] = {}
        self._seen = False

    @property
    def restarts(self) -> int:
        """How many times what was read turned out to be prose before a fenced block."""
        return self.reader.restarts

    def feed(self, chunk: str, *, final: bool = False) -> list[dict[str, Any]]:
        """The steps of the statements ``chunk`` completes (with ``final``, the answer ended:
        its last statement too, as :meth:`finish` reads it)."""
        if chunk.strip():
            self._seen = True
        return self._read(self._events(chunk, final=final))

    def _events(self, chunk: str, *, final: bool) -> Iterator[SourceEvent]:
        """What ``chunk`` completes, looked at only while reading goes on: once it stops (the
        step limit, a problem of the text itself), the rest of the answer is not looked at."""
        if self.reader.stopped:
            return
        yield from self.splitter.events(chunk)
        if final and not self.reader.stopped:
            yield from self.splitter.finish()

    def _read(self, events: Iterable[SourceEvent]) -> list[dict[str, Any]]:
        new: list[dict[str, Any]] = []
        for event in events:
            if isinstance(event, Restart):
                self._comments, self._calls_by_block = [], {}
                self.changes = [c for c in self.changes if c.rule != "tool_names"]
                self._respelled = set()
                new = self.reader.take([event])
            else:
                if isinstance(event, Statement):
                    event = self._respell(event)
                    self._comments += _comment_lines(event.text)
                before = len(self.reader.steps)
                new += self.reader.take([event])
                if isinstance(event, Statement) and event.block:
                    self._calls_by_block.setdefault(event.block, []).extend(
                        _call_key(step) for step in self.reader.steps[before:]
                    )
            if self.reader.stopped:
                break  # before the next event is asked for: the text after is not looked at
        return new

    def _respell(self, statement: Statement) -> Statement:
        if not rule_runs("tool_names", self.rewrites):
            return statement
        text, changes = respell_tool_names(statement.text, self.catalog.python_tools)
        for change in changes:
            if change.before not in self._respelled:
                self._respelled.add(str(change.before))
                self.changes.append(change)
        return statement if text == statement.text else replace(statement, text=text)

    def finish(self) -> PlanReading:
        """The reading of the whole answer: its plan JSON, or every problem found."""
        if not self._seen:
            return PlanReading(
                None,
                [ValidationIssue("python", "the answer was empty: write the plan as Python calls")],
            )
        self._read(self._events("", final=True))
        issues = [*self.reader.issues, *self._repeated_blocks()]
        if issues:
            return PlanReading(None, issues, changes=list(self.changes))
        data: dict[str, Any] = {"steps": self.reader.steps}
        if self._comments:
            data["reasoning"] = " ".join(self._comments)
        changes = list(self.changes)
        if rule_runs("nulls", self.rewrites):
            changes += read_default_nones(data["steps"], self.catalog)
        if rule_runs("loop_lists", self.rewrites):
            changes += read_loop_lists(data["steps"], self.catalog)
        return PlanReading(data, changes=changes, sources=dict(self.reader.sources))

    def _repeated_blocks(self) -> list[ValidationIssue]:
        """A block that makes the very calls an earlier one made: the answer wrote its plan
        twice, and which one it meant cannot be told."""
        seen: dict[tuple[str, ...], int] = {}
        issues = []
        for block, calls in sorted(self._calls_by_block.items()):
            key = tuple(calls)
            if calls and key in seen:
                issues.append(
                    ValidationIssue(
                        "python",
                        f"the answer's block {block} makes the same calls as its block "
                        f"{seen[key]}: its blocks conflict. Write the plan once",
                    )
                )
            seen.setdefault(key, block)
        return issues


def _comment_lines(text: str) -> list[str]:
    return [
        line.strip().lstrip("#").strip()
        for line in text.splitlines()
        if line.strip().startswith("#") and line.strip().lstrip("#").strip()
    ]


def _call_key(step: dict[str, Any]) -> str:
    call = [step.get(name) for name in ("tool", "parameters", "forEach", "when")]
    return json.dumps(call, sort_keys=True, default=str)


def read_default_nones(steps: list[dict[str, Any]], catalog: ToolCatalog) -> list[Change]:
    """Each optional argument written ``None`` whose default is ``None`` left out, so that the
    tool's default applies: the signature shows such an argument as ``dt: str = None``
    (:func:`render_signatures`), so ``dt=None`` says "the default", and the argument schema
    (``"type": "string"``) would refuse it (the real model wrote it on NESTFUL's executable
    split, three times over, and the plan failed). The ``nulls`` rule of the JSON format, for
    ``None`` only: ``""`` in Python is a value written on purpose. Changed in place; the
    changes returned."""
    before = {"steps": copy.deepcopy(steps)}
    for step in steps:
        tool, parameters = step.get("tool"), step.get("parameters")
        if not isinstance(tool, str) or tool not in catalog or not isinstance(parameters, dict):
            continue
        schema = catalog.info(tool).parameters
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        for name in [n for n, value in parameters.items() if value is None]:
            prop = properties.get(name)
            if name not in required and isinstance(prop, Mapping) and prop.get("default") is None:
                del parameters[name]
    return step_changes("nulls", before, {"steps": steps})


def read_loop_lists(steps: list[dict[str, Any]], catalog: ToolCatalog) -> list[Change]:
    """Each loop over a whole call's output that its tool declares to be an object holding
    exactly one list (``for post in listBlogs(...)``, which returns ``{blogs: [...], count}``)
    made to loop over that list (``{{listBlogs.blogs}}``): in Python a loop over a dict goes over
    its keys, which no plan means, and the real model, told where the list is, wrote the same
    loop three times over. Changed in place; the changes returned."""
    tools = {step.get("id"): step for step in steps if isinstance(step, dict)}
    changes: list[Change] = []
    for step in steps:
        loop = step.get("forEach") if isinstance(step, dict) else None
        template = exact_template(loop) if isinstance(loop, str) else None
        source = tools.get(template.step) if template is not None and not template.path else None
        if source is None or source.get("forEach") is not None or "tool" not in source:
            continue  # not exactly "{{step}}", or a map's output (a list already)
        info = catalog.info(source["tool"]) if source["tool"] in catalog.signatures else None
        found = list_in_output(str(source["id"]), info.returns) if info is not None else None
        if found is not None and found[0] != loop:
            changes.append(
                Change("loop_lists", step.get("id"), f"forEach {loop}", f"forEach {found[0]}")
            )
            step["forEach"] = found[0]
    return changes


def respell_tool_names(code: str, tools: Iterable[str]) -> tuple[str, list[Change]]:
    """``code`` with each call of a name that is not a tool, but is spelled like exactly one
    tool save for case and ``_`` (``list_blogs()`` for ``listBlogs``), calling that tool; the
    name is respelled wherever it is read (a bare call's output is read by it). A name the code
    assigns is left alone. A code model writes Python's snake_case by habit, and on the
    project's sets asked again it wrote ``list_blogs`` three times over."""
    known = set(tools)
    alike: dict[str, list[str]] = {}
    for tool in known:
        alike.setdefault(_spelling(tool), []).append(tool)
    if not any(name not in known and _spelling(name) in alike for name in _identifiers(code)):
        return code, []  # nothing to respell: the statement is parsed once, by the reader
    try:
        tree = ast.parse(code)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return code, []
    names = [node for node in ast.walk(tree) if isinstance(node, ast.Name)]
    assigned = {node.id for node in names if not isinstance(node.ctx, ast.Load)}
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    respelled: dict[str, str] = {}
    for name in sorted(called - known - assigned):
        match = alike.get(_spelling(name), [])
        if len(match) == 1:
            respelled[name] = match[0]
    if not respelled:
        return code, []
    lines = code.split("\n")
    spots = sorted(
        ((n.lineno, n.col_offset, n.end_col_offset or n.col_offset, n.id) for n in names),
        reverse=True,
    )
    for line, start, end, name in spots:
        if name in respelled:  # ast's columns count UTF-8 bytes
            raw = lines[line - 1].encode()
            lines[line - 1] = (raw[:start] + respelled[name].encode() + raw[end:]).decode()
    changes = [Change("tool_names", None, before, after) for before, after in respelled.items()]
    return "\n".join(lines), changes


_IDENTIFIER = re.compile(r"(?<!\w)[^\W\d]\w*")
"""What may be a name (in strings and comments too: a first look, which the parse settles).
The look-behind keeps it linear: without it, a long word is tried from each of its letters."""


def _identifiers(code: str) -> Iterator[str]:
    """Each word of ``code`` that may be a name, as Python reads it (NFKC: a name written in
    full-width letters is the same name in ASCII)."""
    for word in _IDENTIFIER.findall(code):
        yield word if word.isascii() else unicodedata.normalize("NFKC", word)


def _spelling(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def python_problem(problem: str) -> str:
    """A validator's problem as the Python format's repair says it
    (:func:`~toolplan.plan_format.python_print.python_message`)."""
    return python_message(problem)
