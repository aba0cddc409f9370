"""Every rule that changes the model's plan after it is written, in one ordered pipeline.

What the model wrote is the user's plan. The rules listed here change its form, never its
meaning: the plan is read out of a markdown fence or prose, a wrapper around it is taken off,
``null`` (or a filler) for an optional argument is left out so that the tool's default applies, a
lone ``dependsOn`` id is read as a list.

**By default they run** (``TOOLPLAN_PLANNER_REWRITES=format``); ``none`` runs none of them: the
plan is validated exactly as the model wrote it. Every change is recorded as ``{rule, step,
before, after}`` (:class:`Change`), stored in the plan's planning record (``meta.changes``),
returned by ``toolplan plan --json``, the API and the agent graph, and printed by ``toolplan
plan`` and ``run`` one line each.

A rule that changes what a plan does (drops, merges, batches, moves or rewrites a step, a tool or
a value) has no place here unless it wins on data it was not written for, in the default
(Python) plan format (issue 53). The *heuristic* rules that were here (``item_names``,
``own_conditions``, ``unstated``, ``duplicates``, ``batches``, ``fixes``, ``unasked``) had shown
gains only on the entries they were tuned on, in the JSON format, and were removed (docs/planning.md
says more); ``all``, which turned them on, now means ``format`` and warns
(:class:`~toolplan.errors.SettingRemoved`).

The rules, in the order they run (:data:`RULES`):

========================  ========================================================================
rule                      what it does
========================  ========================================================================
``json_text``             the JSON read from a fence, tool-call tags or prose, and whole-value
                          templates written without quotes quoted (:mod:`.parsing`)
``unwrap``                the plan taken out of ``{"name", "arguments"}`` or ``{"plan": ...}``
                          (:mod:`.parsing`)
``nulls``                 ``null``, ``""`` or ``"null"`` for an optional argument left out
                          (:mod:`.fillers`); ``null`` for ``forEach``, ``when``, ``maxItems``,
                          ``dependsOn`` left out
``shapes``                a ``dependsOn`` id as a one-item list, ``outputSteps`` as a list, a
                          ``confidence`` outside 0..1 clamped
``tool_names``            in a Python plan, a call of ``list_blogs`` read as the one tool spelled
                          alike but for case and ``_`` (``listBlogs``) (:mod:`.python_format`)
``loop_lists``            in a Python plan, ``for p in listBlogs()`` over the one list the tool
                          declares its object output to hold (``{{listBlogs.blogs}}``; a dict's
                          keys mean nothing here)
========================  ========================================================================

They all run while the answer is read (:func:`toolplan.planning.parsing.read_plan`, the Python
reader). The refusals that stay on whatever the setting (the validator, the grounding check on
structural evidence, a ``when`` on a number) change nothing: they send the plan back to the
model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolplan.config.settings import PlannerRewrites

__all__ = [
    "RULES",
    "Change",
    "PlannerRewrites",
    "Rule",
    "rule_runs",
    "shown",
    "step_changes",
]

_SHOWN = 80


@dataclass(frozen=True)
class Rule:
    """One rule of the pipeline."""

    name: str
    what: str
    """What it does, in a few words."""


RULES: tuple[Rule, ...] = (
    Rule("json_text", "the JSON read from a fence, tags or prose; bare templates quoted"),
    Rule("unwrap", "the plan taken out of a wrapper object"),
    Rule("nulls", "null or a filler for an optional value left out"),
    Rule("shapes", "a lone id as a list, a confidence clamped to 0..1"),
    Rule("tool_names", "a Python call's tool name in another case or with underscores"),
    Rule("loop_lists", "a Python loop over an object holding one list: over that list"),
)
"""Every rule, in the order it runs."""

_BY_NAME = {rule.name: rule for rule in RULES}


def rule_runs(name: str, mode: PlannerRewrites) -> bool:
    """Whether rule ``name`` runs under ``mode``: under ``format`` (the default) every rule
    does, under ``none`` none."""
    if name not in _BY_NAME:
        raise KeyError(f"no rewrite rule {name!r}")
    return mode != "none"


@dataclass(frozen=True)
class Change:
    """One change a rule made to the model's plan."""

    rule: str
    step: str | None
    """The step changed, as the model named it; ``None`` for the answer as a whole."""
    before: str
    after: str

    def to_json(self) -> dict[str, Any]:
        """``{"rule", "step", "before", "after"}``."""
        return {"rule": self.rule, "step": self.step, "before": self.before, "after": self.after}

    def line(self) -> str:
        """One line for the terminal: ``rewrite nulls: step 'w' argument units null →
        dropped``."""
        where = f"step {self.step!r} " if self.step is not None else ""
        return f"rewrite {self.rule}: {where}{self.before} → {self.after}"


def shown(value: Any) -> str:
    """``value`` as short JSON text."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _steps_by_id(data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    steps: dict[str, dict[str, Any]] = {}
    for step in data.get("steps") or []:
        if isinstance(step, dict) and isinstance(step.get("id"), str):
            steps.setdefault(step["id"], step)  # a repeated id: the first (the validator says)
    return steps


def _call(step: Mapping[str, Any]) -> str:
    parameters = step.get("parameters")
    arguments = (
        ", ".join(f"{k}={shown(v)}" for k, v in parameters.items())
        if isinstance(parameters, dict)
        else ""
    )
    return f"{step.get('tool')}({arguments})"


def step_changes(
    rule: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> list[Change]:
    """What ``rule`` changed from ``before`` to ``after`` (plan JSON), step by step: a step
    dropped, each argument and field changed, and the ``outputSteps``."""
    old, new = _steps_by_id(before), _steps_by_id(after)
    changes: list[Change] = []
    for step_id, step in old.items():
        if step_id not in new:
            changes.append(Change(rule, step_id, _call(step), "dropped"))
            continue
        changes += _field_changes(rule, step_id, step, new[step_id])
    if before.get("outputSteps") != after.get("outputSteps"):
        changes.append(
            Change(
                rule,
                None,
                f"outputSteps {shown(before.get('outputSteps'))}",
                shown(after.get("outputSteps")),
            )
        )
    return changes


def _field_changes(
    rule: str, step_id: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[Change]:
    changes: list[Change] = []
    for key in dict.fromkeys([*before, *after]):
        if key == "parameters" and isinstance(before.get(key), dict):
            changes += _argument_changes(rule, step_id, before[key], after.get(key))
        elif (key in before, before.get(key)) != (key in after, after.get(key)):
            was = shown(before[key]) if key in before else "none"
            now = shown(after[key]) if key in after else "dropped"
            changes.append(Change(rule, step_id, f"{key} {was}", now))
    return changes


def _argument_changes(rule: str, step_id: str, before: dict[str, Any], after: Any) -> list[Change]:
    after = after if isinstance(after, dict) else {}
    changes: list[Change] = []
    for name in dict.fromkeys([*before, *after]):
        if before.get(name, ...) == after.get(name, ...):
            continue
        was = shown(before[name]) if name in before else "none"
        now = shown(after[name]) if name in after else "dropped"
        changes.append(Change(rule, step_id, f"argument {name} {was}", now))
    return changes
