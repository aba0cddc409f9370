"""The plan model and its loaders.

Two input forms load into the same :class:`Plan`:

- the canonical form: ``{"reasoning", "steps": [{"id", "tool", "parameters", "dependsOn", ...}],
  "outputSteps"}``;
- the seed-002 form: ``{"tools": [{"name", "parameters", "dependsOn"}], "executionOrder": [...]}``,
  where the step id is the tool name.

Shape problems (wrong types, missing fields) become :class:`~toolplan.errors.PlanInvalid` with one
issue per problem. Semantic checks (unknown tools, cycles, schemas) live in :mod:`toolplan.validation`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from toolplan.errors import InvalidInput, PlanInvalid, ValidationIssue
from toolplan.plan_format.limits import InputLimits, check_json, decode_utf8, parse_json_text

if TYPE_CHECKING:
    from toolplan.plan_format.python_plan import Written
    from toolplan.plan_format.python_tools import PythonTools

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_MAX_STEPS",
    "PYTHON_PLAN_SUFFIX",
    "Fallback",
    "Not",
    "Plan",
    "Step",
    "load_plan",
    "parse_plan",
]

DEFAULT_MAX_ITEMS = 100
"""The longest ``forEach`` list a step may run over when it sets no ``maxItems``
(``TOOLPLAN_MAX_ITEMS`` changes it for a run)."""
DEFAULT_MAX_STEPS = 50
"""The most steps a plan may have (``TOOLPLAN_MAX_STEPS`` changes it)."""

PYTHON_PLAN_SUFFIX = ".py"
"""A plan file whose name ends so holds Python statements (read, never run); any other, JSON."""

_MODEL_CONFIG = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)


def _as_id_list(value: Any) -> Any:
    """``dependsOn`` may be a list of ids, a single id, or null."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return value


class Fallback(BaseModel):
    """A tool called once, with its own parameters, after the step has failed."""

    model_config = _MODEL_CONFIG

    tool: str = Field(min_length=1, description="Name of the fallback tool.")
    parameters: Any = Field(default_factory=dict, description="Its arguments (templates allowed).")


class Not(BaseModel):
    """A negated condition: ``{"not": "{{step.path}}"}`` is true when the template is falsy."""

    model_config = _MODEL_CONFIG

    template: str = Field(alias="not", description="A whole-value template, e.g. {{cpu.high}}.")


class Step(BaseModel):
    """One tool call in a plan, or one per item of a list with ``forEach``."""

    model_config = _MODEL_CONFIG

    id: str = Field(min_length=1, description="Unique step id, used by templates: {{id.path}}.")
    tool: str = Field(min_length=1, description="Name of the tool to call.")
    parameters: Any = Field(description="Arguments; any JSON, templates allowed in strings.")
    depends_on: list[str] = Field(
        default_factory=list,
        alias="dependsOn",
        description="Extra ordering edges; edges from templates are inferred automatically.",
    )
    timeout: float | None = Field(default=None, gt=0, description="Seconds per attempt.")
    max_attempts: int | None = Field(
        default=None, ge=1, le=20, alias="maxAttempts", description="Attempts before failing."
    )
    fallback: Fallback | None = Field(default=None, description="Tool to call if the step fails.")
    confidence: float | None = Field(
        default=None, ge=0, le=1, description="The planner's confidence in this step (0-1)."
    )
    for_each: str | list[Any] | None = Field(
        default=None,
        alias="forEach",
        description="Call the tool once per item of this list: a whole-value template that "
        "resolves to a JSON list ({{posts.blogs}}) or a literal list. Parameters may use "
        "{{$item}}, {{$item.path}} and {{$index}}; the output is the list of per-item outputs.",
    )
    max_items: int | None = Field(
        default=None,
        ge=1,
        alias="maxItems",
        description="The longest forEach list accepted (default TOOLPLAN_MAX_ITEMS, 100).",
    )
    when: str | bool | Not | None = Field(
        default=None,
        description="Run the step only if this is truthy: a whole-value template, a boolean, "
        'or {"not": template}. False, null, 0, "", [] and {} are falsy; a falsy condition '
        "skips the step and its dependents.",
    )

    approval: bool | None = Field(
        default=None,
        description="Wait for a person's approval, with the resolved arguments shown, before "
        "calling the tool. A tool tagged 'approval' always waits; false does not lift that.",
    )

    _normalize_depends_on = field_validator("depends_on", mode="before")(_as_id_list)

    @property
    def condition(self) -> str | None:
        """The template ``when`` evaluates (negated or not); ``None`` for none or a literal."""
        if isinstance(self.when, Not):
            return self.when.template
        return self.when if isinstance(self.when, str) else None


class Plan(BaseModel):
    """A DAG of tool calls. Immutable; build a new one to change it."""

    model_config = _MODEL_CONFIG

    reasoning: str | None = Field(default=None, description="Why the planner chose these steps.")
    steps: list[Step] = Field(description="The tool calls, in any order.")
    _python_sources: dict[str, Written] = PrivateAttr(default_factory=dict)
    """For a plan read from Python: where each step was written and how the text names it
    (never stored; problems found later are said in Python with it)."""
    output_steps: list[str] | None = Field(
        default=None,
        alias="outputSteps",
        description="Steps whose outputs are the plan's result (all steps when absent).",
    )

    @property
    def python_sources(self) -> dict[str, Written]:
        """For a plan read from Python: where each step was written and how the text names it
        (:class:`~toolplan.plan_format.python_plan.Written`); empty otherwise."""
        return self._python_sources

    @property
    def step_ids(self) -> list[str]:
        """Step ids in plan order."""
        return [step.id for step in self.steps]

    def step(self, step_id: str) -> Step:
        """The step with this id (``KeyError`` if absent)."""
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    @property
    def result_steps(self) -> list[str]:
        """``outputSteps`` when given, otherwise every step."""
        return list(self.output_steps) if self.output_steps is not None else self.step_ids

    @property
    def min_confidence(self) -> float | None:
        """The lowest step confidence, or ``None`` when no step states one."""
        values = [s.confidence for s in self.steps if s.confidence is not None]
        return min(values) if values else None

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON form (camelCase, no nulls for unset optional fields)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def without(self, gone: Collection[str]) -> Plan:
        """This plan without the steps ``gone``, which no step left may take anything from: a
        step that only waited for one (``dependsOn``) waits no more, and ``outputSteps`` leaves
        them out (absent when none is left: every step is then an output)."""
        data = self.to_json()
        data["steps"] = [
            {**step, "dependsOn": [d for d in step.get("dependsOn") or [] if d not in gone]}
            for step in data["steps"]
            if step["id"] not in gone
        ]
        outputs = [o for o in data.pop("outputSteps", None) or [] if o not in gone]
        if outputs:
            data["outputSteps"] = outputs
        return parse_plan(data)


def _from_seed_002(data: dict[str, Any]) -> dict[str, Any]:
    tools = data.get("tools")
    if not isinstance(tools, list):
        raise PlanInvalid([ValidationIssue("shape", "'tools' must be a list of tool calls")])
    steps: list[Any] = []
    for item in tools:
        if not isinstance(item, dict):
            steps.append(item)  # reported by the model validation below
            continue
        converted = {key: value for key, value in item.items() if key != "name"}
        converted["id"] = item.get("name")
        converted["tool"] = item.get("name")
        converted.setdefault("parameters", {})
        converted.pop("outputMapping", None)  # seed 002 carried it but never used it
        steps.append(converted)
    plan: dict[str, Any] = {"steps": steps}
    for key in ("reasoning", "outputSteps"):
        if key in data:
            plan[key] = data[key]
    return plan


def _issues_from(error: ValidationError) -> list[ValidationIssue]:
    issues = []
    for detail in error.errors():
        location = ".".join(str(part) for part in detail["loc"])
        message = detail["msg"]
        if detail["type"] == "extra_forbidden":
            message = "unknown field (check its spelling)"
        issues.append(ValidationIssue("shape", f"{location}: {message}"))
    return issues


MAX_NESTING = 64
"""Deepest nesting of objects/lists accepted in a plan (hostile input guard)."""


def _too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(current, dict):
            stack.extend((item, depth + 1) for item in current.values())
        elif isinstance(current, list):
            stack.extend((item, depth + 1) for item in current)
    return False


def parse_plan(data: Any) -> Plan:
    """Build a :class:`Plan` from parsed JSON in either supported form.

    Raises :class:`~toolplan.errors.PlanInvalid` listing every shape problem.
    """
    if isinstance(data, Plan):
        return data
    if _too_deep(data):
        raise PlanInvalid(
            [ValidationIssue("shape", f"the plan is nested more than {MAX_NESTING} levels deep")]
        )
    if not isinstance(data, dict):
        raise PlanInvalid(
            [ValidationIssue("shape", f"a plan must be a JSON object, got {type(data).__name__}")]
        )
    if "steps" not in data and "tools" in data:
        data = _from_seed_002(data)
    elif "steps" not in data:
        raise PlanInvalid(
            [
                ValidationIssue(
                    "shape",
                    "a plan needs a 'steps' list (or the seed-002 form with 'tools'); "
                    f"found keys: {', '.join(map(repr, data)) or 'none'}",
                )
            ]
        )
    try:
        return Plan.model_validate(data)
    except ValidationError as error:
        raise PlanInvalid(_issues_from(error)) from None


def load_plan(
    source: str | Path | bytes | dict[str, Any] | Plan,
    *,
    limits: InputLimits | None = None,
    signatures: Mapping[str, Sequence[str]] | None = None,
    tools: PythonTools | None = None,
    max_steps: int | None = None,
) -> Plan:
    """Load a plan from a file path, JSON text or bytes, a dict or a :class:`Plan`.

    A ``str`` that starts with ``{`` is parsed as JSON; any other ``str`` is a file path. A file
    whose name ends in ``.py`` holds the plan as Python statements, read and never run
    (:mod:`toolplan.plan_format.python_plan`: ``tools`` are the tools it may call, by name or
    alias, or ``signatures``, each tool's parameter names in order; reading stops past
    ``max_steps``). This is the edge every entry point goes through: the input limits
    (``limits``, default ``InputLimits()``) are checked here, before anything is validated or
    stored.
    """
    limits = limits or InputLimits()
    if isinstance(source, Plan):
        check_json(source.to_json(), limits)
        return source
    if isinstance(source, dict):
        check_json(source, limits)
        return parse_plan(source)
    if isinstance(source, bytes):
        data = parse_json_text(decode_utf8(source, "the plan"), "the plan", limits)
        return parse_plan(data)
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return parse_plan(parse_json_text(source, "the plan text", limits))
    path = Path(source)
    origin = repr(str(path))
    try:
        with path.open("rb") as handle:
            raw = handle.read(limits.max_plan_bytes + 1)
    except FileNotFoundError:
        raise InvalidInput(f"plan file {str(path)!r} does not exist") from None
    except OSError as error:
        raise InvalidInput(f"cannot read plan file {str(path)!r}: {error.strerror}") from None
    if len(raw) > limits.max_plan_bytes:
        raise PlanInvalid(
            [
                ValidationIssue(
                    "limit",
                    f"plan file {origin} is larger than {limits.max_plan_bytes:,} bytes "
                    "(TOOLPLAN_MAX_PLAN_BYTES)",
                )
            ]
        )
    text = decode_utf8(raw, f"plan file {origin}")
    if path.suffix == PYTHON_PLAN_SUFFIX:
        from toolplan.plan_format.python_plan import read_python_plan

        reader = read_python_plan(
            text, signatures=signatures, tools=tools, limits=limits, max_steps=max_steps
        )
        data = reader.steps_document()
        check_json(data, limits)
        plan = parse_plan(data)
        plan._python_sources = dict(reader.sources)
        return plan
    return parse_plan(parse_json_text(text, origin, limits))
