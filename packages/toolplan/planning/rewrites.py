"""Every rule that changes the model's plan after it is written, in one ordered pipeline.

What the model wrote is the user's plan. A rule that changes it is listed here, with a *kind*:

- ``format``: no change of meaning. The plan is read out of a markdown fence or prose, a wrapper
  around it is taken off, ``null`` (or a filler) for an optional argument is left out so that the
  tool's default applies, a lone ``dependsOn`` id is read as a list.
- ``heuristic``: anything that drops, merges, batches, moves or rewrites a step, a tool or a
  value. Each was added for a measured gain on a benchmark; each can also change a plan that was
  right (two rolls of a die merged into one, two texts batched into one group message).

**By default only the ``format`` rules run** (``TOOLPLAN_PLANNER_REWRITES=format``);
``all`` runs the heuristic ones too, ``none`` runs none: the plan is validated exactly as the
model wrote it. Every change is recorded as ``{rule, step, before, after}`` (:class:`Change`),
stored in the plan's planning record (``meta.changes``), returned by ``toolplan plan --json``,
the API and the agent graph, and printed by ``toolplan plan`` and ``run`` one line each.

The rules, in the order they run (:data:`RULES`):

========================  ===========  ========================================================
rule                      kind         what it does
========================  ===========  ========================================================
``json_text``             format       the JSON read from a fence, tool-call tags or prose, and
                                       whole-value templates written without quotes quoted
                                       (:mod:`.parsing`)
``unwrap``                format       the plan taken out of ``{"name", "arguments"}`` or
                                       ``{"plan": ...}`` (:mod:`.parsing`)
``nulls``                 format       ``null``, ``""`` or ``"null"`` for an optional argument
                                       left out (:mod:`.fillers`); ``null`` for ``forEach``,
                                       ``when``, ``maxItems``, ``dependsOn`` left out
``shapes``                format       a ``dependsOn`` id as a one-item list, ``outputSteps`` as
                                       a list, a ``confidence`` outside 0..1 clamped
``tool_names``            format       in a Python plan, a call of ``list_blogs`` read as the one
                                       tool spelled alike but for case and ``_`` (``listBlogs``)
                                       (:mod:`.python_format`)
``loop_lists``            format       in a Python plan, ``for p in listBlogs()`` over the one
                                       list the tool declares its object output to hold
                                       (``{{listBlogs.blogs}}``; a dict's keys mean nothing here)
``item_names``            heuristic    a map's item named after a step read as ``$item``; a
                                       ``forEach`` added or moved (:mod:`.item_names`)
``own_conditions``        heuristic    a ``when`` on the step's own output dropped
                                       (:mod:`.own_conditions`)
``unstated``              heuristic    optional values the request's *words* never state
                                       dropped (:mod:`.unstated`; English-leaning word matching)
``duplicates``            heuristic    identical steps merged (:mod:`.duplicates`)
``batches``               heuristic    one-item calls of a list-taking tool batched into one
                                       (:mod:`.batches`)
``fixes``                 heuristic    the validator's one-fix problems fixed instead of asking
                                       the model again (:mod:`.fixes`)
``unasked``               heuristic    steps the request's *words* never name dropped, or the
                                       model asked to remove them
                                       (:mod:`toolplan.planning.unasked`; word matching)
========================  ===========  ========================================================

The first six run while the answer is read (:func:`toolplan.planning.parsing.read_plan`), the
next five on the plan as read (:func:`rewrite_answer`), the last two once the validator has
looked at it (:mod:`toolplan.planning.graph`). The refusals that stay on whatever the setting
(the validator, the grounding check on structural evidence, a ``when`` on a number) change
nothing: they send the plan back to the model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolplan.config.settings import PlannerRewrites
from toolplan.planning.batches import batch_items
from toolplan.planning.duplicates import merge_duplicates
from toolplan.planning.item_names import read_item_names
from toolplan.planning.own_conditions import drop_own_conditions
from toolplan.planning.unstated import drop_unstated
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "RULES",
    "Change",
    "PlannerRewrites",
    "Rewritten",
    "Rule",
    "RuleKind",
    "rewrite_answer",
    "rule_runs",
    "shown",
    "step_changes",
]

RuleKind = Literal["format", "heuristic"]
"""``format``: no change of meaning. ``heuristic``: drops, merges, batches, moves or rewrites a
step, a tool or a value."""

_SHOWN = 80


@dataclass(frozen=True)
class Rule:
    """One rule of the pipeline."""

    name: str
    kind: RuleKind
    what: str
    """What it does, in a few words."""


RULES: tuple[Rule, ...] = (
    Rule("json_text", "format", "the JSON read from a fence, tags or prose; bare templates quoted"),
    Rule("unwrap", "format", "the plan taken out of a wrapper object"),
    Rule("nulls", "format", "null or a filler for an optional value left out"),
    Rule("shapes", "format", "a lone id as a list, a confidence clamped to 0..1"),
    Rule("tool_names", "format", "a Python call's tool name in another case or with underscores"),
    Rule("loop_lists", "format", "a Python loop over an object holding one list: over that list"),
    Rule("item_names", "heuristic", "a map's item named as $item; a forEach added or moved"),
    Rule("own_conditions", "heuristic", "a when on the step's own output dropped"),
    Rule("unstated", "heuristic", "optional values the request's words never state dropped"),
    Rule("duplicates", "heuristic", "identical steps merged"),
    Rule("batches", "heuristic", "one-item calls of a list-taking tool batched into one"),
    Rule("fixes", "heuristic", "the validator's one-fix problems fixed"),
    Rule("unasked", "heuristic", "steps the request's words never name dropped"),
)
"""Every rule, in the order it runs."""

_BY_NAME = {rule.name: rule for rule in RULES}


def rule_runs(name: str, mode: PlannerRewrites) -> bool:
    """Whether rule ``name`` runs under ``mode`` (``format``, ``all`` or ``none``)."""
    kind = _BY_NAME[name].kind
    return mode == "all" or (mode == "format" and kind == "format")


@dataclass(frozen=True)
class Change:
    """One change a rule made to the model's plan."""

    rule: str
    step: str | None
    """The step changed, as the model named it; ``None`` for the answer as a whole."""
    before: str
    after: str

    @property
    def kind(self) -> RuleKind:
        """The rule's kind."""
        return _BY_NAME[self.rule].kind

    def to_json(self) -> dict[str, Any]:
        """``{"rule", "step", "before", "after"}``."""
        return {"rule": self.rule, "step": self.step, "before": self.before, "after": self.after}

    def line(self) -> str:
        """One line for the terminal: ``rewrite unstated: step 'w' argument units "imperial"
        → dropped``."""
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
    *,
    joined: Mapping[str, str] | None = None,
    how: str = "merged into",
) -> list[Change]:
    """What ``rule`` changed from ``before`` to ``after`` (plan JSON), step by step: a step gone
    (``how`` the step ``joined`` names, or dropped), each argument and field changed, and the
    ``outputSteps``."""
    joined = joined or {}
    old, new = _steps_by_id(before), _steps_by_id(after)
    changes: list[Change] = []
    for step_id, step in old.items():
        if step_id not in new:
            kept = joined.get(step_id)
            changes.append(
                Change(rule, step_id, _call(step), f"{how} {kept!r}" if kept else "dropped")
            )
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


@dataclass
class Rewritten:
    """The plan after the rules that run on the plan as read, and what they changed."""

    data: dict[str, Any]
    changes: list[Change] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    """``{dropped id: kept id}`` (``duplicates``)."""
    batched: dict[str, str] = field(default_factory=dict)
    """``{dropped id: kept id}`` (``batches``)."""
    dropped_conditions: list[str] = field(default_factory=list)
    """Steps whose ``when`` read their own output (``own_conditions``)."""
    unstated: dict[str, dict[str, str]] = field(default_factory=dict)
    """``{step id: {argument: value}}`` (``unstated``)."""


def rewrite_answer(
    data: dict[str, Any],
    *,
    catalog: ToolCatalog,
    request: str,
    mode: PlannerRewrites,
    read_only: Callable[[str], bool],
    gated: Callable[[str], bool],
) -> Rewritten:
    """``data`` (plan JSON as read from the model) after the heuristic rules that run on it, in
    the pipeline's order, when ``mode`` lets them run. ``request`` is everything the planner was
    told (the query, a replan's context); ``read_only(tool)`` and ``gated(tool)`` say whether a
    tool has no side effect and whether its calls wait for approval."""
    out = Rewritten(data)
    if mode != "all":
        return out

    def step(rule: str, apply: Callable[[dict[str, Any]], dict[str, Any]], **how: Any) -> None:
        before = out.data
        out.data = apply(before)
        if out.data is not before:
            out.changes.extend(step_changes(rule, before, out.data, **how))

    step("item_names", functools.partial(read_item_names, catalog=catalog))

    def own(d: dict[str, Any]) -> dict[str, Any]:
        fixed, out.dropped_conditions = drop_own_conditions(d)
        return fixed

    step("own_conditions", own)

    def unstated(d: dict[str, Any]) -> dict[str, Any]:
        fixed, out.unstated = drop_unstated(d, catalog, request)
        return fixed

    step("unstated", unstated)

    # repeats first (a repeat of one item's call is that call, not one more item), then
    # batches, then the repeats a batch made (the same list written both ways)
    def duplicates(d: dict[str, Any]) -> dict[str, Any]:
        fixed, merged = merge_duplicates(d, read_only=read_only)
        out.merged.update(merged)
        return fixed

    step("duplicates", duplicates, joined=out.merged)

    def batches(d: dict[str, Any]) -> dict[str, Any]:
        fixed, batched = batch_items(d, catalog, gated=gated)
        out.batched.update(batched)
        return fixed

    step("batches", batches, joined=out.batched, how="batched into")
    step("duplicates", duplicates, joined=out.merged)
    return out
