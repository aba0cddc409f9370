"""A plan written as Python statements (``toolplan show``): what
:func:`toolplan.plan_format.python_plan.parse_python_plan` reads back into the same plan, for a plan
whose every field has a Python spelling. What has none (a ``fallback``, a ``timeout``, extra
``dependsOn`` edges, ``outputSteps``) is written as a comment."""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Mapping
from typing import Any

from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import (
    INDEX,
    ITEM,
    Template,
    contains_template,
    exact_template,
    template_spans,
)

__all__ = ["python_literal", "render_python_plan", "template_expression"]

_NOT_ID = re.compile(r"[^A-Za-z0-9_]")


def render_python_plan(plan: Plan) -> str:
    """``plan`` as Python statements (what :func:`parse_python_plan` reads back, for a plan whose
    every field has a Python spelling); the rest is written as comments."""
    names = _python_names(plan)
    lines: list[str] = []
    if plan.reasoning:
        lines.extend(f"# {line}".rstrip() for line in plan.reasoning.splitlines())
    for step in plan.steps:
        writer = _Writer(names)
        call = writer.call(step.tool, step.parameters)
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
        elif name == step.id == _NOT_ID.sub("_", step.tool):
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

    def call(self, tool: str, parameters: Any) -> str:
        if isinstance(parameters, dict):
            arguments = ", ".join(
                f"{k}={self.value(v)}"
                if k.isidentifier() and not keyword.iskeyword(k)
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
