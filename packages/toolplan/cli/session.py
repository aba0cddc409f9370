"""The client of one command (a :class:`~toolplan.client.AsyncToolplan`), built once from the
environment and the command's flags: the one place a command reads the environment."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from rich.markup import escape

from toolplan.cli import render
from toolplan.cli.output import stderr
from toolplan.client import Asker, AsyncToolplan
from toolplan.config import Settings
from toolplan.config.tuning import SettingMoved
from toolplan.engine.recorder import EventListener
from toolplan.errors import SettingRemoved
from toolplan.planning.progress import PlanningListener
from toolplan.store.protocol import PlanRecord, StepRecord
from toolplan.tools.sources import ToolSources

__all__ = [
    "approval_prompt",
    "new_client",
    "planning_progress",
    "progress",
    "say_recorded_tools",
    "shown_store_uri",
]


def _settings_from_env() -> Settings:
    """:meth:`Settings.from_env`, saying on a terminal which tuning knob a variable still sets
    that now belongs in the project config (a script's output stays as it was), and always
    which value no longer does what it did (:class:`~toolplan.errors.SettingRemoved`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SettingMoved)
        warnings.simplefilter("always", SettingRemoved)
        settings = Settings.from_env()
    moved = {str(w.message) for w in caught if issubclass(w.category, SettingMoved)}
    removed = {str(w.message) for w in caught if issubclass(w.category, SettingRemoved)}
    for other in caught:
        if not issubclass(other.category, (SettingMoved, SettingRemoved)):
            warnings.showwarning(
                other.message, other.category, other.filename, other.lineno, other.file, other.line
            )
    shown = sorted(removed) + (sorted(moved) if sys.stderr.isatty() else [])
    for message in shown:
        stderr.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)
    return settings


def new_client(
    store: str | None,
    tools: list[str] | None,
    *,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    max_steps: int | None = None,
    mcp: Path | None = None,
    no_cache: bool = False,
    temporal_address: str | None = None,
    model: str | None = None,
    create_store: bool = True,
    approve_all: bool = False,
    stream_execution: bool | None = None,
) -> AsyncToolplan:
    """A client whose settings are the environment's, overridden by the given flags (``model``:
    ``--model``). Its store and tools open on first use; the command closes it. Commands that
    only read or cancel pass ``create_store=False``: a store that does not exist is then an
    error (exit 2), never a new empty one."""
    settings = _settings_from_env().with_overrides(
        store_uri=store,
        tool_modules=tools,
        concurrency=concurrency,
        fail_fast=fail_fast,
        max_steps=max_steps,
        mcp_config=str(mcp) if mcp else None,
        no_cache=no_cache,
        temporal_address=temporal_address,
        approve_all=approve_all,
        stream_execution=stream_execution,
    )
    return AsyncToolplan(settings=settings, model=model, create_store=create_store)


def progress(as_json: bool) -> EventListener | None:
    """The listener of a command's executions: progress lines on stderr, none with ``--json``."""
    return None if as_json else render.ProgressPrinter(stderr)


def planning_progress(as_json: bool) -> PlanningListener | None:
    """The listener of a command's planning: what the planner is doing while the model works,
    on stderr as an execution's steps are; none with ``--json``."""
    return None if as_json else render.PlanningPrinter(stderr)


def say_recorded_tools(record: PlanRecord, sources: ToolSources) -> None:
    """Tell the user that a plan runs with the tools recorded with it (no tools were chosen)."""
    stderr.print(
        f"using the tools recorded with {record.plan_id}: {sources.describe()}", highlight=False
    )


def shown_store_uri(uri: str) -> str:
    """The store a command used, as it may be printed (credentials redacted)."""
    from toolplan.store import redact_uri
    from toolplan.store.registry import store_uri_for

    return redact_uri(store_uri_for(uri))


def approval_prompt(*, no_input: bool, as_json: bool) -> Asker | None:
    """How a command asks a person about a step waiting for approval: inline on the terminal
    (``Call wire_money(to="NO12", amount=50)? [y/N]`` on stderr; no denies it, Ctrl-D leaves it
    waiting), or not at all (``None``) with ``--no-input``, ``--json``, or stdin not a TTY:
    then the command exits 4 saying how to approve or deny."""
    if no_input or as_json or not sys.stdin.isatty():
        return None
    import click

    def ask(step: StepRecord) -> bool | None:
        call = render.call_text(step.tool, step.resolved_parameters)
        try:
            return click.confirm(f"Call {call}?", default=False, err=True)
        except click.Abort:  # end of input or Ctrl-C at the prompt: decide later
            return None

    return ask
