"""What a tool does to the world: its effect (read-only or side effects) and the resources it
touches, read from its tags. The engine orders a plan's steps by them
(:mod:`toolplan.validation.ordering`) and the result cache forgets what a write may have changed.

The tags a tool author writes (``toolplan.tagged(fn, ...)`` or a LangChain tool's ``tags``):

- ``read-only``: no side effect. Without it a tool has side effects: the safe default.
- ``resource:NAME`` (or ``tagged(fn, resource="NAME")``): what it reads or writes, as a name of
  the author's choosing; a tool may name several. A tool that names none touches
  :data:`DEFAULT_RESOURCE`, shared by every such tool, so two untagged tools are never reordered
  against each other. An MCP tool's resource is its server (``mcp:SERVER``).
- ``commutative``: its writes commute with the other commutative writes on the same resource
  (two appends to a log, two notifications): they run in parallel with each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "COMMUTATIVE_TAG",
    "DEFAULT_RESOURCE",
    "MCP_SERVER_PREFIX",
    "READ_ONLY_TAG",
    "RESOURCE_PREFIX",
    "Effect",
    "EffectKind",
    "effect_from",
]

READ_ONLY_TAG = "read-only"
"""The tag that says a tool has no side effect, so its results may be cached and reused, and it
runs in parallel with the other reads of its resource."""
RESOURCE_PREFIX = "resource:"
"""A tag ``resource:NAME`` names a resource the tool touches."""
COMMUTATIVE_TAG = "commutative"
"""The tag that says a tool's writes commute with the other commutative writes on a resource."""
DEFAULT_RESOURCE = "default"
"""The resource of every tool that names none: one, shared, so that they keep their order."""
MCP_SERVER_PREFIX = "mcp:"
"""An MCP tool carries the tag ``mcp:SERVER``; that server is its resource."""

EffectKind = Literal["read-only", "side-effect"]
"""``read-only``: a read, cached and run in parallel with the reads around it. ``side-effect``:
a write, run in the order the plan gives among the steps on its resources."""


@dataclass(frozen=True)
class Effect:
    """What calling a tool (or running a step) may do, for ordering steps and caching results."""

    read_only: bool = False
    """No side effect: it only reads its resources."""
    resources: tuple[str, ...] = (DEFAULT_RESOURCE,)
    """What it reads or writes (at least one)."""
    commutative: bool = False
    """For a write: it commutes with the other commutative writes on its resources."""

    @property
    def kind(self) -> EffectKind:
        """``read-only`` or ``side-effect``."""
        return "read-only" if self.read_only else "side-effect"

    def union(self, other: Effect) -> Effect:
        """The effect of a step that may call either tool (its tool or its fallback): a write if
        either writes, on the resources of both, commutative only if every write is."""
        resources = tuple(dict.fromkeys([*self.resources, *other.resources]))
        if self.read_only and other.read_only:
            return Effect(True, resources)
        commutative = all(e.commutative for e in (self, other) if not e.read_only)
        return Effect(False, resources, commutative)

    def describe(self) -> str:
        """One line for people: ``read-only, resource blog``."""
        kind = "read-only" if self.read_only else "side effects"
        if self.commutative and not self.read_only:
            kind += " (commutative)"
        label = "resources" if len(self.resources) > 1 else "resource"
        return f"{kind}, {label} {', '.join(self.resources)}"

    def to_json(self) -> dict[str, Any]:
        """``{"effect": ..., "resources": [...], "commutative": bool}``."""
        return {
            "effect": self.kind,
            "resources": list(self.resources),
            "commutative": self.commutative,
        }


def effect_from(tags: Iterable[str] | None, metadata: Mapping[str, Any] | None = None) -> Effect:
    """The effect a tool's tags (and an MCP tool's annotations in ``metadata``) declare."""
    tags = list(tags or ())
    metadata = metadata or {}
    read_only = READ_ONLY_TAG in tags or metadata.get("readOnlyHint") is True
    named = [t[len(RESOURCE_PREFIX) :].strip() for t in tags if t.startswith(RESOURCE_PREFIX)]
    resources = [name for name in named if name]
    if not resources:
        resources = [t for t in tags if t.startswith(MCP_SERVER_PREFIX) and len(t) > 4][:1]
    return Effect(
        read_only=read_only,
        resources=tuple(dict.fromkeys(resources)) or (DEFAULT_RESOURCE,),
        commutative=COMMUTATIVE_TAG in tags and not read_only,
    )
