"""An id passed by name: a planner check for a plan that refers to something it creates by the
name it gave it, where the tool wants the id the creating step returns.

``createAuthor(name="Leo")`` then ``getAuthor(authorId="leo")`` is valid by every schema, and
fails at run time (no author has the id ``leo``). Small models write it often, and a replan seldom
fixes it. The check is narrow, so that it never refuses a plan that could work:

* the argument's name says it is an id (``id``, ``authorId``, ``blog_id``, ``userID``), and its
  value is a literal string, not a template;
* another step of the same plan passes that same string (case and surrounding space aside) to an
  argument that is *not* an id (a ``name``, a ``title``), and not also to one that is (an id the
  caller chose);
* that step's tool declares a return shape with an ``_id`` or ``id`` field, the template to use;
* the template would not close a cycle (the creating step does not depend on this one: a
  comment's ``author`` is not the id of the author its blog needs), and the creating step makes
  the kind of thing the argument names: ``authorId`` wants a step whose tool names authors
  (``createAuthor``, ``getAuthor``), never a comment's ``_id`` (:func:`id_kind`).

:mod:`toolplan.planning.grounding` runs it with its more general checks of made-up values.

It runs on the planner's plans only (:mod:`toolplan.planning.graph`): a person's plan is theirs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from toolplan.errors import ValidationIssue
from toolplan.plan_format.names import is_id_argument
from toolplan.plan_format.plan import Plan, Step
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation.edges import descendants

__all__ = ["IdByName", "find_ids_by_name", "id_kind"]


def id_kind(name: str) -> str:
    """What kind of thing an id argument names, folded: ``author`` for ``authorId`` or
    ``author_id``, ``""`` for ``id`` (any kind)."""
    stem = name[:-2] if name.lower().endswith("id") else name
    return re.sub(r"[^a-z0-9]", "", stem.casefold())


def _makes(kind: str, tool: str) -> bool:
    """Whether ``tool`` (by its name) makes or reads things of ``kind``."""
    return not kind or kind in re.sub(r"[^a-z0-9]", "", tool.casefold())


def _id_field(catalog: ToolCatalog, tool: str) -> str | None:
    """The id field of what ``tool`` returns (``_id`` first), if it declares one."""
    if tool not in catalog:
        return None
    returns = catalog.info(tool).returns or {}
    properties = returns.get("properties") if isinstance(returns, dict) else None
    if not isinstance(properties, dict):
        return None
    return next((field for field in ("_id", "id") if field in properties), None)


def _key(value: Any) -> str | None:
    """A literal string argument, folded for comparison; ``None`` for anything else (a
    template, an empty string, a number)."""
    if not isinstance(value, str) or not value.strip() or "{{" in value:
        return None
    return value.strip().casefold()


def _names(step: Step) -> dict[str, str]:
    """The step's literal non-id string arguments: folded value → argument name. A value the
    step also passes as an id (``create_user(id="bob", name="Bob")``: the caller chose the id)
    is left out."""
    names: dict[str, str] = {}
    ids: set[str] = set()
    if isinstance(step.parameters, dict):
        for name, value in step.parameters.items():
            key = _key(value)
            if key is None:
                continue
            if is_id_argument(name):
                ids.add(key)
            else:
                names.setdefault(key, name)
    return {key: name for key, name in names.items() if key not in ids}


@dataclass(frozen=True)
class IdByName:
    """One id argument given a name: the argument and the issue that says which template to use."""

    step: str
    argument: str
    issue: ValidationIssue


def find_ids_by_name(plan: Plan, catalog: ToolCatalog) -> list[IdByName]:
    """Every id argument that is given the name of something this plan creates, with its fix."""
    creators = [
        (step, field, _names(step))
        for step in plan.steps
        if (field := _id_field(catalog, step.tool)) is not None
    ]
    found = []
    for step in plan.steps:
        if not isinstance(step.parameters, dict):
            continue
        after = descendants(plan, step.id)  # a creator among them would close a cycle
        for name, value in step.parameters.items():
            key = _key(value)
            if key is None or not is_id_argument(name):
                continue
            for creator, field, names in creators:
                if creator.id == step.id or key not in names:
                    continue
                if creator.id in after or not _makes(id_kind(name), creator.tool):
                    continue  # a cycle, or another kind of thing: not the id to suggest
                template = "{{" + f"{creator.id}.{field}" + "}}"
                issue = ValidationIssue(
                    "id-by-name",
                    f"step {step.id!r}: argument {name!r} of tool {step.tool!r} is "
                    f"{value!r}, the {names[key]} that step {creator.id!r} "
                    f"({creator.tool}) is given, not an id; pass the id it returns: "
                    f'"{template}"',
                    step.id,
                )
                found.append(IdByName(step.id, name, issue))
                break
    return found
