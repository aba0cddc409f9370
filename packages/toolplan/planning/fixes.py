"""Repairs the validator is certain of, applied before the model is asked again.

Some problems name exactly one fix: ``compare_data`` takes the weather object, and the model
passed ``{{paris.temp}}`` (the fix is ``{{paris}}``); it wrote ``{{$item.titel}}`` where the item
has ``title``. A small model, shown such a message in a repair round, often answers with the same
plan again (Qwen2.5-Coder-1.5B repeated its plan three times over "did you mean
'{{weather_paris}}'?"), so the planner applies these fixes itself and validates once more. Only
the issues that carry a fix (:attr:`~toolplan.errors.ValidationIssue.fix`) are touched, only in
the step they name, and the fixed plan must pass every check like any other; what was fixed is
recorded with the plan (``autoFixed`` in its planning record).

This is the ``fixes`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`), a
*heuristic* one: it runs only with ``TOOLPLAN_PLANNER_REWRITES=all`` (or
``Toolplan(rewrites="all")``), and each change it makes is recorded as ``{rule, step, before,
after}`` and printed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolplan.errors import ValidationIssue
from toolplan.plan_format.templates import map_strings

__all__ = ["apply_fixes"]


def apply_fixes(
    data: dict[str, Any], issues: Iterable[ValidationIssue]
) -> tuple[dict[str, Any], list[str]] | None:
    """``data`` with every certain fix applied, and a line per fix (``"step: old -> new"``);
    ``None`` when no issue carries one."""
    fixes: dict[str, dict[str, str]] = {}
    for issue in issues:
        if issue.fix is not None and issue.step is not None:
            fixes.setdefault(issue.step, {})[issue.fix[0]] = issue.fix[1]
    if not fixes:
        return None
    done: list[str] = []
    steps = []
    for step in data.get("steps") or []:
        replace = fixes.get(str(step.get("id"))) if isinstance(step, dict) else None
        if replace:
            step = _replaced(step, replace)
            done += [f"{step['id']}: {old} -> {new}" for old, new in replace.items()]
        steps.append(step)
    return dict(data, steps=steps), done


def _replaced(value: Any, replace: dict[str, str]) -> Any:
    def change(text: str) -> str:
        for old, new in replace.items():
            text = text.replace(old, new)
        return text

    return map_strings(value, change)
