"""One command's settings, store and catalog (:class:`Session`), built once from the environment
and the command's flags."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolplan.cli import render
from toolplan.cli.output import stderr
from toolplan.config import Settings
from toolplan.execution.context import ExecutionContext
from toolplan.service.wiring import execution_context
from toolplan.store import Store, open_store
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.loading import load_catalog

if TYPE_CHECKING:
    from toolplan.store.protocol import PlanRecord
    from toolplan.tools.sources import ToolSources

__all__ = ["Session", "new_session", "planner_context", "shown_store_uri"]


class Session:
    """Settings, store and catalog for one command, opened lazily and closed at the end."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._store: Store | None = None
        self._catalog: ToolCatalog | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.settings.store_uri)
        return self._store

    @property
    def catalog(self) -> ToolCatalog:
        if self._catalog is None:
            self._catalog = load_catalog(self.settings)
        return self._catalog

    def use_plan_tools(self, plan_id: str) -> None:
        """When no tools were chosen, load the tools recorded with the stored plan, and say so
        (:class:`~toolplan.tools.recorded.RecordedTools`: exit 3 when they cannot be loaded)."""
        from toolplan.store.lookup import find_plan
        from toolplan.tools.recorded import RecordedTools

        if self._catalog is not None:
            return

        def say(record: PlanRecord, sources: ToolSources) -> None:
            stderr.print(
                f"using the tools recorded with {record.plan_id}: {sources.describe()}",
                highlight=False,
            )

        recorded = RecordedTools(self.settings, on_load=say)
        if recorded.active:
            self._catalog = recorded.catalog_for_sync(find_plan(self.store, plan_id))

    def context(self, *, as_json: bool) -> ExecutionContext:
        listener = None if as_json else render.ProgressPrinter(stderr)
        return execution_context(
            self.settings, store=self.store, catalog=self.catalog, listener=listener
        )

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def new_session(
    store: str | None,
    tools: list[str] | None,
    *,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    max_steps: int | None = None,
    mcp: Path | None = None,
    no_cache: bool = False,
    temporal_address: str | None = None,
) -> Session:
    """A :class:`Session` whose settings are the environment's, overridden by the given flags."""
    settings = Settings.from_env().with_overrides(
        store_uri=store,
        tool_modules=tools,
        concurrency=concurrency,
        fail_fast=fail_fast,
        max_steps=max_steps,
        mcp_config=str(mcp) if mcp else None,
        no_cache=no_cache,
        temporal_address=temporal_address,
    )
    return Session(settings)


def shown_store_uri(flag: str | None) -> str:
    """The store a command used, as it may be printed (credentials redacted)."""
    from toolplan.store import redact_uri
    from toolplan.store.registry import store_uri_for

    return redact_uri(store_uri_for(flag or Settings.from_env().store_uri))


def planner_context(
    session: Session,
    model: str | None,
    max_repairs: int | None,
    confidence_threshold: float | None,
    *,
    as_json: bool,
) -> Any:
    """The planner's context for ``plan`` and ``run``: the session's store and catalog, the model
    from the flag or the environment; what planning is doing goes to stderr, as the steps of an
    execution do, unless the output is ``--json``."""
    from toolplan.planning.setup import planner_context_from_env

    ctx = planner_context_from_env(
        settings=session.settings,
        store=session.store,
        catalog=session.catalog,
        model=model,
        max_repairs=max_repairs,
        confidence_threshold=confidence_threshold,
    )
    return ctx if as_json else replace(ctx, listener=render.PlanningPrinter(stderr))
