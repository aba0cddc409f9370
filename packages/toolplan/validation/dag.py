"""Plan validation and dependency analysis: one pass, every error at once.

:func:`analyze` is the single validator used by the CLI, the planner's dependency-analysis node,
the API and the meta-tool. It infers edges from templates (plus ``dependsOn``), checks tools and
literal arguments against their JSON schemas, detects cycles, and computes the topological order,
the parallel layers and the critical path.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolplan.errors import PlanInvalid, ValidationIssue
from toolplan.plan_format.json_schema import accepted_types
from toolplan.plan_format.names import alike_name
from toolplan.plan_format.plan import DEFAULT_MAX_ITEMS, DEFAULT_MAX_STEPS, Plan, Step
from toolplan.plan_format.templates import (
    Template,
    contains_template,
    find_templates,
    malformed_templates,
    quoted_reading,
)
from toolplan.tools.catalog import RESERVED_TOOL_NAMES, ToolCatalog
from toolplan.validation.conditions import check_text_conditions
from toolplan.validation.control_flow import check_control_flow
from toolplan.validation.edges import runs_after, step_references
from toolplan.validation.ordering import OrderEdges, order_edges, program_order
from toolplan.validation.types import check_template_types

__all__ = [
    "DEFAULT_MAX_STEPS",
    "MAX_LISTED_PROBLEMS",
    "STEP_ID_PATTERN",
    "Analysis",
    "analyze",
    "check_arguments",
    "check_tools",
    "effect_order",
    "ordered_for",
]

MAX_LISTED_PROBLEMS = 25
"""The most problems a refusal lists; the rest are counted ("and N more"). A plan at the step
limit with a few problems per step stays readable, and a hostile one stays short."""
STEP_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]*$"
"""What a step id must be to be named by a template (``{{stepId.field}}``). Written without
escapes, so the planner's structured-output schema can carry it as is: grammar engines
(llama.cpp's) need the anchors and refuse unknown escapes."""
_VALID_STEP_ID = re.compile(STEP_ID_PATTERN)


@dataclass(frozen=True)
class Analysis:
    """The dependency structure of a valid plan."""

    dependencies: dict[str, list[str]]
    """step id → the steps it depends on (templates + ``dependsOn``), in plan order: a failure
    there skips the step."""
    order: list[str]
    """A topological order of every edge, order edges included (ties broken by plan order)."""
    layers: list[list[str]]
    """Kahn layers: steps in one layer do not depend on each other. For display; the engine is
    eager and never waits for a whole layer."""
    critical_path: list[str]
    """The longest chain by estimated duration: the lower bound on wall time."""
    critical_path_estimate: float
    order_edges: OrderEdges = field(default_factory=dict)
    """step id → each earlier step it runs after because of their effects, beyond its
    ``dependencies``, with the resources they share (:mod:`toolplan.validation.ordering`); only
    steps that have some. It waits for them to end, however they ended."""

    def runs_after(self) -> dict[str, list[str]]:
        """step id → the steps its order edges name (what the scheduler's ``after`` takes)."""
        return {step: list(earlier) for step, earlier in self.order_edges.items()}

    def waits_for(self) -> dict[str, list[str]]:
        """step id → every step it waits for: its dependencies, then its order edges."""
        return _union(self.dependencies, self.runs_after())

    def dependents(self) -> dict[str, list[str]]:
        """step id → the steps that wait for it (dependencies and order edges)."""
        result: dict[str, list[str]] = {step: [] for step in self.order}
        for step, deps in self.waits_for().items():
            for dep in deps:
                result[dep].append(step)
        return result

    def to_json(self) -> dict[str, Any]:
        """JSON form stored with the plan."""
        return {
            "dependencies": self.dependencies,
            "orderEdges": self.order_edges,
            "order": self.order,
            "layers": self.layers,
            "criticalPath": self.critical_path,
            "criticalPathEstimate": self.critical_path_estimate,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Analysis:
        """Inverse of :meth:`to_json` (an analysis stored before order edges has none)."""
        return cls(
            dependencies={k: list(v) for k, v in data["dependencies"].items()},
            order=list(data["order"]),
            layers=[list(layer) for layer in data["layers"]],
            critical_path=list(data["criticalPath"]),
            critical_path_estimate=float(data.get("criticalPathEstimate", 0.0)),
            order_edges={
                step: {earlier: list(on) for earlier, on in after.items()}
                for step, after in (data.get("orderEdges") or {}).items()
                if after
            },
        )


def ordered_for(analysis: Analysis, plan: Plan, catalog: ToolCatalog) -> Analysis:
    """``analysis`` (stored with ``plan``) with the order edges ``catalog`` gives today added to
    those stored: what the engine runs. Nothing stored is removed; a plan stored before order
    edges existed, or before a tool named its effect, gets them."""
    edges = {step: dict(after) for step, after in analysis.order_edges.items()}
    for step, after in effect_order(plan, catalog, analysis.dependencies).items():
        for earlier, on in after.items():
            kept = edges.setdefault(step, {}).setdefault(earlier, [])
            kept.extend(name for name in on if name not in kept)
    if edges == analysis.order_edges:
        return analysis
    updated = replace(analysis, order_edges=edges)
    order, layers = _kahn(list(analysis.order), updated.waits_for())
    return replace(updated, order=order, layers=layers)


def _union(
    first: Mapping[str, Sequence[str]], second: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    merged = {step: list(deps) for step, deps in first.items()}
    for step, deps in second.items():
        merged[step] = list(dict.fromkeys([*merged.get(step, []), *deps]))
    return merged


def effect_order(
    plan: Plan, catalog: ToolCatalog, dependencies: Mapping[str, Sequence[str]]
) -> OrderEdges:
    """The order edges of a valid ``plan`` (its steps' ``dependencies`` given). The engine
    computes them again when it runs a stored plan, with the catalog it runs against, so a plan
    stored before a tool was tagged keeps the order its effects ask."""
    steps = {step.id: step for step in plan.steps}
    order = program_order(list(steps), dependencies)
    return order_edges(order, lambda s: catalog.step_effect(steps[s]), dependencies)


def _fix_for(value: Any, schema: Mapping[str, Any]) -> str:
    """The corrected form of a literal argument, when one is obvious."""
    types = accepted_types(schema) or set()
    if isinstance(value, str) and types & {"number", "integer"}:
        try:
            number = float(value.strip().rstrip("%").strip())
        except ValueError:
            return ""
        shown = int(number) if number.is_integer() else number
        return f"; write {json.dumps(shown)} (a number, without quotes)"
    if isinstance(value, str) and types & {"object", "array"}:
        try:
            parsed = json.loads(value)
        except ValueError:
            return ""
        if isinstance(parsed, dict | list):
            return f"; write the {'object' if isinstance(parsed, dict) else 'list'} itself, not a string holding it"
    if isinstance(value, int | float | bool) and types == {"string"}:
        return f"; write {json.dumps(str(value))} (a string, in quotes)"
    return ""


def _free_id(base: str, taken: set[str]) -> str:
    """``base_2`` (or ``_3``...): the first such id not in ``taken``, which it joins."""
    number = 2
    while f"{base}_{number}" in taken:
        number += 1
    taken.add(f"{base}_{number}")
    return f"{base}_{number}"


def _usable_id(step_id: str, taken: set[str]) -> str:
    """A valid id close to ``step_id``: other characters as ``_``, ``step_`` before a digit."""
    usable = re.sub(r"[^A-Za-z0-9_-]+", "_", step_id).strip("_") or "step"
    if not _VALID_STEP_ID.fullmatch(usable):
        usable = f"step_{usable}"
    if usable in taken:
        return _free_id(usable, taken)
    taken.add(usable)
    return usable


def _close(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _close_argument(name: str, known: Iterable[str]) -> str:
    """A close argument name, when the two differ in spelling only (``locaton``, ``userName``
    for ``user_name``, ``city`` for ``city_name``); never one that says something else:
    ``number_of_days`` is not ``number_of_adults``, and the real model, told it might be, put
    the days there (NESTFUL sgd-29)."""
    candidate = alike_name(name, known)
    return f"; did you mean {candidate!r}?" if candidate else ""


def _taken_by(
    name: str,
    tool: str,
    taking: Callable[[str], Sequence[str]] | None,
    called: Collection[str] = (),
) -> str:
    """The one other tool that takes the argument ``name``: the real model gave a search the
    party size that the reservation takes, and asked only to drop it, wrote the search again
    with it (NESTFUL sgd-16). "As well": told to give it to a call of the reservation, it wrote
    that call instead of the search, reserving a restaurant named after the cuisine.

    An argument that several other tools take points to none of them: told that ``limit`` "is
    an argument of tools 'Real_Time_Product_Search_Search' or 'LocalBusinessData' or
    'LocalBusinessDataBusinessReviews'", the model added a business-reviews call to a question
    about an Instagram post (NESTFUL executable-76). Which one, if any, is a guess, and it may
    be a tool that changes something.

    When the plan calls that tool already (``called``), the argument is to move there: sgd-16's
    model, told "as well", added the reservation but left the party size in the search, and was
    then told to call the reservation "as well" again, until the repairs ran out."""
    others = [other for other in (taking(name) if taking else ()) if other != tool]
    if len(others) != 1:
        return ""
    if others[0] in called:
        return (
            f"; {name!r} is an argument of tool {others[0]!r}, which the plan calls: give it "
            "to that call, and leave it out here"
        )
    return f"; {name!r} is an argument of tool {others[0]!r}: call that tool for it as well"


def _tools_taking(catalog: ToolCatalog) -> Callable[[str], Sequence[str]]:
    """The catalog's tools that take an argument of a name, indexed on first use (only a plan
    with an unknown argument needs it)."""
    index: dict[str, list[str]] | None = None

    def taking(name: str) -> Sequence[str]:
        nonlocal index
        if index is None:
            index = {}
            for tool, arguments in catalog.signatures.items():
                for argument in arguments:
                    index.setdefault(argument, []).append(tool)
        return index.get(name, ())

    return taking


def check_arguments(
    where: str,
    tool: str,
    parameters: Any,
    schema: Mapping[str, Any],
    *,
    taking: Callable[[str], Sequence[str]] | None = None,
    called: Collection[str] = (),
) -> list[ValidationIssue]:
    """Check the literal parts of ``parameters`` against a tool's JSON schema.

    A value that is exactly one template counts as present and is type-checked at run time, once
    resolved. A template inside a longer string always gives text, so that string must be
    acceptable where it stands. Each message quotes the value and, where obvious, the fix; an
    unknown argument that one other tool takes (``taking``: the tools that take an argument of
    that name) names it, and says whether the plan calls it already (``called``: the plan's
    tools).
    """
    if schema.get("type", "object") != "object":
        return []
    if not isinstance(parameters, dict):
        return [
            ValidationIssue(
                "arguments",
                f"{where}: parameters for tool {tool!r} must be a JSON object, "
                f"got {type(parameters).__name__}",
            )
        ]
    issues: list[ValidationIssue] = []
    properties: dict[str, Any] = schema.get("properties") or {}
    required = schema.get("required") or []
    for name in required:
        if name not in parameters:
            issues.append(
                ValidationIssue(
                    "arguments",
                    f"{where}: missing required argument {name!r} for tool {tool!r} "
                    f"(it takes: {', '.join(properties) or 'none'}; required: {', '.join(required)})",
                )
            )
    open_ended = schema.get("additionalProperties") not in (None, False) or not properties
    definitions = {key: schema[key] for key in ("$defs", "definitions") if key in schema}
    for name, value in parameters.items():
        if name not in properties:
            if not open_ended:
                known = ", ".join(properties) or "none"
                issues.append(
                    ValidationIssue(
                        "arguments",
                        f"{where}: unknown argument {name!r} for tool {tool!r} "
                        f"(it takes: {known})"
                        + (
                            _close_argument(name, properties)
                            or _taken_by(name, tool, taking, called)
                        ),
                    )
                )
            continue
        if contains_template(value):
            types = accepted_types(properties[name])
            whole = isinstance(value, str) and Template.parse(value.strip()) is not None
            if isinstance(value, str) and not whole and types is not None and "string" not in types:
                alone = next(iter(find_templates(value)), None)
                fix = (
                    f'write the template alone: "{alone.text}"'
                    if alone
                    else "write one template alone"
                )
                issues.append(
                    ValidationIssue(
                        "arguments",
                        f"{where}: argument {name!r} of tool {tool!r} takes "
                        f"{' or '.join(sorted(types))}, but {json.dumps(value)} is text with a "
                        f"template inside; to pass a step's output as the value, {fix}",
                    )
                )
            continue
        from jsonschema import Draft202012Validator  # heavy: imported when first needed

        validator = Draft202012Validator({**properties[name], **definitions})
        error = next(iter(validator.iter_errors(value)), None)
        if error is not None:
            issues.append(
                ValidationIssue(
                    "arguments",
                    f"{where}: argument {name!r} of tool {tool!r} is invalid: {error.message}"
                    + _fix_for(value, properties[name]),
                )
            )
    return issues


def check_tools(plan: Plan, catalog: ToolCatalog) -> None:
    """Check that every tool a stored plan calls (fallbacks included) is still in ``catalog``.

    A stored plan passed :func:`analyze` when it was stored; before it runs, only the catalog can
    have changed. Raises :class:`~toolplan.errors.PlanInvalid` naming each missing tool.
    """
    issues = [
        ValidationIssue("unknown-tool", f"{label}: {catalog.unknown_tool_message(tool)}", step.id)
        for step in plan.steps
        for tool, label in (
            (step.tool, f"step {step.id!r}"),
            *([(step.fallback.tool, f"step {step.id!r} fallback")] if step.fallback else []),
        )
        if tool not in catalog
    ]
    if issues:
        listed = issues[:MAX_LISTED_PROBLEMS]
        raise PlanInvalid(listed, omitted=len(issues) - len(listed))


def _find_cycle(nodes: set[str], dependencies: Mapping[str, list[str]]) -> list[str]:
    """A cycle among ``nodes`` (which all lie on or behind a cycle), as [a, b, ..., a]."""
    start = min(nodes)
    path: list[str] = []
    position: dict[str, int] = {}
    current = start
    while current not in position:
        position[current] = len(path)
        path.append(current)
        current = next(dep for dep in dependencies[current] if dep in nodes)
    cycle = [*path[position[current] :], current]
    cycle.reverse()  # report in execution direction: a -> b means b waits for a
    return cycle


def _cycle_message(cycle: list[str], first: Step) -> str:
    """``dependency cycle: a -> b -> a``; a step that waits for itself (a model wrote
    ``{{best_offers.id}}`` in ``best_offers``, NESTFUL ``executable-22``) is told which of its
    own references does it, since ``s -> s`` alone does not say what to change."""
    message = "dependency cycle: " + " -> ".join(cycle)
    if len(cycle) != 2:
        return message
    own = [t.text for t in step_references(first) if t.step == first.id]
    if own:
        return (
            f"{message}: step {first.id!r} uses its own output ({', '.join(map(repr, own))}); "
            "a step can use only the outputs of other steps: reference the step that returns "
            "that value, or write the value the request gives"
        )
    if first.id in first.depends_on:
        return f"{message}: step {first.id!r} is in its own dependsOn"
    return f"{message}: step {first.id!r} uses its own output in its forEach or when"


def analyze(
    plan: Plan,
    catalog: ToolCatalog,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_items: int = DEFAULT_MAX_ITEMS,
    estimate: Callable[[Step], float] | None = None,
) -> Analysis:
    """Validate ``plan`` against ``catalog`` and compute its dependency structure.

    Raises :class:`~toolplan.errors.PlanInvalid` with every problem found.
    ``max_items`` is the longest literal ``forEach`` list of a step without ``maxItems``.
    ``estimate`` gives a step's expected duration for the critical path (default: 1 per step).
    """
    issues: list[ValidationIssue] = []

    def problem(code: str, message: str, step: str | None = None) -> None:
        issues.append(ValidationIssue(code, message, step))

    if not plan.steps:
        problem("empty", "the plan has no steps")
    if len(plan.steps) > max_steps:
        # Said alone, and first: every other check grows with the steps, and a plan over the
        # limit is refused whatever else is wrong with it (10,000 steps gave 20,000 problems).
        raise PlanInvalid(
            [
                ValidationIssue(
                    "limit",
                    f"the plan has {len(plan.steps)} steps, more than the limit of {max_steps}: "
                    "split it, or raise the limit with --max-steps (TOOLPLAN_MAX_STEPS) if "
                    "this is intended",
                )
            ]
        )

    ids: dict[str, Step] = {}
    numbers: dict[str, int] = {}
    taking = _tools_taking(catalog)
    called = {step.tool for step in plan.steps}
    taken = {step.id for step in plan.steps}  # a suggested id is free, also of other suggestions
    for number, step in enumerate(plan.steps, 1):
        if step.id in ids:
            first = numbers[step.id]
            problem(
                "duplicate",
                f"step id {step.id!r} is used more than once (steps {first} and {number}): "
                f"give step {number} its own id, e.g. {_free_id(step.id, taken)!r}, and point "
                "the templates, dependsOn and outputSteps meant for it at the new id",
                step.id,
            )
        elif not _VALID_STEP_ID.fullmatch(step.id):
            problem(
                "step-id",
                f"step id {step.id!r} is not usable in templates: use letters, digits, '_' or "
                f"'-', starting with a letter or '_', e.g. {_usable_id(step.id, taken)!r}, and "
                "rename it in the templates, dependsOn and outputSteps that name it",
                step.id,
            )
        ids.setdefault(step.id, step)
        numbers.setdefault(step.id, number)

    for step in plan.steps:
        where = f"step {step.id!r}"
        calls = [(step.tool, step.parameters, where, False)]
        if step.fallback is not None:
            calls.append((step.fallback.tool, step.fallback.parameters, f"{where} fallback", True))
        for tool, parameters, label, fallback in calls:
            if tool in RESERVED_TOOL_NAMES:
                problem(
                    "recursion",
                    f"{label} calls {tool!r}: a plan cannot call the plan executor itself",
                    step.id,
                )
            elif tool not in catalog:
                given = list(parameters) if isinstance(parameters, Mapping) else []
                problem(
                    "unknown-tool",
                    f"{label}: {catalog.unknown_tool_message(tool, given)}",
                    step.id,
                )
            elif fallback and catalog.gated(tool):
                # A fallback runs the moment the step's tool gives up, with nobody asked: a
                # gated tool there would be a way around its gate (issue 42).
                problem(
                    "gated-fallback",
                    f"{label} calls {tool!r}, which waits for a person's approval before every "
                    "call; a fallback runs at once when the step's tool fails, with nobody "
                    f"asked, so it cannot be a gated tool: call {tool!r} in a step of its own "
                    "(it will wait for approval), or choose a fallback that needs none",
                    step.id,
                )
            else:
                for issue in check_arguments(
                    label,
                    tool,
                    parameters,
                    catalog.info(tool).parameters,
                    taking=taking,
                    called=called,
                ):
                    issues.append(ValidationIssue(issue.code, issue.message, step.id))
            for text in malformed_templates(parameters):
                quoted = quoted_reading(text)
                fix = (
                    f": a key with a space is written quoted: {quoted}"
                    if quoted
                    else "; write {{stepId}} or {{stepId.key[0].field}}"
                )
                problem("template", f"{label}: malformed template {text!r}{fix}", step.id)
        for dep in step.depends_on:
            if dep not in ids:
                problem(
                    "reference",
                    f"{where}: dependsOn names unknown step {dep!r} "
                    f"(steps: {', '.join(ids)}){_close(dep, ids)}",
                    step.id,
                )
        for template in step_references(step):
            if template.step not in ids:
                problem(
                    "reference",
                    f"{where}: template {template.text!r} references unknown step "
                    f"{template.step!r} (steps: {', '.join(ids)}){_close(template.step, ids)}",
                    step.id,
                )

        issues.extend(check_control_flow(step, ids, max_items=max_items, catalog=catalog))

    for output in plan.output_steps or []:
        if output not in ids:
            problem(
                "reference",
                f"outputSteps names unknown step {output!r} "
                f"(steps: {', '.join(ids)}){_close(output, ids)}",
            )

    issues.extend(check_template_types(plan, catalog))
    issues.extend(check_text_conditions(plan, catalog))

    # Dependency graph over the steps that exist (unknown references are reported above).
    dependencies = {
        step_id: [dep for dep in runs_after(step) if dep in ids] for step_id, step in ids.items()
    }
    order, layers = _kahn(list(ids), dependencies)
    if len(order) < len(ids):
        remaining = set(ids) - set(order)
        cycle = _find_cycle(remaining, dependencies)
        problem(
            "cycle", _cycle_message(cycle, ids[cycle[0]]), cycle[0] if len(cycle) == 2 else None
        )

    if issues:
        listed = issues[:MAX_LISTED_PROBLEMS]
        raise PlanInvalid(listed, omitted=len(issues) - len(listed))

    # Order edges point forward in program order, which follows the written edges: no cycle.
    ordered = effect_order(plan, catalog, dependencies)
    waits = _union(dependencies, {step: list(after) for step, after in ordered.items()})
    order, layers = _kahn(list(ids), waits)
    weights = {s.id: (estimate(s) if estimate else 1.0) for s in plan.steps}
    critical_path, total = _critical_path(order, waits, weights)
    return Analysis(
        dependencies=dependencies,
        order=order,
        layers=layers,
        critical_path=critical_path,
        critical_path_estimate=total,
        order_edges=ordered,
    )


def _kahn(
    nodes: list[str], dependencies: Mapping[str, list[str]]
) -> tuple[list[str], list[list[str]]]:
    rank = {node: index for index, node in enumerate(nodes)}
    waiting = {node: len(dependencies[node]) for node in nodes}
    dependents: dict[str, list[str]] = {node: [] for node in nodes}
    for node in nodes:
        for dep in dependencies[node]:
            dependents[dep].append(node)
    layer = [node for node in nodes if waiting[node] == 0]
    order: list[str] = []
    layers: list[list[str]] = []
    while layer:
        layers.append(layer)
        order.extend(layer)
        following: list[str] = []
        for node in layer:
            for child in dependents[node]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    following.append(child)
        layer = sorted(following, key=rank.__getitem__)
    return order, layers


def _critical_path(
    order: list[str], dependencies: Mapping[str, list[str]], weights: Mapping[str, float]
) -> tuple[list[str], float]:
    finish: dict[str, float] = {}
    previous: dict[str, str | None] = {}
    for node in order:
        best = max(dependencies[node], key=finish.__getitem__, default=None)
        finish[node] = weights[node] + (finish[best] if best is not None else 0.0)
        previous[node] = best
    if not finish:
        return [], 0.0
    last = max(order, key=finish.__getitem__)
    total = finish[last]
    end: str | None = last
    path: list[str] = []
    while end is not None:
        path.append(end)
        end = previous[end]
    path.reverse()
    return path, total
