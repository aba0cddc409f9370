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
names the earlier one instead. A later copy that waits for more is dropped too when nothing can
have changed in between and nothing needs it: it waits (directly or not) for its twin, nothing
uses it, and every other step it waits for calls a read-only tool (BFCL's ``comparison`` step
weighed sucrose a second time, after weighing glucose and sucrose). Create, delete, create again
stays three steps, and so does ``list_posts`` before and after ``create_post``. Steps that share
an id are left alone: the validator reports the repeated id, with its fix hint.

A plan that really means to call a tool twice with the same
arguments (send the same message twice) is rare, and a planner cannot tell it from the mistake;
the merge is reported with the plan (``mergedSteps`` in the planning record) so it is never
silent.

This is the ``duplicates`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`), a
*heuristic* one: it runs only with ``TOOLPLAN_PLANNER_REWRITES=all`` (or
``Toolplan(rewrites="all")``), and each change it makes is recorded as ``{rule, step, before,
after}`` and printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from toolplan.plan_format.templates import references, rename_sources

__all__ = ["merge_duplicates", "renamed_ids"]

_IGNORED = frozenset({"id", "description", "confidence"})


def merge_duplicates(
    data: dict[str, Any], *, read_only: Callable[[str], bool] = lambda tool: False
) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` (plan JSON as read from the model) with identical steps merged, and the merges
    as ``{dropped id: kept id}``. ``read_only(tool)`` says whether a tool has no side effect (its
    ``read-only`` tag). Steps without a string id and tool, or sharing an id, are left alone
    (the validator reports them)."""
    merged: dict[str, str] = {}
    steps = list(data.get("steps") or [])
    while (merge := _next_merge(steps, read_only)) is not None:
        dropped, kept = merge
        merged[dropped["id"]] = kept
        steps = [_renamed(s, (dropped["id"], kept)) for s in steps if s is not dropped]
    if not merged:
        return data, {}
    merged = _followed(merged)
    out = dict(data, steps=steps)
    outputs = data.get("outputSteps")
    if isinstance(outputs, list):
        out["outputSteps"] = renamed_ids(outputs, merged)
    return out, merged


def _next_merge(
    steps: list[Any], read_only: Callable[[str], bool]
) -> tuple[dict[str, Any], str] | None:
    """The first identical pair in plan order that can be merged: the step to drop and the id
    of the one to keep. One at a time, so that each decision sees the previous merges applied."""
    by_id: dict[str, dict[str, Any]] = {}
    repeated: set[str] = set()
    for step in steps:
        if _mergeable(step):
            if step["id"] in by_id:
                repeated.add(step["id"])
            by_id[step["id"]] = step
    seen: dict[str, dict[str, Any]] = {}
    for step in steps:
        if not _mergeable(step) or step["id"] in repeated:
            continue
        first = seen.setdefault(_key(step), step)
        if first is step:
            continue
        if _waits_no_longer(step, first) and step["id"] not in _ancestors(by_id, first["id"]):
            return step, first["id"]  # (the first one waiting for its copy would be a cycle)
        if _idle_repeat(by_id, step, first, read_only):
            return step, first["id"]
    return None


def _idle_repeat(
    by_id: dict[str, dict[str, Any]],
    later: dict[str, Any],
    first: dict[str, Any],
    read_only: Callable[[str], bool],
) -> bool:
    """Whether ``later`` repeats ``first`` after it, for no one and with nothing changed in
    between: it waits for ``first``, nothing uses it, and every other step it waits for (and
    ``first`` does not) calls a read-only tool."""
    before = _ancestors(by_id, later["id"])
    if first["id"] not in before:
        return False
    if any(later["id"] in _names(s) for s in by_id.values() if s is not later):
        return False
    between = before - {first["id"]} - _ancestors(by_id, first["id"])
    return all(b in by_id and read_only(by_id[b]["tool"]) for b in between)


def _names(step: dict[str, Any]) -> set[str]:
    """The steps ``step`` names in its templates and ``dependsOn``."""
    return _depends_on(step) | references({k: v for k, v in step.items() if k != "dependsOn"})


def _ancestors(by_id: dict[str, dict[str, Any]], step_id: str) -> set[str]:
    """Every step ``step_id`` waits for, directly or through others."""
    found: set[str] = set()
    todo = list(_names(by_id[step_id])) if step_id in by_id else []
    while todo:
        current = todo.pop()
        if current in found:
            continue
        found.add(current)
        if current in by_id:
            todo.extend(_names(by_id[current]))
    return found


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


def _renamed(step: Any, merge: tuple[str, str]) -> Any:
    """``step`` with its templates and ``dependsOn`` naming the kept step."""
    if not isinstance(step, dict):
        return step
    names = dict([merge])
    out = rename_sources({k: v for k, v in step.items() if k != "dependsOn"}, names.get)
    deps = step.get("dependsOn")
    if "dependsOn" in step:
        out["dependsOn"] = renamed_ids(deps, names) if isinstance(deps, list) else deps
    return out


def renamed_ids(names: list[Any], renames: Mapping[str, str]) -> list[Any]:
    """``names`` (a ``dependsOn`` or ``outputSteps`` list) with each id ``renames`` names
    under its new id, and each id once; anything else, even unhashable junk, is left for the
    validator to report."""
    out: list[Any] = []
    for name in names:
        name = renames.get(name, name) if isinstance(name, str) else name
        if not (isinstance(name, str) and name in out):
            out.append(name)
    return out
