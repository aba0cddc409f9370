"""Where a key is made that a template asks of a step whose declared output lacks it.

Told only that ``{{movies.show_time}}`` does not exist, a small model writes the same template
again (NESTFUL sgd-15: a movie search asked for the show time that only the show-times tool
returns; sgd-14: a house booking asked for the hotel name its own hotel search returned). When
no key of that output is spelled like it (:mod:`toolplan.validation.types`), the problem names
where the key is made:

* **the step of the plan whose declared output has it**, ``{{times.show_time}}``: the step is
  called anyway. When the plan has such steps, only one that can come first is named, and
  only when it is the one: not one that runs after the asking step (a cycle), nor a mapped or
  conditional call (a list of outputs, or one that may not be), nor one whose fallback may
  answer with another tool's output.
* else **the one tool of the catalog that makes it**: its declared output has the key and it
  does not take an argument of that name (a booking echoes the show time it was given). Counted
  over the whole catalog, writes and all, so that a key many tools return (``id``,
  ``created_at``) names none. It is named only when it is not the asking step's tool, needs no
  approval and takes no id (a getter by id reads back what was made: ``getAuthor``'s ``name``
  is no weather report's). In a catalog that says which tools only read, only a read is named,
  as the call to make first; where the catalog does not say, calling it may change something,
  so the problem says it is the one tool that returns the key, to call first if the request
  asks for what it does (told only that, the 1.5B model did not add the show-times call).

With several, none is named: which one is meant is a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolplan.plan_format.json_schema import inline_refs, object_properties
from toolplan.plan_format.names import is_id_argument
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import PathSegment, reference_text
from toolplan.tools.catalog import ToolCatalog, ToolInfo
from toolplan.validation.edges import descendants

__all__ = ["Makers"]


class Makers:
    """One plan's makers of output keys; the catalog is indexed on first use (only a plan with a
    missing key needs it)."""

    def __init__(self, plan: Plan, catalog: ToolCatalog) -> None:
        self._plan, self._catalog = plan, catalog
        self._index: dict[str, list[ToolInfo]] | None = None

    def hint(self, step: Step, tool: str, key: str, rest: tuple[PathSegment, ...]) -> str:
        """The hint for ``step``, calling ``tool`` (its own or its fallback's), that asked a
        step for ``key`` (then ``rest``) which its output lacks; ``""`` when nothing is one
        maker."""
        in_plan = self._in_plan(step, key)
        if in_plan:  # the plan calls a maker: that call, or none (another would be a guess)
            made_here = self._first(step, in_plan)
            if made_here is None:
                return ""
            try:
                fixed = reference_text(made_here.id, (key, *rest))
            except ValueError:  # a key no template can name
                return ""
            return f"; step {made_here.id!r} ({made_here.tool}) returns it: {{{{{fixed}}}}}"
        makers = self._makers().get(key, [])
        if len(makers) != 1:
            return ""
        maker = makers[0]
        required = maker.parameters.get("required") or []
        if maker.name == tool or maker.gated or any(is_id_argument(str(r)) for r in required):
            return ""
        if not self._reads_declared():
            return (
                f"; only tool {maker.name!r} returns {key!r}: if the request asks for what "
                f"that tool does, call it first and take its {key!r}"
            )
        if not maker.read_only:
            return ""
        return f"; tool {maker.name!r} returns {key!r}: call that tool first and take its {key!r}"

    def _in_plan(self, step: Step, key: str) -> list[Step]:
        """The other steps of the plan whose tool returns ``key``."""
        return [
            other
            for other in self._plan.steps
            if other.id != step.id
            and other.tool in self._catalog
            and key in _top_keys(self._catalog.info(other.tool).returns)
        ]

    def _first(self, step: Step, candidates: list[Step]) -> Step | None:
        """The one of ``candidates`` that can come before ``step`` with one output."""
        after = descendants(self._plan, step.id)
        usable = [
            other
            for other in candidates
            if other.id not in after
            and other.for_each is None
            and other.when is None
            and (other.fallback is None or other.fallback.tool == other.tool)
        ]
        return usable[0] if len(usable) == 1 else None

    def _makers(self) -> dict[str, list[ToolInfo]]:
        """Output key -> the catalog's tools that return it and do not take it."""
        if self._index is None:
            self._index = {}
            for info in self._catalog.infos():
                taken = set(self._catalog.arguments_schema(info.name).get("properties") or {})
                for key in _top_keys(info.returns) - taken:
                    self._index.setdefault(key, []).append(info)
        return self._index

    def _reads_declared(self) -> bool:
        """Whether the catalog says which tools only read: one of them at least is tagged so."""
        return any(info.read_only for info in self._catalog.infos())


def _top_keys(returns: Mapping[str, Any] | None) -> set[str]:
    """The keys of a declared output that is one object (none for a list, a scalar, a union)."""
    return set(object_properties(inline_refs(dict(returns)))) if returns else set()
