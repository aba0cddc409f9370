"""The current item of a ``forEach`` step, named the way small models name it.

Asked to comment on every post, a small model writes the map right and names the item wrong:

    {"id": "comment", "forEach": "{{posts.blogs}}",
     "parameters": {"blogId": "{{blog._id}}"}}        # or "{{comment._id}}"

``{{blog._id}}`` names no step and ``{{comment._id}}`` names the step itself, which would be a
cycle. In a step's own parameters, neither can mean anything but the item, so both are read as
``{{$item._id}}``. The item's declared type still checks the path (``{{$item.path}}`` against
what the list holds), so a wrong guess is still reported, with the fix, before anything runs.

A name close to one of the plan's step ids (a typo such as ``autor`` for ``author``) is left
alone: the validator's "did you mean" hint is the better repair.

The other half of the same mistake: a step whose parameters use ``{{$item...}}`` with no
``forEach`` at all. ``$item`` means nothing outside a map, so when exactly one list is on offer
from the other steps' declared outputs (a list, an object's only list-typed key, or a ``forEach``
step's list of results), that list is the step's ``forEach``. With none or several on offer, the
step is left for the validator, whose hint names the choices.

Or the ``forEach`` is on the wrong step: written on the step whose list it is
(``{"id": "posts", "tool": "listBlogs", "forEach": "{{posts.blogs}}"}``, a map over its own
output, which is a cycle), while the next step uses ``{{$item._id}}`` with no ``forEach``. When
exactly one step maps over its own output and exactly one uses ``$item`` without a map, the
``forEach`` moves to the latter, which then waits for the former.

The two together: a step with no ``forEach`` whose parameters read the step itself, as in
"query the current value of each metric": ``{"id": "metric", "tool": "query_metric",
"parameters": {"name": "{{metric.name}}"}}``. A step cannot read its own output (a cycle), so
when exactly one list on offer has items with the paths it reads, that is the item and the
list is the ``forEach``; otherwise the validator reports the cycle.

This is the ``item_names`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`), a
*heuristic* one: it runs only with ``TOOLPLAN_PLANNER_REWRITES=all`` (or
``Toolplan(rewrites="all")``), and each change it makes is recorded as ``{rule, step, before,
after}`` and printed.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any

from toolplan.plan_format.templates import (
    ITEM,
    PathSegment,
    find_templates,
    references,
    rename_sources,
)
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation.types import fits_path, list_in_output

__all__ = ["read_item_names"]


def read_item_names(data: dict[str, Any], catalog: ToolCatalog | None = None) -> dict[str, Any]:
    """``data`` (plan JSON as read from the model) with the item of each ``forEach`` step named
    ``$item`` where the parameters named it after the step itself or after no step, and, with
    ``catalog``, the one list on offer as the ``forEach`` of a step using ``$item`` without one."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data
    moved = _for_each_moved(steps)
    changed = moved is not steps
    steps = moved
    ids = {s["id"] for s in steps if isinstance(s, dict) and isinstance(s.get("id"), str)}
    out = []
    for step in steps:
        if isinstance(step, dict) and step.get("id") in ids:
            fixed = step
            if step.get("forEach") is None and catalog is not None:
                if _uses_item(step):
                    fixed = _with_for_each(step, steps, catalog)
                elif step["id"] in _sources(step):
                    mapped = _with_for_each(_own_as_item(step), steps, catalog)
                    fixed = mapped if mapped.get("forEach") is not None else step
            if fixed.get("forEach") is not None:
                fixed = _step(fixed, ids)
            changed = changed or fixed is not step
            step = fixed
        out.append(step)
    return dict(data, steps=out) if changed else data


def _for_each_moved(steps: list[Any]) -> list[Any]:
    """``steps`` with a ``forEach`` written on the step whose list it is moved to the one step
    that uses ``$item`` without a ``forEach`` (and that step waiting for it); ``steps`` itself
    when there is no such pair."""
    own = [
        s
        for s in steps
        if isinstance(s, dict)
        and isinstance(s.get("id"), str)
        and isinstance(s.get("forEach"), str)
        and references(s["forEach"]) == {s["id"]}
    ]
    takers = [
        s for s in steps if isinstance(s, dict) and s.get("forEach") is None and _uses_item(s)
    ]
    if len(own) != 1 or len(takers) != 1:
        return steps
    source, taker = own[0], takers[0]
    if not isinstance(taker.get("id"), str) or _uses_item(source):
        return steps  # the source maps over something after all: its own items
    waits = taker.get("dependsOn")
    waits = list(waits) if isinstance(waits, list) else []
    fixed_source = {k: v for k, v in source.items() if k != "forEach"}
    fixed_taker = dict(
        taker,
        forEach=source["forEach"],
        dependsOn=waits if source["id"] in waits else [*waits, source["id"]],
    )
    return [fixed_source if s is source else fixed_taker if s is taker else s for s in steps]


def _calls(step: dict[str, Any]) -> list[Any]:
    fallback = step.get("fallback")
    return [
        step.get("parameters"),
        fallback.get("parameters") if isinstance(fallback, dict) else None,
    ]


def _uses_item(step: dict[str, Any]) -> bool:
    return any(t.is_loop for t in find_templates(_calls(step)))


def _sources(step: dict[str, Any]) -> set[str]:
    """The steps the parameters (and the fallback's) read."""
    return {t.step for t in find_templates(_calls(step))}


def _own_as_item(step: dict[str, Any]) -> dict[str, Any]:
    """``step`` with its parameters' (and its fallback's) references to itself read as
    ``$item``."""
    own = step["id"]

    def fix(value: Any) -> Any:
        return rename_sources(value, lambda name: ITEM if name == own else None)

    out = dict(step, parameters=fix(step.get("parameters")))
    fallback = step.get("fallback")
    if isinstance(fallback, dict) and "parameters" in fallback:
        out["fallback"] = dict(fallback, parameters=fix(fallback["parameters"]))
    return out


def _item_paths(step: dict[str, Any]) -> list[tuple[PathSegment, ...]]:
    return [t.path for t in find_templates(_calls(step)) if t.step == ITEM]


def _with_for_each(step: dict[str, Any], steps: list[Any], catalog: ToolCatalog) -> dict[str, Any]:
    paths = _item_paths(step)
    offered = []
    for other in steps:
        if not isinstance(other, dict) or other is step or not isinstance(other.get("id"), str):
            continue
        tool = other.get("tool")
        if not isinstance(tool, str) or tool not in catalog:
            continue
        if step.get("id") in references(other):
            continue  # it reads this step: mapping over it would be a cycle
        found = list_in_output(
            other["id"], catalog.info(tool).returns, mapped=other.get("forEach") is not None
        )
        # a list whose items cannot have the paths the step reads ({{$item._id}} over numbers)
        # is not on offer
        if found is not None and all(fits_path(found[1], path) for path in paths):
            offered.append(found[0])
    return dict(step, forEach=offered[0]) if len(offered) == 1 else step


def _step(step: dict[str, Any], ids: Collection[str]) -> dict[str, Any]:
    own = step["id"]
    others = [i for i in ids if i != own]

    def is_item(name: str) -> bool:
        if name == own:
            return True
        return name not in ids and not difflib.get_close_matches(name, others, n=1, cutoff=0.6)

    def fix(value: Any) -> Any:
        return rename_sources(value, lambda name: ITEM if is_item(name) else None)

    out = dict(step)
    out["parameters"] = fix(step.get("parameters"))
    fallback = step.get("fallback")
    if isinstance(fallback, dict) and "parameters" in fallback:
        out["fallback"] = dict(fallback, parameters=fix(fallback["parameters"]))
    return step if out == step else out
