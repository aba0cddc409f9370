"""The planner's Python format (``TOOLPLAN_PLAN_FORMAT=python``): the model is shown the catalog
as Python signatures and answers with Python statements, the form a code model writes best, which
:func:`toolplan.plan_format.python_plan.parse_python_plan` reads into the plan (never running them).

Three pieces, the rest of planning is shared with the JSON format (validation, repairs, storing):

- :func:`render_signatures`: each tool as ``def name(arg: type = default) -> shape:`` with its
  description as the docstring;
- :func:`read_python_answer`: the model's text (in a Markdown fence or not; BFCL's list form
  ``[f(a=1), g(b=2)]`` included) into plan JSON and the problems found, each naming its line and
  column in the model's own text; an answer of comments only declines (no tool fits);
- :class:`StatementScanner`: while the answer streams, each top-level statement as soon as it is
  complete, read into its steps (what the progress lines show at once).
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolplan.config.settings import PlannerRewrites
from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.python_plan import parse_python_plan
from toolplan.plan_format.python_print import python_literal, template_expression
from toolplan.plan_format.templates import exact_template, template_spans
from toolplan.planning.parsing import PlanReading
from toolplan.planning.rewrites import Change, rule_runs
from toolplan.tools.catalog import ToolCatalog, ToolInfo
from toolplan.tools.returns import shown_shape
from toolplan.validation.types import list_in_output

__all__ = [
    "StatementScanner",
    "json_answer",
    "python_problem",
    "read_python_answer",
    "render_signatures",
]

_ANY_FENCE = re.compile(r"```[ \t]*\w*[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)

_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


def render_signatures(infos: Iterable[ToolInfo]) -> str:
    """The catalog as Python: one ``def`` per tool, with its description as the docstring and
    the shape of what it returns, when declared."""
    return "\n\n".join(_signature(info) for info in infos)


def _signature(info: ToolInfo) -> str:
    properties: Mapping[str, Any] = info.parameters.get("properties") or {}
    required = set(info.parameters.get("required") or [])
    arguments = []
    for name, schema in properties.items():
        text = f"{name}: {_type(schema)}"
        if name not in required:
            default = schema.get("default") if isinstance(schema, dict) else None
            text += " = " + python_literal(default)
        arguments.append(text)
    shape = shown_shape(info.returns)
    returns = f" -> {shape}" if shape else ""
    doc = (info.description or "").strip()
    described = [
        f"        {name}: {' '.join(schema['description'].split())}"
        for name, schema in properties.items()
        if isinstance(schema, dict)
        and isinstance(schema.get("description"), str)
        and schema["description"].strip()
    ]
    if described:  # what each argument means, as a Google-style docstring says it
        doc = "\n\n".join(part for part in (doc, "    Args:\n" + "\n".join(described)) if part)
    doc = doc.replace('"""', "'''")
    name = info.name if _callable_name(info.name) else json.dumps(info.name)
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


def answer_code(text: str) -> str:
    """The Python in the model's answer: the first fenced block when there is one, else the
    text itself."""
    fenced = _FENCE.search(text)
    return fenced.group(1) if fenced else text


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
    text: str | None, catalog: ToolCatalog, *, rewrites: PlannerRewrites = "format"
) -> PlanReading:
    """The model's Python answer as plan JSON, with every problem as an issue (naming its line
    and column in ``text``). An answer with no call at all (comments only) is a plan with no
    step, and its comments are the reasoning: the model saying no tool fits. The ``tool_names``
    format rule runs unless ``rewrites`` is ``none``."""
    if text is None or not text.strip():
        return PlanReading(
            None,
            [ValidationIssue("python", "the answer was empty: write the plan as Python calls")],
        )
    code = answer_code(text)
    changes: list[Change] = []
    if rule_runs("tool_names", rewrites):
        code, changes = respell_tool_names(code, catalog.signatures)
    try:
        data = parse_python_plan(code, signatures=catalog.signatures)
    except PlanInvalid as invalid:
        return PlanReading(None, list(invalid.issues), changes=changes)
    comments = [
        line.strip().lstrip("#").strip()
        for line in code.splitlines()
        if line.strip().startswith("#")
    ]
    if comments:
        data["reasoning"] = " ".join(comments)
    if rule_runs("loop_lists", rewrites):
        changes += read_loop_lists(data["steps"], catalog)
    return PlanReading(data, changes=changes)


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
    try:
        tree = ast.parse(code)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return code, []
    known = set(tools)
    alike: dict[str, list[str]] = {}
    for tool in known:
        alike.setdefault(_spelling(tool), []).append(tool)
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


def _spelling(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def python_problem(problem: str) -> str:
    """A validator's problem as the Python format's repair says it: each ``"{{step.path}}"``
    it suggests written as the Python that means it (``step["path"]``), quotes and all, since a
    model that writes Python copies the suggestion into its call as a string."""
    out: list[str] = []
    position = 0
    for start, end in template_spans(problem):
        expression = template_expression(problem[start:end])
        if expression is None:
            continue  # not one template: left as written
        if start > position and problem[start - 1] == '"':
            start -= 1
        if end < len(problem) and problem[end] == '"':
            end += 1
        out += [problem[position:start], expression]
        position = end
    return "".join(out) + problem[position:]


class StatementScanner:
    """Reads a streamed answer statement by statement: :meth:`feed` returns the steps of each
    top-level statement completed since the last call (a statement is complete once a later line
    starts at the left margin, or the answer ended)."""

    def __init__(self, signatures: Mapping[str, Sequence[str]] | None = None) -> None:
        self.signatures = signatures
        self.text = ""
        self.told = 0
        """Steps already told."""

    def feed(self, chunk: str, *, final: bool = False) -> list[dict[str, Any]]:
        """The steps completed by ``chunk`` (by the end of the answer, with ``final``)."""
        self.text += chunk
        code = answer_code(self.text)
        lines = code.split("\n")
        if not final:
            # the last line may still be written; a statement ends where a later one starts
            complete = len(lines) - 1
            while complete > 0 and not _starts_statement(lines[complete]):
                complete -= 1
            code = "\n".join(lines[:complete])
        try:
            data = parse_python_plan(code, signatures=self.signatures)
        except PlanInvalid:
            return []  # a statement being written, or a problem the whole answer will report
        steps: list[dict[str, Any]] = data["steps"]
        new = steps[self.told :]
        self.told = len(steps)
        return new


def _starts_statement(line: str) -> bool:
    """Whether ``line`` begins a new top-level statement (not a continuation, an ``else``, a
    comment or a closing bracket)."""
    if not line or line[0].isspace() or line.startswith(("#", ")", "]", "}")):
        return False
    return not line.startswith(("else", "elif"))
