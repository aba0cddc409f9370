"""A plan written as Python statements (``toolplan show``): what
:func:`toolplan.plan_format.python_plan.parse_python_plan` reads back into the same plan, for a plan
whose every field has a Python spelling. What has none (a ``fallback``, a ``timeout``, extra
``dependsOn`` edges, ``outputSteps``) is written as a comment."""

from __future__ import annotations

import heapq
import json
import keyword
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.python_tools import PythonTools, argument_aliases, python_name
from toolplan.plan_format.templates import (
    INDEX,
    ITEM,
    Template,
    contains_template,
    exact_template,
    references,
    template_spans,
)

__all__ = [
    "in_python",
    "python_literal",
    "python_message",
    "render_python_plan",
    "said_in_python",
    "template_expression",
    "unsayable",
]

_NOT_ID = re.compile(r"[^A-Za-z0-9_]")


def render_python_plan(plan: Plan, tools: PythonTools | None = None) -> str:
    """``plan`` as Python statements, in program order (a step after the steps whose output it
    uses), each tool called by its Python name: what
    :func:`~toolplan.plan_format.python_plan.parse_python_plan` reads back as the same plan
    (steps, tools, parameters and edges). What Python cannot say (:func:`unsayable`) is written
    as comments, and a first comment says what: reading the text back drops it. Given the
    ``tools`` the plan calls, an argument whose name is not Python (``from``) is written by its
    alias (``from_=``), as a reader given the same tools reads it."""
    names = _python_names(plan)
    lines: list[str] = []
    lost = unsayable(plan, tools)
    if lost:
        lines.append(
            "# Python cannot say: " + "; ".join(lost) + " (comments below; read back, they are "
            "dropped)"
        )
    if plan.reasoning:
        lines.extend(f"# {line}".rstrip() for line in plan.reasoning.splitlines())
    for step in _program_order(plan):
        writer = _Writer(names)
        call = writer.call(python_name(step.tool), step.parameters, _written(step.tool, tools))
        name = names[step.id]
        if step.for_each is not None:
            source = (
                writer.expression(step.for_each)
                if isinstance(step.for_each, str)
                else python_literal(step.for_each)
            )
            loop = (
                f"{writer.index_name}, {writer.item_name} in enumerate({source})"
                if writer.uses_index
                else f"{writer.item_name} in {source}"
            )
            statement = f"{name} = [{call} for {loop}]"
        elif name == step.id == _NOT_ID.sub("_", python_name(step.tool)):
            statement = call  # a bare call: read back, its id is made from the tool's name
        else:
            statement = f"{name} = {call}"
        note = _notes(step, writer, names)
        if step.when is None:
            lines.append(statement + note)
        else:
            lines.append(f"if {_condition(step.when, writer)}:")
            lines.append(f"    {statement}{note}")
    if plan.output_steps is not None:
        lines.append("# outputs: " + ", ".join(names.get(s, s) for s in plan.output_steps))
    return "\n".join(lines) + "\n"


def python_message(message: str, names: Mapping[str, str] | None = None) -> str:
    """A problem said in the Python form: each ``"{{step.path}}"`` in it written as the Python
    that means it (``step["path"]``), quotes and all (a model that writes Python copies a
    suggestion into its call as a string otherwise); a value shown inside a sentence as
    ``str(...)``, which is how Python makes it text. ``names`` says how the text names a step
    whose id it never wrote (a nested call: the call itself)."""
    message = _SENTENCE.sub(r"as text: str(\1)", message)
    writer = _Writer(names or {})
    out: list[str] = []
    position = 0
    for start, end in template_spans(message):
        if exact_template(message[start:end]) is None:
            continue  # not one template: left as written
        expression = writer.expression(message[start:end])
        if start > position and message[start - 1] == '"':
            start -= 1
        if end < len(message) and message[end] == '"':
            end += 1
        out += [message[position:start], expression]
        position = end
    return "".join(out) + message[position:]


_SENTENCE = re.compile(
    r'inside a sentence, where any value becomes text: "\.\.\. (\{\{[^"{}]*\}\}) \.\.\."'
)
"""The validator's way of making a value text (a template inside a string), which Python says
with ``str()``."""

_STEP_PREFIX = re.compile(r"^step '([^']*)'(?: fallback)?(?: of tool '[^']*')?:\s*")
_STEP_MENTION = re.compile(r"\bstep '([^']*)'(?: \([^()]*\))?")


def in_python(
    issues: Iterable[ValidationIssue],
    sources: Mapping[str, Sequence[Any]],
    tools: PythonTools,
) -> list[ValidationIssue]:
    """The validation problems of a plan read from Python, said in Python: where the step each
    is about was written (``line 3, column 9``, and the call as written) instead of its id, and
    its templates as expressions, each step named as the text names it; about an argument given
    by position, its place; each tool by the name a plan calls it among ``tools``
    (``get_weather`` for ``get-weather``). ``sources`` holds where each step was written and
    how the text names it (:class:`~toolplan.plan_format.python_plan.Written`, or the same as
    a list)."""
    names = {
        step: str(where[3])
        for step, where in sources.items()
        if len(where) > 3 and where[3] != step
    }
    return [_in_python(issue, sources, names, tools) for issue in issues]


_TOOL_MENTION = re.compile(r"\b(tools? )('[^']*'(?:,? or '[^']*'|, '[^']*')*)")
"""A tool named in a problem (``tool 'get-weather'``, ``tools 'a' or 'b'``)."""


def _called_names(message: str, tools: PythonTools) -> str:
    """``message`` naming each tool as a Python plan calls it: by its alias where its own name
    is not Python (a model told of ``get-weather`` writes a subtraction). A name the plan may
    call as written (``weather.current``) and one whose alias collides stay as they are."""

    def called(tool: str) -> str:
        alias = tools.alias(tool) if tool not in tools else None
        return alias if alias is not None else tool

    def mention(found: re.Match[str]) -> str:
        listed = re.sub(r"'([^']*)'", lambda m: repr(called(m.group(1))), found.group(2))
        return found.group(1) + listed

    return _TOOL_MENTION.sub(mention, message)


def _in_python(
    issue: ValidationIssue,
    sources: Mapping[str, Sequence[Any]],
    names: Mapping[str, str],
    tools: PythonTools,
) -> ValidationIssue:
    message = issue.message
    source = sources.get(issue.step) if issue.step is not None else None
    if source is not None and not message.startswith("line "):
        line, column, call = source[0], source[1], source[2]
        fallback = (
            " fallback"
            if re.match(rf"^step '{re.escape(str(issue.step))}' fallback", message)
            else ""
        )
        message = f"line {line}, column {column} ({call}{fallback}): " + _STEP_PREFIX.sub(
            "", message
        )
        if not fallback:
            message = _by_position(message, source[4] if len(source) > 4 else ())
    if names:  # "step 'route_2' (route)": a call nobody named, as written
        message = _STEP_MENTION.sub(lambda m: names.get(m.group(1), m.group(0)), message)
    message = _called_names(message, tools)
    return ValidationIssue(issue.code, python_message(message, names), issue.step)


_ARGUMENT = re.compile(r"(?<!missing required )(?<!unknown )\bargument '([^']*)'")


def _by_position(message: str, positional: Sequence[str]) -> str:
    """``message``, about an argument the call gave by position among others, with the
    argument's place and to write each argument by name (the real model gave a party size
    third, where the signature has the price range, and repeated it told only that the value is
    not one of the price ranges: NESTFUL sgd-11). One positional argument cannot be misplaced."""
    found = _ARGUMENT.search(message)
    if found is None or len(positional) < 2 or found.group(1) not in positional:
        return message
    place = _ordinal(list(positional).index(found.group(1)) + 1)
    note = f" (the {place} given by position: write each argument by name)"
    return message[: found.end()] + note + message[found.end() :]


def _ordinal(number: int) -> str:
    suffix = (
        "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    )
    return f"{number}{suffix}"


def said_in_python(invalid: PlanInvalid, plan: Plan, tools: PythonTools) -> PlanInvalid:
    """``invalid`` (``plan``'s problems) said in Python when the plan was read from Python
    (:func:`in_python`); as it is otherwise."""
    sources = plan.python_sources
    if not sources:
        return invalid
    return PlanInvalid(in_python(invalid.issues, sources, tools), omitted=invalid.omitted)


def _written(tool: str, tools: PythonTools | None) -> Mapping[str, str]:
    """The names ``tool``'s arguments are written by (:func:`argument_aliases`), when known."""
    found = tools.tool(tools.alias(tool) or tool) if tools is not None else None
    return argument_aliases(found.parameters) if found is not None else {}


def _python_argument(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def unsayable(plan: Plan, tools: PythonTools | None = None) -> list[str]:
    """What of ``plan`` has no Python spelling (empty when its Python form is the whole plan);
    given ``tools``, an argument written by its alias has one."""
    found: list[str] = []
    steps = plan.steps
    fields = (
        ("dependsOn", lambda s: bool(s.depends_on)),
        ("fallback", lambda s: s.fallback is not None),
        ("timeout", lambda s: s.timeout is not None),
        ("maxAttempts", lambda s: s.max_attempts is not None),
        ("maxItems", lambda s: s.max_items is not None),
        ("approval", lambda s: bool(s.approval)),
    )
    for label, has in fields:
        named = [step.id for step in steps if has(step)]
        if named:
            found.append(f"{label} ({', '.join(named)})")
    keyed = [
        step.id
        for step in steps
        if not isinstance(step.parameters, dict)
        or not all(_python_argument(_written(step.tool, tools).get(k, k)) for k in step.parameters)
    ]
    if keyed:
        found.append(f"arguments whose names are not Python names ({', '.join(keyed)})")
    names = _python_names(plan)
    renamed = [f"{step} as {name}" for step, name in names.items() if step != name]
    if renamed:
        found.append("step ids that are not Python names: " + ", ".join(renamed))
    if plan.output_steps is not None:
        found.append("outputSteps")
    return found


def _program_order(plan: Plan) -> list[Step]:
    """The steps in program order: as written, but after the steps whose output they use (a
    JSON plan may name a step written later; Python cannot)."""
    position = {step.id: index for index, step in enumerate(plan.steps)}
    by_id = {step.id: step for step in plan.steps}
    waiting: dict[str, int] = {}
    dependents: dict[str, list[str]] = {step.id: [] for step in plan.steps}
    for step in plan.steps:
        before = {*step.depends_on, *references(step.parameters)}
        if step.fallback is not None:
            before |= references(step.fallback.parameters)
        if isinstance(step.for_each, str):
            before |= references(step.for_each)
        if step.when is not None and not isinstance(step.when, bool):
            before |= references(step.when if isinstance(step.when, str) else step.when.template)
        before = {b for b in before if b in position and b != step.id}
        waiting[step.id] = len(before)
        for dep in before:
            dependents[dep].append(step.id)
    ready = [position[s.id] for s in plan.steps if waiting[s.id] == 0]
    heapq.heapify(ready)
    order: list[Step] = []
    while ready:
        step = plan.steps[heapq.heappop(ready)]
        order.append(step)
        for child in dependents[step.id]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, position[child])
    seen = {step.id for step in order}
    return order + [by_id[s.id] for s in plan.steps if s.id not in seen]  # a cycle: as written


def template_expression(text: str) -> str | None:
    """The Python expression a ``{{step.path}}`` template is written as in a Python plan
    (``author["_id"]``), or ``None`` when ``text`` is not one template."""
    return _Writer({}).expression(text) if exact_template(text) is not None else None


def _python_names(plan: Plan) -> dict[str, str]:
    """A Python name for each step id (ids may hold ``-`` or be keywords)."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for step in plan.steps:
        base = _NOT_ID.sub("_", step.id)
        if keyword.iskeyword(base) or base in ("item", "i", "enumerate", "print"):
            base += "_"
        candidate, number = base, 1
        while candidate in used:
            number += 1
            candidate = f"{base}_{number}"
        used.add(candidate)
        names[step.id] = candidate
    return names


class _Writer:
    """Writes one step's values as Python expressions."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names
        taken = set(names.values())
        self.item_name = _free("item", taken)
        self.index_name = _free("i", taken)
        self.uses_index = False

    def call(self, tool: str, parameters: Any, written: Mapping[str, str] | None = None) -> str:
        if isinstance(parameters, dict):
            aliases = written or {}
            arguments = ", ".join(
                f"{aliases.get(k, k)}={self.value(v)}"
                if _python_argument(aliases.get(k, k))
                else f"**{{{json.dumps(k)}: {self.value(v)}}}"
                for k, v in parameters.items()
            )
        else:
            arguments = f"*{self.value(parameters)}"
        return f"{tool}({arguments})"

    def value(self, value: Any) -> str:
        if isinstance(value, str):
            if exact_template(value) is not None:
                return self.expression(value)
            if contains_template(value):
                return self.fstring(value)
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, list):
            return "[" + ", ".join(self.value(v) for v in value) + "]"
        if isinstance(value, dict):
            return (
                "{"
                + ", ".join(
                    f"{json.dumps(k, ensure_ascii=False)}: {self.value(v)}"
                    for k, v in value.items()
                )
                + "}"
            )
        return python_literal(value)

    def expression(self, text: str) -> str:
        template = Template.parse(text.strip())
        if template is None:
            return json.dumps(text, ensure_ascii=False)
        if template.step == INDEX:
            self.uses_index = True
            base = self.index_name
        elif template.step == ITEM:
            base = self.item_name
        else:
            base = self.names.get(template.step, template.step)
        return base + "".join(
            f"[{p}]" if isinstance(p, int) else f"[{json.dumps(p, ensure_ascii=False)}]"
            for p in template.path
        )

    def fstring(self, text: str) -> str:
        out: list[str] = []
        position = 0
        for start, end in template_spans(text):
            if Template.parse(text[start:end]) is None:
                continue  # malformed: written as text, like the rest around it
            out.append(_fstring_text(text[position:start]))
            inner = self.expression(text[start:end]).replace('"', "'")
            out.append("{" + inner + "}")
            position = end
        out.append(_fstring_text(text[position:]))
        return 'f"' + "".join(out) + '"'


def _fstring_text(text: str) -> str:
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    return escaped.replace("{", "{{").replace("}", "}}")


def python_literal(value: Any) -> str:
    """A JSON value as the Python literal that means it (``True``, ``None``, not ``true``)."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(
                f"{json.dumps(k, ensure_ascii=False)}: {python_literal(v)}"
                for k, v in value.items()
            )
            + "}"
        )
    return json.dumps(value, ensure_ascii=False)


def _condition(when: Any, writer: _Writer) -> str:
    if isinstance(when, bool):
        return "True" if when else "False"
    if isinstance(when, str):
        return writer.expression(when)
    return "not " + writer.expression(when.template)


def _free(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _notes(step: Step, writer: _Writer, names: Mapping[str, str]) -> str:
    """What the step sets that has no Python spelling, as a trailing comment."""
    notes: list[str] = []
    if step.depends_on:
        notes.append("after " + ", ".join(names.get(d, d) for d in step.depends_on))
    if step.fallback is not None:
        notes.append("fallback " + writer.call(step.fallback.tool, step.fallback.parameters))
    if step.timeout is not None:
        notes.append(f"timeout {step.timeout:g} s")
    if step.max_attempts is not None:
        notes.append(f"maxAttempts {step.max_attempts}")
    if step.max_items is not None:
        notes.append(f"maxItems {step.max_items}")
    if step.approval:
        notes.append("approval")
    return "  # " + "; ".join(notes) if notes else ""
