"""The one reader of a model's JSON plan, streamed or whole: :class:`JsonPlanReader`.

:meth:`~JsonPlanReader.feed` it the answer's text as it comes (the message content, or a tool
call's arguments): it returns each step of the plan's ``steps`` list as soon as its object closes
(:class:`~toolplan.planning.partial.StepScanner` finds where steps begin and end, in prose,
fences or wrappers alike), read leniently. :meth:`~JsonPlanReader.finish` reads the whole answer,
format rules and all (:func:`~toolplan.planning.parsing.read_plan`): the planner's final
reading, whether the answer streamed or not, and what a repair quotes back."""

from __future__ import annotations

from typing import Any

from toolplan.config.settings import PlannerRewrites
from toolplan.planning.parsing import PlanReading, loads_lenient, read_plan
from toolplan.planning.partial import StepScanner
from toolplan.tools.catalog import ToolCatalog

__all__ = ["JsonPlanReader"]


class JsonPlanReader:
    """Reads one JSON answer (see the module)."""

    restarts = 0
    """A JSON answer is never read as something else first (the Python reader's counterpart)."""

    def __init__(
        self, catalog: ToolCatalog | None = None, *, rewrites: PlannerRewrites = "format"
    ) -> None:
        self.catalog = catalog
        self.rewrites = rewrites
        self._scanner = StepScanner()

    @property
    def text(self) -> str:
        """The answer's text so far."""
        return self._scanner.text

    def feed(self, chunk: str, *, final: bool = False) -> list[dict[str, Any]]:
        """The steps whose objects ``chunk`` closes, read leniently (as shown while the model
        writes: the whole answer is still read by :meth:`finish`)."""
        steps = []
        for piece in self._scanner.feed(chunk):
            try:
                step = loads_lenient(piece)
            except (ValueError, RecursionError):
                continue
            if isinstance(step, dict):
                steps.append(step)
        return steps

    def finish(self) -> PlanReading:
        """The reading of the whole answer fed so far."""
        return self.read(self.text)

    def read(self, payload: Any) -> PlanReading:
        """An answer that came whole: text, or the tool call's arguments already parsed."""
        return read_plan(payload, self.catalog, rewrites=self.rewrites)
