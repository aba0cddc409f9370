"""Identical steps a model wrote twice, merged into one before validation.

Small models repeat a step: asked for the weather in two cities, they write three calls, two of
them ``get_weather(city="Berlin")``. Run as written, the tool is called twice for one answer, and
a side effect (a payment, a comment) happens twice. On BFCL (issue 28), identical duplicates were
the largest single cause of wrong plans.

Two steps are identical when everything but their id (and the free-text ``description`` and
``confidence``) is the same: tool, arguments, ``forEach``, ``when``, fallback, approval. Their
``dependsOn`` may differ only in a way that loses no order: the later step may also wait for the
earlier one (models repeat a call "after" the first), but for nothing else the earlier one does
not wait for. References are compared after renaming: a step that only differs from another by
naming two identical steps is itself a duplicate (merged to a fixpoint, in plan order).

The later step is dropped; every template, ``dependsOn`` entry and ``outputSteps`` entry naming it
names the earlier one instead. When it is the later copy that waits for more (``list_posts()``
first, and again "after" ``create_post``: on BFCL, ``C12H22O11`` weighed twice, the second copy
after glucose), the earlier one is dropped instead, so every order the plan asked for still holds:
the steps that used the earlier copy now wait for the later one. That is only done when it makes
no cycle (no step the later copy waits for uses the earlier one). A later copy that waits for the
earlier one and that nothing uses is dropped too, unless something else it waits for builds on the
earlier copy (create, delete, create again is three steps): BFCL's ``comparison`` step weighed
sucrose a second time, after glucose and sucrose. A plan that really means to call a tool twice with the same
arguments (send the same message twice) is rare, and a planner cannot tell it from the mistake;
the merge is reported with the plan (``mergedSteps`` in the planning record) so it is never
silent.
"""

from __future__ import annotations

import json
from typing import Any

from toolplan.plans.templates import references, rename_sources

__all__ = ["merge_duplicates"]

_IGNORED = frozenset({"id", "description", "confidence"})


def merge_duplicates(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` (plan JSON as read from the model) with identical steps merged, and the merges
    as ``{dropped id: kept id}``. Steps without a string id and tool are left alone (the
    validator reports them)."""
    merged: dict[str, str] = {}
    steps = list(data.get("steps") or [])
    while (merge := _next_merge(steps)) is not None:
        dropped, kept = merge
        merged[dropped] = kept
        steps = [_renamed(s, merge) for s in steps if not (_mergeable(s) and s["id"] == dropped)]
    if not merged:
        return data, {}
    merged = _followed(merged)
    out = dict(data, steps=steps)
    outputs = data.get("outputSteps")
    if isinstance(outputs, list):
        out["outputSteps"] = list(dict.fromkeys(merged.get(o, o) for o in outputs))
    return out, merged


def _next_merge(steps: list[Any]) -> tuple[str, str] | None:
    """The first ``(dropped id, kept id)`` pair of identical steps in plan order, if any. One at
    a time, so that each decision sees the plan with the previous merges applied."""
    seen: dict[str, dict[str, Any]] = {}
    for step in steps:
        if not _mergeable(step):
            continue
        key = _key(step)
        first = seen.setdefault(key, step)
        if first is step or first["id"] == step["id"]:
            continue  # a repeated id is the validator's to report, with its fix hint
        if _waits_no_longer(step, first):
            return step["id"], first["id"]
        if _waits_no_longer(first, step) and not _uses(steps, step, first["id"]):
            return first["id"], step["id"]
        if _idle_repeat(steps, step, first):
            return step["id"], first["id"]
    return None


def _idle_repeat(steps: list[Any], later: dict[str, Any], first: dict[str, Any]) -> bool:
    """Whether ``later`` repeats ``first`` after it for no one: nothing uses ``later``, and the
    other steps it waits for do not build on ``first`` (the "comparison" step that weighs sucrose
    again after glucose and sucrose). Create, delete, create again is kept: the delete builds on
    the first create."""
    if not _uses(steps, later, first["id"]):
        return False
    if any(_names(s, later["id"]) for s in steps if _mergeable(s) and s is not later):
        return False
    by_id = {s["id"]: s for s in steps if _mergeable(s)}
    others = _depends_on(later) - {first["id"]}
    return not any(other in by_id and _uses(steps, by_id[other], first["id"]) for other in others)


def _names(step: dict[str, Any], target: str) -> bool:
    """Whether ``step`` names ``target`` in a template or its ``dependsOn``."""
    return target in _depends_on(step) or target in references(
        {k: v for k, v in step.items() if k != "dependsOn"}
    )


def _followed(merges: dict[str, str]) -> dict[str, str]:
    """``merges`` with a chain ``a -> b -> c`` naming the survivor ``c`` directly."""
    out = {}
    for dropped, kept in merges.items():
        while kept in merges:
            kept = merges[kept]
        out[dropped] = kept
    return out


def _mergeable(step: Any) -> bool:
    return (
        isinstance(step, dict)
        and isinstance(step.get("id"), str)
        and isinstance(step.get("tool"), str)
    )


def _key(step: dict[str, Any]) -> str:
    body = {k: v for k, v in step.items() if k not in _IGNORED and k != "dependsOn"}
    return json.dumps(body, sort_keys=True, default=str)


def _depends_on(step: dict[str, Any]) -> set[str]:
    deps = step.get("dependsOn")
    return {d for d in deps if isinstance(d, str)} if isinstance(deps, list) else set()


def _waits_no_longer(later: dict[str, Any], first: dict[str, Any]) -> bool:
    """Whether dropping ``later`` for ``first`` keeps every order the plan asked for: ``later``
    waits for nothing ``first`` does not wait for (besides ``first`` itself, the usual
    "the same call again, after the first" of a model that repeats itself)."""
    return _depends_on(later) - {first["id"]} <= _depends_on(first)


def _uses(steps: list[Any], step: dict[str, Any], target: str) -> bool:
    """Whether ``step`` waits, directly or through other steps, for ``target``: renaming
    ``target`` to ``step`` would then make a cycle."""
    by_id = {s["id"]: s for s in steps if _mergeable(s)}
    todo, done = [step["id"]], set()
    while todo:
        current = by_id.get(todo.pop())
        if current is None or current["id"] in done:
            continue
        done.add(current["id"])
        waits = _depends_on(current) | references(
            {k: v for k, v in current.items() if k != "dependsOn"}
        )
        if target in waits:
            return True
        todo.extend(waits)
    return False


def _renamed(step: Any, merge: tuple[str, str]) -> Any:
    """``step`` with its templates and ``dependsOn`` naming the kept step."""
    if not isinstance(step, dict):
        return step
    names = dict([merge])
    out = rename_sources({k: v for k, v in step.items() if k != "dependsOn"}, names.get)
    deps = step.get("dependsOn")
    if "dependsOn" in step:
        out["dependsOn"] = (
            list(dict.fromkeys(names.get(d, d) if isinstance(d, str) else d for d in deps))
            if isinstance(deps, list)
            else deps
        )
    return out
