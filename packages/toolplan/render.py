"""Human-readable output for the CLI (rich tables); ``--json`` output bypasses this module."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from toolplan.engine.recorder import StepEvent
from toolplan.engine.result import ExecutionResult
from toolplan.tools.catalog import ToolInfo

__all__ = ["ProgressPrinter", "print_execution", "print_plan", "print_tools", "short"]

_STATUS_STYLE = {
    "succeeded": "green",
    "failed": "red",
    "skipped": "yellow",
    "running": "cyan",
    "pending": "dim",
    "partial": "yellow",
    "queued": "dim",
    "planned": "green",
    "needs_review": "yellow",
}


def _status(value: str) -> Text:
    return Text(value, style=_STATUS_STYLE.get(value, ""))


def short(value: Any, limit: int = 60) -> str:
    """One-line preview of a JSON value."""
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def print_plan(console: Console, plan_json: dict[str, Any], analysis: dict[str, Any]) -> None:
    """The steps of a plan with their dependencies and layer."""
    layer_of = {step: i for i, layer in enumerate(analysis.get("layers", [])) for step in layer}
    table = Table(title="plan", title_justify="left")
    for column in ("step", "tool", "depends on", "layer", "parameters"):
        table.add_column(column)
    for step in plan_json["steps"]:
        deps = analysis.get("dependencies", {}).get(step["id"], [])
        table.add_row(
            step["id"],
            step["tool"],
            ", ".join(deps) or "-",
            str(layer_of.get(step["id"], "?")),
            short(step.get("parameters"), 50),
        )
    console.print(table)
    critical = analysis.get("criticalPath") or []
    if critical:
        console.print(f"critical path: {' -> '.join(critical)}")


def print_execution(console: Console, result: ExecutionResult) -> None:
    """A table of steps with status and timing, then the outputs."""
    table = Table(title=f"{result.plan_id}  ({result.request_id})", title_justify="left")
    for column in ("step", "tool", "status", "attempts", "ms"):
        table.add_column(column, no_wrap=True)
    table.add_column("output / error", overflow="fold", ratio=1)
    for step in result.steps:
        detail = step.error if step.status != "succeeded" else short(step.output, 100)
        if step.used_fallback:
            detail = f"[fallback] {detail}"
        table.add_row(
            step.step_id,
            step.tool,
            _status(step.status),
            str(step.attempts),
            f"{step.duration_ms:.1f}" if step.duration_ms is not None else "-",
            detail or "",
        )
    console.print(table)
    console.print(Text.assemble("status: ", _status(result.status)))


def print_tools(console: Console, infos: list[ToolInfo]) -> None:
    """The tool catalog with tags and observed statistics."""
    table = Table(title="tools", title_justify="left")
    for column in ("name", "tags", "arguments", "calls", "avg ms", "failure rate", "description"):
        table.add_column(column)
    for info in infos:
        stats = info.stats
        table.add_row(
            info.name,
            ", ".join(info.tags),
            ", ".join(info.parameters.get("properties", {})),
            str(stats.calls) if stats else "-",
            f"{stats.avg_duration_ms:.1f}" if stats and stats.avg_duration_ms is not None else "-",
            f"{stats.failure_rate:.0%}" if stats and stats.failure_rate is not None else "-",
            short(info.description, 60),
        )
    console.print(table)


class ProgressPrinter:
    """Prints one line per step transition to stderr while a plan runs."""

    _SYMBOL = {"started": "▶", "retrying": "↻", "succeeded": "✓", "failed": "✗", "skipped": "-"}

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: StepEvent) -> None:
        line = f"{self._SYMBOL[event.kind]} {event.step_id} ({event.tool}) {event.kind}"
        if event.kind == "started" and event.attempt > 1:
            line += f", attempt {event.attempt}"
        if event.duration_ms is not None:
            line += f" in {event.duration_ms:.0f} ms"
        if event.error:
            line += f": {event.error}"
        self.console.print(Text(line, style=_STATUS_STYLE.get(event.kind, "")), highlight=False)
