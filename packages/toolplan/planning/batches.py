"""Calls of one tool that each pass a one-item list, batched into one call with the whole list.

A tool that takes a list (``indexes``, ``floors``, ``products``) is asked for several things in
one call. A small model still writes one call per item: "the S&P 500 and the Dow Jones over the
past 5 days" became ``get_data(indexes=["S&P 500"], days=5)`` and
``get_data(indexes=["Dow Jones"], days=5)``, and a building's 2nd, 3rd and 4th floors three
calls with ``floors=[2]``, ``[3]``, ``[4]``. Run as written, the tool is called once per item
where its author meant one call; on BFCL's tuning entries (issue 28) these were misses in every
run, while BFCL's own answers split a list this way in 2 of 2,351 entries (``python -m
bench.grounding``, ``batchedWrongly``).

Steps are batched when all of these hold:

* they call the same tool, and differ only in one argument whose schema is a list (``"type":
  "array"``, or a branch of it), to which each passes a list of one literal item (no
  template), the items not all the same (plain repeats are :mod:`.duplicates`' to merge);
* they pass no other list: lists that go together (``x=[1]``, ``y=[2]``) would no longer
  match in length;
* everything else is the same: the other arguments, ``dependsOn``, ``when``, fallback,
  approval; none of them has a ``forEach``;
* the calls do not wait for a person's approval (the tool's ``approval`` tag, an MCP tool's
  ``destructiveHint``, the step's ``"approval": true``): each call is approved as the plan
  wrote it, and one email to two people is not two emails;
* no other step uses their output (a template naming one of them expects one item's result,
  not the list's); waiting for them (``dependsOn``) is fine, and then waits for the batch;
* the list fits the argument's ``maxItems``.

The first step of a batch is kept, with the items in plan order; the others are dropped and
every ``dependsOn`` and ``outputSteps`` entry naming them names the kept one. The planning
record says so (``batchedSteps``: ``{dropped id: kept id}``), so it is never silent.

This is the ``batches`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`), a
*heuristic* one: it runs only with ``TOOLPLAN_PLANNER_REWRITES=all`` (or
``Toolplan(rewrites="all")``), and each change it makes is recorded as ``{rule, step, before,
after}`` and printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from toolplan.plan_format.json_schema import inline_refs, is_list
from toolplan.plan_format.templates import contains_template, references
from toolplan.planning.duplicates import renamed_ids
from toolplan.tools.catalog import ToolCatalog

__all__ = ["batch_items"]

_IGNORED = frozenset({"id", "description", "confidence"})


def batch_items(
    data: dict[str, Any],
    catalog: ToolCatalog,
    *,
    gated: Callable[[str], bool] = lambda tool: False,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` (plan JSON as read from the model) with one-item calls of a list-taking tool
    batched (see the module's rule), and the batches as ``{dropped id: kept id}``.
    ``gated(tool)`` says whether every call of a tool waits for approval."""
    steps = list(data.get("steps") or [])
    ids = [s.get("id") for s in steps if isinstance(s, dict)]
    used = _used_by_templates(steps)
    groups: dict[str, list[dict[str, Any]]] = {}
    for step in steps:
        if not _candidate(step, ids, used) or gated(step["tool"]):
            continue
        lists = [name for name, value in step["parameters"].items() if isinstance(value, list)]
        batchable = _list_arguments(step, catalog)
        if len(lists) == 1 and batchable == lists:
            groups.setdefault(_key(step, lists[0]), []).append(step)
    batched: dict[str, str] = {}
    items: dict[str, tuple[str, list[Any]]] = {}  # kept id -> (argument, items)
    for key, members in groups.items():
        argument = json.loads(key)["argument"]
        values = _unique(m["parameters"][argument][0] for m in members)
        if len(values) < 2 or not _fits(catalog, members[0], argument, len(values)):
            continue
        kept = members[0]
        items[kept["id"]] = (argument, values)
        batched.update((m["id"], kept["id"]) for m in members[1:])
    if not batched:
        return data, {}
    out_steps = []
    for step in steps:
        step_id = step.get("id") if isinstance(step, dict) else None
        if isinstance(step_id, str) and step_id in batched:
            continue
        if isinstance(step_id, str) and step_id in items:
            argument, values = items[step_id]
            step = dict(step, parameters={**step["parameters"], argument: values})
        out_steps.append(_waits_for_kept(step, batched))
    out = dict(data, steps=out_steps)
    outputs = data.get("outputSteps")
    if isinstance(outputs, list):
        out["outputSteps"] = renamed_ids(outputs, batched)
    return out, batched


def _candidate(step: Any, ids: list[Any], used: set[str]) -> bool:
    """A step that may be batched: a string id no other step shares or reads, a tool, literal
    parameters, no ``forEach``, and no approval of its own."""
    return (
        isinstance(step, dict)
        and isinstance(step.get("id"), str)
        and ids.count(step["id"]) == 1
        and step["id"] not in used
        and isinstance(step.get("tool"), str)
        and isinstance(step.get("parameters"), dict)
        and step.get("forEach") is None
        and step.get("approval") is not True  # each call waits for a person, as written
    )


def _used_by_templates(steps: list[Any]) -> set[str]:
    """The steps some step's templates name (``dependsOn`` aside)."""
    found: set[str] = set()
    for step in steps:
        if isinstance(step, dict):
            found |= references({k: v for k, v in step.items() if k != "dependsOn"})
    return found


def _properties(catalog: ToolCatalog, tool: str) -> Mapping[str, Any]:
    if tool not in catalog:
        return {}
    properties = inline_refs(dict(catalog.info(tool).parameters or {})).get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _list_arguments(step: dict[str, Any], catalog: ToolCatalog) -> list[str]:
    """The step's list-typed arguments to which it passes one literal item."""
    properties = _properties(catalog, step["tool"])
    return [
        name
        for name, value in step["parameters"].items()
        if isinstance(value, list)
        and len(value) == 1
        and not isinstance(value[0], (dict, list))
        and not contains_template(value)
        and is_list(properties.get(name))
    ]


def _fits(catalog: ToolCatalog, step: dict[str, Any], argument: str, count: int) -> bool:
    limit = _properties(catalog, step["tool"])[argument].get("maxItems")
    return not isinstance(limit, int) or count <= limit


def _key(step: dict[str, Any], argument: str) -> str:
    """What batched steps share: everything but their id, free text and the one argument."""
    body = {k: v for k, v in step.items() if k not in _IGNORED and k != "parameters"}
    others = {k: v for k, v in step["parameters"].items() if k != argument}
    deps = step.get("dependsOn")
    if isinstance(deps, list):
        body["dependsOn"] = sorted(map(str, deps))
    return json.dumps(
        {"argument": argument, "step": body, "others": others}, sort_keys=True, default=str
    )


def _unique(values: Iterable[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for value in values:
        key = json.dumps(value, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def _waits_for_kept(step: Any, batched: Mapping[str, str]) -> Any:
    """``step`` with its ``dependsOn`` naming the kept step of a batch (anything but an id is
    left for the validator to report)."""
    if not isinstance(step, dict) or not isinstance(step.get("dependsOn"), list):
        return step
    return dict(step, dependsOn=renamed_ids(step["dependsOn"], batched))
