"""Loading the tools recorded with a stored plan: the one way ``toolplan execute``, lease-queue
workers and Temporal activities do it.

A plan stored by ``toolplan submit --tools my_tools`` records ``meta.toolSources``
(:mod:`toolplan.tools.sources`); a process given no tools of its own runs the plan with them.
What a record says is data, so loading it is bounded:

- only toolplan writes ``toolSources`` (:mod:`toolplan.plan_format.meta`), and a recorded module name
  must be a dotted Python name; it is imported like ``--tools`` would import it, from what is
  installed (a project folder is appended to ``sys.path``, never put before it);
- an MCP config a record names is never started: its servers run commands. The operator names it
  (``--mcp``, ``TOOLPLAN_MCP``, the project config), and those tools are used instead;
- a module that cannot be imported here, or a server that does not start, is
  :class:`~toolplan.errors.ToolsUnavailable` (exit 3): a fault of this process's setup, never
  recorded as the plan's failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from toolplan._blocking import run_blocking
from toolplan.errors import InvalidInput, ToolsUnavailable, Unavailable
from toolplan.store.protocol import PlanRecord
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.loading import ToolSettings, aload_catalog
from toolplan.tools.sources import ToolSources, recorded_sources

__all__ = ["RecordedTools"]


class ProcessTools(ToolSettings, Protocol):
    """What a process was told about its tools (:class:`~toolplan.config.Settings` says it)."""

    @property
    def tool_sources_given(self) -> bool:
        """Whether the tools were chosen (flags, environment, project config), not defaulted."""
        ...


@dataclass(frozen=True)
class _Modules:
    tool_modules: tuple[str, ...]
    mcp_config: None = None


OnLoad = Callable[[PlanRecord, ToolSources], None]
"""Told once per distinct set of sources, before they are loaded (to say so in a log)."""


class RecordedTools:
    """The catalogs of the tool sources recorded with stored plans, loaded once per distinct set
    of sources and kept for the life of the process.

    ``settings`` are the process's own: when they choose tools (a flag, the environment, the
    project config), every plan runs with those, and nothing recorded is loaded.
    """

    def __init__(self, settings: ProcessTools | None, *, on_load: OnLoad | None = None) -> None:
        self.settings = settings
        self.on_load = on_load
        self._catalogs: dict[ToolSources, ToolCatalog] = {}

    @property
    def active(self) -> bool:
        """Whether recorded tools may be loaded at all: the process chose no tools of its own
        (when not, there is no need even to read a plan)."""
        return self.settings is not None and not self.settings.tool_sources_given

    def sources_for(self, record: PlanRecord) -> ToolSources | None:
        """The recorded sources this process would load for ``record``; ``None`` when it uses
        its own catalog (tools were chosen, nothing was recorded, or the same were)."""
        settings = self.settings
        if settings is None or not self.active:
            return None
        sources = recorded_sources(record)
        if sources is None or sources == ToolSources.of(settings.tool_modules, settings.mcp_config):
            return None
        return sources

    async def catalog_for(
        self, record: PlanRecord, *, on_load: OnLoad | None = None
    ) -> ToolCatalog | None:
        """The catalog of the tools recorded with ``record``, or ``None``: use your own.
        ``on_load`` (default the one given at construction) is told before sources load.

        Raises :class:`~toolplan.errors.ToolsUnavailable` when they cannot be loaded here."""
        sources = self.sources_for(record)
        if sources is None:
            return None
        cached = self._catalogs.get(sources)
        if cached is not None:
            return cached
        if sources.mcp is not None:
            raise ToolsUnavailable(
                f"plan {record.plan_id} was made with the tools of the MCP config {sources.mcp!r}; "
                "toolplan never starts MCP servers that a stored record names: to run it, name "
                f"the config yourself: {sources.describe()}",
                details={"planId": record.plan_id, "toolSources": sources.to_json()},
            )
        announce = on_load or self.on_load
        if announce is not None:
            announce(record, sources)
        try:
            catalog = await aload_catalog(_Modules(sources.modules), strict=True)
        except (InvalidInput, ImportError, Unavailable) as error:
            reason = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
            raise ToolsUnavailable(
                f"cannot load the tools recorded with plan {record.plan_id} "
                f"({sources.describe()}) in this process: {reason}; run it where they are "
                "installed, or name the tools to use (--tools)",
                details={"planId": record.plan_id, "toolSources": sources.to_json()},
            ) from None
        self._catalogs[sources] = catalog
        return catalog

    def catalog_for_sync(
        self, record: PlanRecord, *, on_load: OnLoad | None = None
    ) -> ToolCatalog | None:
        """:meth:`catalog_for` from sync code (the CLI)."""
        return run_blocking(self.catalog_for(record, on_load=on_load))
