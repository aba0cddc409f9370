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
stays three steps, and so does ``list_posts`` before and after ``create_post``.

Without a ``read-only`` tag, such a repeat is dropped only when the request asks for the call
once: every other step it waits for calls the same tool (a sibling) without waiting for the
first, the tool's calls do not wait for approval, the request has no word of repetition
("again", "twice", "another"...), and each value that sets the call apart from its siblings is
stated in the request at most once. A model's "total" or "comparison" step that calls the
speed tool for the car again after the car, the bicycle and the train is dropped; "pay Bob 10
and Alice 10, then pay Bob another 10" keeps its second payment, and so does "pay Bob 10, Alice
10 and Bob 10".

Steps that share an id are left alone: the validator reports the repeated id, with its fix
hint.

A plan that really means to call a tool twice with the same
arguments (send the same message twice) is rare, and a planner cannot tell it from the mistake;
the merge is reported with the plan (``mergedSteps`` in the planning record) so it is never
silent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolplan.plans.templates import references, rename_sources

__all__ = ["merge_duplicates"]

_IGNORED = frozenset({"id", "description", "confidence"})


def merge_duplicates(
    data: dict[str, Any],
    *,
    read_only: Callable[[str], bool] = lambda tool: False,
    gated: Callable[[str], bool] = lambda tool: False,
    request: str | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` (plan JSON as read from the model) with identical steps merged, and the merges
    as ``{dropped id: kept id}``. ``read_only(tool)`` says whether a tool has no side effect (its
    ``read-only`` tag), ``gated(tool)`` whether its calls wait for approval; ``request`` is
    what the planner was told (``None``: a repeat after siblings is never dropped). Steps
    without a string id and tool, or sharing an id, are left alone (the validator reports
    them)."""
    merged: dict[str, str] = {}
    steps = list(data.get("steps") or [])
    asks = _Request(request, read_only, gated)
    while (merge := _next_merge(steps, asks)) is not None:
        dropped, kept = merge
        merged[dropped["id"]] = kept
        steps = [_renamed(s, (dropped["id"], kept)) for s in steps if s is not dropped]
    if not merged:
        return data, {}
    merged = _followed(merged)
    out = dict(data, steps=steps)
    outputs = data.get("outputSteps")
    if isinstance(outputs, list):
        out["outputSteps"] = list(dict.fromkeys(merged.get(o, o) for o in outputs))
    return out, merged


@dataclass(frozen=True)
class _Request:
    """What decides whether a repeat after other steps changes nothing: the tools' tags, and
    the request's words."""

    text: str | None
    read_only: Callable[[str], bool]
    gated: Callable[[str], bool]

    def asks_once(self, later: dict[str, Any], siblings: list[dict[str, Any]]) -> bool:
        """Whether the request asks once for the call ``later`` repeats, ``siblings`` being
        the other calls of its tool it waits for (see the module's docstring)."""
        if self.text is None or self.gated(later["tool"]) or _REPEATED.search(self.text):
            return False
        theirs = {_leaf_key(v) for s in siblings for v in _leaves(s.get("parameters"))}
        own = [v for v in _leaves(later.get("parameters")) if _leaf_key(v) not in theirs]
        return bool(own) and all(_stated(self.text, value) <= 1 for value in own)


_REPEATED = re.compile(
    r"\b(?:again|twice|thrice|another|repeat\w*|once more|second time|(?:two|three) times)\b",
    re.IGNORECASE,
)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _leaf_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _stated(text: str, value: Any) -> int:
    """How many times ``text`` states ``value``: a string (case aside) or a number, as words."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int | float):
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        pattern = rf"(?<![\d.]){re.escape(shown)}(?!\d|\.\d)"  # 500 in "500m" too
    elif isinstance(value, str) and value.strip():
        pattern = rf"(?<!\w){re.escape(value.strip())}(?!\w)"
    else:
        return 0
    return len(re.findall(pattern, text, re.IGNORECASE))


def _next_merge(steps: list[Any], asks: _Request) -> tuple[dict[str, Any], str] | None:
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
        if _idle_repeat(by_id, step, first, asks):
            return step, first["id"]
    return None


def _idle_repeat(
    by_id: dict[str, dict[str, Any]],
    later: dict[str, Any],
    first: dict[str, Any],
    asks: _Request,
) -> bool:
    """Whether ``later`` repeats ``first`` after it, for no one and with nothing changed in
    between: it waits for ``first``, nothing uses it, and every other step it waits for (and
    ``first`` does not) calls a read-only tool, or is a sibling of ``first`` when the request
    asks for the call once."""
    before = _ancestors(by_id, later["id"])
    if first["id"] not in before:
        return False
    if any(later["id"] in _names(s) for s in by_id.values() if s is not later):
        return False
    between = [by_id.get(b) for b in before - {first["id"]} - _ancestors(by_id, first["id"])]
    if all(b is not None and asks.read_only(b["tool"]) for b in between):
        return True
    siblings = [
        b
        for b in between
        if b is not None
        and b["tool"] == first["tool"]
        and first["id"] not in _ancestors(by_id, b["id"])
    ]
    return len(siblings) == len(between) and asks.asks_once(later, siblings)


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
        out["dependsOn"] = (
            list(dict.fromkeys(names.get(d, d) if isinstance(d, str) else d for d in deps))
            if isinstance(deps, list)
            else deps
        )
    return out
