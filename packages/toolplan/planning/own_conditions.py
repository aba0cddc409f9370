"""A ``when`` that reads the step's own output, as small models write it.

Asked "Is memory usage below 60%?", Qwen2.5-Coder-1.5B planned the comparison and gave that very
step the condition on its result:

    {"id": "check", "tool": "check_threshold", ..., "when": "{{check.exceeded}}"}

A condition is evaluated before its step runs, so it cannot read that step's output: the
validator reports a cycle (``check -> check``), and in three queries the model answered each
repair with the same plan. The condition can only be the model describing what the step checks,
so it is dropped and the step runs; a condition on another step is left as it is. What was
dropped is returned, to be recorded with the plan.
"""

from __future__ import annotations

from typing import Any

from toolplan.plans.templates import find_templates

__all__ = ["drop_own_conditions"]


def drop_own_conditions(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` (plan JSON as read from the model) without the ``when`` of each step that names
    only the step itself, and the ids of those steps."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data, []
    dropped: list[str] = []
    out = []
    for step in steps:
        if isinstance(step, dict) and _reads_itself(step):
            step = dict(step, when=None)
            dropped.append(str(step["id"]))
        out.append(step)
    return (dict(data, steps=out) if dropped else data), dropped


def _reads_itself(step: dict[str, Any]) -> bool:
    when = step.get("when")
    if when is None or not isinstance(step.get("id"), str):
        return False
    named = {t.step for t in find_templates(when) if not t.is_loop}
    return named == {step["id"]}
