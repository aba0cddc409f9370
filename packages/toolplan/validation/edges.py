"""A plan's dependency edges as the planner's checks walk them: what a step depends on (its
``dependsOn``, then the steps its templates name), what it runs after, and what runs after it,
directly or not.

The validator (:mod:`toolplan.validation.dag`) builds the DAG from :func:`runs_after`, with every
problem reported. The checks that name a step in a repair hint (the grounding check, the
validator's hint for a missing output key) walk :func:`descendants` to keep the hint from naming
a step downstream of the one it would feed (a cycle); they run on plans the validator may still
refuse, so an edge to a step that does not exist is ignored.
"""

from __future__ import annotations

from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import Template, find_templates, references
from toolplan.validation.control_flow import control_references

__all__ = ["dependencies", "descendants", "runs_after", "step_references"]


def dependencies(step: Step) -> list[str]:
    """The steps ``step`` depends on: its ``dependsOn``, then the ones its templates name."""
    deps = list(dict.fromkeys(step.depends_on))
    deps += sorted(references(step.parameters) - set(deps))
    return deps


def step_references(step: Step) -> list[Template]:
    """The templates in ``step``'s parameters (and its fallback's) that name a step (not
    ``{{$item}}``)."""
    fallback = step.fallback.parameters if step.fallback is not None else None
    return [t for t in find_templates([step.parameters, fallback]) if not t.is_loop]


def runs_after(step: Step) -> list[str]:
    """Every step ``step`` waits for, as the DAG has it: its ``dependsOn``, the steps its
    ``forEach`` and ``when`` read, and those its templates name (:func:`step_references`)."""
    named = [t.step for t in step_references(step)]
    return list(dict.fromkeys([*step.depends_on, *control_references(step), *named]))


def descendants(plan: Plan, step_id: str) -> set[str]:
    """The steps that run after ``step_id`` (:func:`runs_after`), directly or not."""
    dependents: dict[str, set[str]] = {}
    for step in plan.steps:
        for dep in runs_after(step):
            dependents.setdefault(dep, set()).add(step.id)
    found: set[str] = set()
    todo = [step_id]
    while todo:
        for child in dependents.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
