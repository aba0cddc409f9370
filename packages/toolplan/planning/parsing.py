"""Reading the model's answer into plan JSON: lenient where it is safe, strict where it matters.

Safe, and done silently:

- the plan as message content instead of a tool call, bare or in a markdown fence (```` ```json
  ````), with prose around it, or wrapped the way chat templates write tool calls
  (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``);
- a whole-value template written without quotes inside JSON text (``{"data": {{tokyo}}}``): it
  stands for a JSON value, so the quotes are added (``"{{tokyo}}"``). Only templates outside string
  literals are touched, so ``"by {{author.name}}"`` stays as it is;
- ``parameters`` given as an object where the generic schema asks for a JSON string;
- ``null``, ``""`` or ``"null"`` for an optional argument, at any depth (strict mode makes the
  model write every argument): the argument is left out, so the tool's default applies
  (:mod:`toolplan.planning.fillers` has the exact rule).

Everything else is a :class:`~toolplan.errors.ValidationIssue` for the repair loop, and one step's
unreadable ``parameters`` never hides the other steps: :func:`read_plan` keeps that step (with
empty parameters, listed in ``unreadable``) so the validator still reports every other problem.

Each of these is a ``format`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`:
``json_text``, ``unwrap``, ``nulls``, ``shapes``), recorded as a change when it changes anything;
with ``TOOLPLAN_PLANNER_REWRITES=none`` none of them runs and the answer is read as strict JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from toolplan.config.settings import PlannerRewrites
from toolplan.errors import ValidationIssue
from toolplan.planning.fillers import drop_fillers
from toolplan.planning.rewrites import Change, shown, step_changes
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from toolplan.plan_format.python_plan import Written

__all__ = [
    "PlanReading",
    "loads_lenient",
    "message_payload",
    "quote_bare_templates",
    "read_json",
    "read_plan",
    "to_plan_data",
]

_TEMPLATE = re.compile(
    r"\{\{\s*(?:[A-Za-z_][A-Za-z0-9_\-]*|\$item|\$index)"
    r"(?:\.[^.\[\]{}\s]+|\[\d+\]|\['[^'\\\[\]{}]+'\])*\s*\}\}"
)
_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def quote_bare_templates(text: str) -> str:
    """Quote every whole-value template that stands outside a JSON string literal.

    ``{"a": {{x}}, "b": [{{y.z[0]}}], "c": "by {{w}}"}`` becomes
    ``{"a": "{{x}}", "b": ["{{y.z[0]}}"], "c": "by {{w}}"}``.
    """
    out: list[str] = []
    index = 0
    in_string = False
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if char == "\\" and index + 1 < len(text):
                out.append(text[index + 1])
                index += 2
                continue
            if char == '"':
                in_string = False
            index += 1
            continue
        if char == '"':
            in_string = True
        elif char == "{" and text.startswith("{{", index):
            match = _TEMPLATE.match(text, index)
            if match is not None:
                out.append('"' + match.group(0) + '"')
                index = match.end()
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _candidates(text: str) -> Iterator[tuple[str, str | None]]:
    """The texts that may hold the JSON, each with what was around it: as is (``None``), inside
    fences or tool-call tags, between the first ``{`` and the last ``}``."""
    stripped = text.strip()
    yield stripped, None
    for pattern, around in ((_FENCE, "a ``` fence"), (_TOOL_CALL, "<tool_call> tags")):
        for match in pattern.finditer(stripped):
            yield match.group(1).strip(), around
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        yield stripped[start : end + 1], "prose"


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:  # hostile nesting: an issue like any other, never a crash
        raise json.JSONDecodeError("nested too deeply", text, 0) from None


def read_json(text: str) -> tuple[Any, Change | None]:
    """``json.loads`` of model output, after the safe fixes (fence, tags, bare templates), and
    the ``json_text`` change they made (``None`` when the text was plain JSON).

    Raises the :class:`json.JSONDecodeError` of the text as written when nothing parses.
    """
    first_error: json.JSONDecodeError | None = None
    for candidate, around in _candidates(text):
        quoted = quote_bare_templates(candidate)
        for attempt in (candidate, quoted) if quoted != candidate else (candidate,):
            try:
                value = _loads(attempt)
            except json.JSONDecodeError as error:
                first_error = first_error or error
                continue
            fixes = [f"JSON in {around}"] if around else []
            if attempt is quoted:
                fixes.append("templates without quotes")
            if not fixes:
                return value, None
            after = "the JSON read" + (", templates quoted" if attempt is quoted else "")
            return value, Change("json_text", None, " and ".join(fixes), after)
    assert first_error is not None
    raise first_error


def loads_lenient(text: str) -> Any:
    """``json.loads`` of model output, after the safe fixes (fence, tags, bare templates).

    Raises the :class:`json.JSONDecodeError` of the text as written when nothing parses.
    """
    return read_json(text)[0]


def message_payload(message: BaseMessage | None) -> Any:
    """What the model answered: its first tool call's arguments (an object, or the raw text when
    the client could not parse them), else its text content; ``None`` when it said nothing."""
    if message is None:
        return None
    tool_calls = getattr(message, "tool_calls", None) or []
    if tool_calls:
        return tool_calls[0].get("args")
    invalid = getattr(message, "invalid_tool_calls", None) or []
    if invalid and invalid[0].get("args"):
        return invalid[0]["args"]
    content = message.content
    if isinstance(content, list):
        content = "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str | dict)
        )
    return content if isinstance(content, str) and content.strip() else None


@dataclass
class PlanReading:
    """The model's answer as plan JSON, plus what could not be read."""

    data: dict[str, Any] | None
    """Canonical plan JSON; ``None`` when the answer has no usable shape at all."""
    issues: list[ValidationIssue] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    """Ids of steps whose ``parameters`` could not be read (kept with empty parameters)."""
    changes: list[Change] = field(default_factory=list)
    """What the format rules changed while reading (:mod:`toolplan.planning.rewrites`)."""
    sources: dict[str, Written] = field(default_factory=dict)
    """For a Python answer: where each step was written and how the text names it."""


def _fragment(text: str, position: int, width: int = 40) -> str:
    """``text`` around ``position``, with ``⟨here⟩`` marking the spot."""
    start, end = max(0, position - width), min(len(text), position + width)
    before = ("…" if start else "") + text[start:position]
    after = text[position:end] + ("…" if end < len(text) else "")
    return f"{before}⟨here⟩{after}"


def _json_hint(text: str) -> str:
    if re.search(r"'[^']*'\s*:", text):
        return 'use double quotes for keys and strings, e.g. {"location": "Tokyo"}'
    if re.search(r"\b(None|True|False)\b", text):
        return "write null, true and false (JSON), not None, True and False"
    if re.search(r",\s*[}\]]", text):
        return "remove the comma before the closing bracket"
    return 'write one JSON object, e.g. {"location": "Tokyo", "data": "{{stepId.field}}"}'


def _unwrap(payload: Any) -> Any:
    """The plan inside the wrappers models put around it (``{"name", "arguments"}``, ``{"plan"}``)."""
    for _ in range(3):
        if not isinstance(payload, dict) or "steps" in payload:
            return payload
        inner = next(
            (
                payload[key]
                for key in ("arguments", "parameters", "plan", "args")
                if isinstance(payload.get(key), dict | str)
            ),
            None,
        )
        if inner is None:
            return payload
        if isinstance(inner, str):
            try:
                inner = loads_lenient(inner)
            except ValueError:
                return payload
        payload = inner
    return payload


def _without_fillers(
    parameters: dict[str, Any], tool: Any, catalog: ToolCatalog | None
) -> dict[str, Any]:
    if catalog is None or not isinstance(tool, str) or tool not in catalog:
        return parameters
    return drop_fillers(parameters, catalog.info(tool).parameters)


def read_plan(
    payload: Any, catalog: ToolCatalog | None = None, *, rewrites: PlannerRewrites = "format"
) -> PlanReading:
    """Turn the model's answer into canonical plan JSON, with every problem as an issue.

    ``catalog`` lets the optional arguments the model filled with ``null``, ``""`` or ``"null"``
    be dropped (the tool's default applies). With ``rewrites="none"`` the answer is read as
    written: strict JSON, no wrapper taken off, no null left out (the validator judges it);
    otherwise what the format rules change is in :attr:`PlanReading.changes`."""
    lenient = rewrites != "none"
    changes: list[Change] = []
    if isinstance(payload, BaseModel):
        payload = payload.model_dump()
    if isinstance(payload, str):
        try:
            payload, change = read_json(payload) if lenient else (_loads(payload), None)
        except json.JSONDecodeError as error:
            where = _fragment(error.doc, error.pos)
            return PlanReading(
                None,
                [
                    ValidationIssue(
                        "json",
                        f"the answer is not a JSON plan ({error.msg} at char {error.pos}: "
                        f"{where}); answer with one JSON object "
                        '{"reasoning": ..., "steps": [...], "outputSteps": [...]}',
                    )
                ],
            )
        changes += [change] if change is not None else []
    if lenient:
        unwrapped = _unwrap(payload)
        if unwrapped is not payload:
            wrapper = "{" + ", ".join(map(repr, payload)) + "}"
            changes.append(Change("unwrap", None, f"the plan inside {wrapper}", "the plan"))
        payload = unwrapped
    if not isinstance(payload, dict) or not isinstance(payload.get("steps"), list):
        found = (
            ", ".join(map(repr, payload)) if isinstance(payload, dict) else type(payload).__name__
        )
        return PlanReading(
            None,
            [
                ValidationIssue(
                    "shape",
                    f"the answer must be an object with a 'steps' list (found {found or 'nothing'})",
                )
            ],
        )
    reading = PlanReading({}, changes=changes)
    steps = []
    for index, raw in enumerate(payload["steps"]):
        if not isinstance(raw, dict):
            reading.issues.append(
                ValidationIssue("shape", f"steps[{index}] must be an object, got {raw!r:.60}")
            )
            continue
        step, parsed = _read_step(raw, index, catalog, reading, lenient=lenient)
        if lenient:
            reading.changes += _format_changes(raw, parsed, step)
        steps.append(step)
    data: dict[str, Any] = {"steps": steps}
    if payload.get("reasoning"):
        data["reasoning"] = str(payload["reasoning"])
    if payload.get("outputSteps"):
        outputs = payload["outputSteps"]
        if isinstance(outputs, str) and lenient:
            reading.changes.append(
                Change("shapes", None, f"outputSteps {shown(outputs)}", shown([outputs]))
            )
            outputs = [outputs]
        data["outputSteps"] = outputs
    reading.data = data
    return reading


def _format_changes(raw: dict[str, Any], parsed: Any, step: dict[str, Any]) -> list[Change]:
    """The ``nulls`` and ``shapes`` changes from a step as written (``raw``, its ``parameters``
    ``parsed`` when given as a JSON string) to the step as read."""
    if not isinstance(raw.get("id"), str):
        return []
    written = dict(raw, parameters=parsed)
    written.setdefault("dependsOn", [])  # left out is none: no change
    nulls = dict(written, parameters=step["parameters"])
    if nulls.get("dependsOn") is None:
        nulls["dependsOn"] = []
    for optional in ("forEach", "when", "maxItems"):
        if optional in nulls and nulls[optional] is None:
            del nulls[optional]
    return [
        *step_changes("nulls", {"steps": [written]}, {"steps": [nulls]}),
        *step_changes("shapes", {"steps": [nulls]}, {"steps": [step]}),
    ]


def _read_step(
    raw: dict[str, Any],
    index: int,
    catalog: ToolCatalog | None,
    reading: PlanReading,
    *,
    lenient: bool,
) -> tuple[dict[str, Any], Any]:
    """One step of the answer, read (its parameters parsed when given as a JSON string, the
    generic schema's form); with ``lenient``, the format rules applied. Also the parameters as
    parsed, before any rule."""
    step = dict(raw)
    step_id = step.get("id")
    label = f"step {step_id!r}" if step_id is not None else f"steps[{index}]"

    def unreadable(code: str, message: str) -> dict[str, Any]:
        """Report the step's parameters as unread (their argument checks then say nothing
        more); the step goes on with none."""
        where = str(step_id) if step_id is not None else None
        reading.issues.append(ValidationIssue(code, f"{label}: {message}", where))
        reading.unreadable.append(str(step_id))
        return {}

    parameters = step.get("parameters")
    if parameters is None and lenient:
        parameters = {}
    if isinstance(parameters, str):
        text = parameters
        try:
            if not text.strip():
                parameters = {}
            elif lenient:
                parameters, change = read_json(text)
                if change is not None and isinstance(step_id, str):
                    reading.changes.append(
                        Change(change.rule, step_id, f"parameters: {change.before}", change.after)
                    )
            else:
                parameters = _loads(text)
        except json.JSONDecodeError as error:
            parameters = unreadable(
                "json",
                f"parameters is not valid JSON ({error.msg} at char {error.pos}: "
                f"{_fragment(error.doc, error.pos)}); {_json_hint(text)}",
            )
    if not isinstance(parameters, dict) and (parameters is not None or "parameters" in step):
        parameters = unreadable(
            "arguments",
            f"parameters must be a JSON object of arguments, got {json.dumps(parameters)[:60]}",
        )
    if parameters is None:
        return step, None  # strict reading, no parameters written: the validator judges it
    parsed = raw.get("parameters") if raw.get("parameters") is None else parameters
    step["parameters"] = (
        _without_fillers(parameters, step.get("tool"), catalog) if lenient else parameters
    )
    if not lenient:
        return step, parsed
    if step.get("dependsOn") is None:
        step["dependsOn"] = []
    elif isinstance(step["dependsOn"], str):
        step["dependsOn"] = [step["dependsOn"]]
    for optional in ("forEach", "when", "maxItems"):
        if optional in step and step[optional] is None:
            del step[optional]  # the schema asks for every field: null means none
    if step.get("confidence") is not None:
        try:
            step["confidence"] = min(1.0, max(0.0, float(step["confidence"])))
        except (TypeError, ValueError):
            step.pop("confidence")
    return step, parsed


def to_plan_data(
    payload: Any, catalog: ToolCatalog | None = None
) -> tuple[dict[str, Any] | None, list[ValidationIssue]]:
    """Plan JSON when the answer reads without a single issue, else ``None`` and the issues."""
    reading = read_plan(payload, catalog)
    return (None if reading.issues else reading.data), reading.issues
