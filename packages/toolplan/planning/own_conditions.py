"""A ``when`` that reads the step's own output, as small models write it.

Asked "Is memory usage below 60%?", Qwen2.5-Coder-1.5B planned the comparison and gave that very
step the condition on its result:

    {"id": "check", "tool": "check_threshold", ..., "when": "{{check.exceeded}}"}

A condition is evaluated before its step runs, so it cannot read that step's output: the
validator reports a cycle (``check -> check``), and in three queries the model answered each
repair with the same plan. The condition can only be the model describing what the step checks,
so it is dropped and the step runs; a condition on another step is left as it is. What was
dropped is returned, to be recorded with the plan.

The same holds for ``dependsOn``: a step cannot wait for itself. The model writes that after a
repeated step id: told to give the second step its own id (``filtered_games_2``) and to point
what was meant for it at the new id, it also pointed the step's own ``dependsOn`` there (BFCL
``multiple_182``), and the next repair round reported ``dependency cycle: filtered_games_2 ->
filtered_games_2``. The step's own id is dropped from its ``dependsOn``, silently, since it
changes no order; a template that reads the step itself is left for the validator.

This is the ``own_conditions`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`),
a *heuristic* one: it runs only with ``TOOLPLAN_PLANNER_REWRITES=all`` (or
``Toolplan(rewrites="all")``), and each change it makes is recorded as ``{rule, step, before,
after}`` and printed.
"""

from __future__ import annotations

from typing import Any

from toolplan.plan_format.templates import find_templates

__all__ = ["drop_own_conditions"]


def drop_own_conditions(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` (plan JSON as read from the model) without the ``when`` of each step that names
    only the step itself, and the ids of those steps; and without any step's own id in its
    ``dependsOn``."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data, []
    dropped: list[str] = []
    out = []
    waits_fixed = False
    for step in steps:
        if isinstance(step, dict) and _reads_itself(step):
            step = dict(step, when=None)
            dropped.append(str(step["id"]))
        if isinstance(step, dict) and _waits_for_itself(step):
            step = dict(step, dependsOn=[d for d in step["dependsOn"] if d != step["id"]])
            waits_fixed = True
        out.append(step)
    return (dict(data, steps=out) if dropped or waits_fixed else data), dropped


def _waits_for_itself(step: dict[str, Any]) -> bool:
    waits = step.get("dependsOn")
    return isinstance(step.get("id"), str) and isinstance(waits, list) and step["id"] in waits


def _reads_itself(step: dict[str, Any]) -> bool:
    when = step.get("when")
    if when is None or not isinstance(step.get("id"), str):
        return False
    named = {t.step for t in find_templates(when) if not t.is_loop}
    return named == {step["id"]}
