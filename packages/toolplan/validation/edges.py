"""A plan's dependency edges as the planner's checks walk them: what a step depends on (its
``dependsOn``, then the steps its templates name) and what depends on it, directly or not.

The validator (:mod:`toolplan.validation.dag`) builds the DAG itself, with every problem reported;
these run after it, on a valid plan, to keep a repair hint from naming a step downstream of the
one it would feed (a cycle).
"""

from __future__ import annotations

from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import references

__all__ = ["dependencies", "descendants"]


def dependencies(step: Step) -> list[str]:
    """The steps ``step`` depends on: its ``dependsOn``, then the ones its templates name."""
    deps = list(dict.fromkeys(step.depends_on))
    deps += sorted(references(step.parameters) - set(deps))
    return deps


def descendants(plan: Plan, step_id: str) -> set[str]:
    """The steps that depend on ``step_id``, directly or not."""
    dependents: dict[str, set[str]] = {}
    for step in plan.steps:
        for dep in dependencies(step):
            dependents.setdefault(dep, set()).add(step.id)
    found: set[str] = set()
    todo = [step_id]
    while todo:
        for child in dependents.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
