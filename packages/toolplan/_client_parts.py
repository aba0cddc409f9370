"""What a :class:`~toolplan.client.Toolplan` is built from: its settings, store, tools, model,
backend and worker ID, each opened on first use and closed with it, and the contexts built from
them for one execution or for the planner.

Kept apart from what the client does with its parts (:mod:`toolplan.client`: plans, executions,
approvals, reading) so that each reads on its own, as httpx keeps a client's configuration in
its ``BaseClient``. Nothing here calls an operation; the operations only use these parts.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions
from toolplan.config.settings import PlannerRewritesGiven, rewrites_mode
from toolplan.engine.recorder import EventListener
from toolplan.runs.context import ExecutionBackend, ExecutionContext, new_worker_id
from toolplan.service import wiring
from toolplan.service.wiring import ToolsArg, backend_for, resolve_catalog
from toolplan.store import Store, open_store
from toolplan.store.protocol import PlanRecord
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from toolplan.planning.context import PlannerContext
    from toolplan.planning.progress import PlanningListener
    from toolplan.tools.recorded import RecordedTools
    from toolplan.tools.sources import ToolSources

__all__ = ["ClientParts"]


class ClientParts:
    """A client's parts, opened on first use under one lock, and closed with it.

    The base of both clients, :class:`~toolplan.client.Toolplan` (which documents the arguments)
    and :class:`~toolplan.client.AsyncToolplan`, through
    :class:`~toolplan._client_calls.ClientCalls`; not meant to be built on its own.
    """

    def __init__(
        self,
        *,
        store: Store | str | None = None,
        tools: ToolsArg = None,
        model: str | BaseChatModel | None = None,
        backend: ExecutionBackend | None = None,
        settings: Settings | None = None,
        worker_id: str | None = None,
        create_store: bool = True,
        rewrites: PlannerRewritesGiven | None = None,
        stream_execution: bool | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings()
        if rewrites is not None:  # the argument wins over the settings, as ``model`` does
            mode = rewrites_mode(rewrites, "rewrites", stacklevel=2)  # "all": said at the call
            planner = replace(self.settings.planner, rewrites=mode)
            self.settings = replace(self.settings, planner=planner)
        if stream_execution is not None:
            planner = replace(self.settings.planner, stream_execution=stream_execution)
            self.settings = replace(self.settings, planner=planner)
        self.create_store = create_store
        """Whether opening a store URI may create it (a new SQLite file); ``False`` for callers
        that only read or cancel: a missing store is then ``InvalidInput`` naming it."""
        self.model = model
        self.worker_id = worker_id or new_worker_id()
        self._store_uri = store if isinstance(store, str) else None
        self._store: Store | None = None if isinstance(store, str) else store
        self._owns_store = store is None or isinstance(store, str)
        self._tools = tools
        self._catalog = tools if isinstance(tools, ToolCatalog) else None
        self._backend = backend
        self._planners: dict[tuple[Any, ...], PlannerContext] = {}
        self._recorded: RecordedTools | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        store: Store | str | None = None,
        tools: ToolsArg = None,
        model: str | BaseChatModel | None = None,
        backend: ExecutionBackend | None = None,
        worker_id: str | None = None,
    ) -> Self:
        """A client whose settings come from the environment (``env``, default ``os.environ``)
        and the project config (``toolplan.toml``); the parts given here win over them."""
        return cls(
            store=store,
            tools=tools,
            model=model,
            backend=backend,
            settings=Settings.from_env(env),
            worker_id=worker_id,
        )

    @property
    def store_uri(self) -> str:
        """The store's URI (``store.uri`` once it is open)."""
        if self._store is not None:
            return self._store.uri
        return self._store_uri or self.settings.store_uri

    @property
    def store(self) -> Store:
        """The store, opened on first use (:class:`~toolplan.errors.StoreUnavailable` when it
        cannot be reached)."""
        with self._lock:
            if self._store is None:
                self._store = open_store(
                    self._store_uri or self.settings.store_uri,
                    create=self.create_store,
                    options=self.settings.store_options,
                )
            return self._store

    @property
    def catalog(self) -> ToolCatalog:
        """The tools plans may call, loaded on first use."""
        with self._lock:
            if self._catalog is None:
                self._catalog = resolve_catalog(self._tools, settings=self.settings)
            return self._catalog

    @property
    def backend(self) -> ExecutionBackend:
        """What runs the steps: the one given, else the settings' choice."""
        with self._lock:
            if self._backend is None:
                self._backend = backend_for(self.settings)
            return self._backend

    @property
    def tools_chosen(self) -> bool:
        """Whether the tools were chosen (here, by a flag, the environment or the project
        config) rather than defaulted: when not, executing a stored plan loads the tool
        sources recorded with it (:meth:`catalog_for`)."""
        return self._tools is not None or self.settings.tool_sources_given

    def catalog_for(
        self,
        record: PlanRecord,
        *,
        on_load: Callable[[PlanRecord, ToolSources], None] | None = None,
    ) -> ToolCatalog:
        """The tools to run a stored plan with: the client's, or, when none were chosen, those
        recorded with the plan (:class:`~toolplan.tools.recorded.RecordedTools`;
        :class:`~toolplan.errors.ToolsUnavailable` when they cannot be loaded). ``on_load`` is
        told which recorded sources are used."""
        if self.tools_chosen:
            return self.catalog
        with self._lock:
            if self._recorded is None:
                from toolplan.tools.recorded import RecordedTools

                # One per client: each distinct set of recorded sources loads once, however
                # many plans (a worker's) run with it.
                self._recorded = RecordedTools(self.settings)
            recorded = self._recorded
        found = recorded.catalog_for_sync(record, on_load=on_load) if recorded.active else None
        return found if found is not None else self.catalog

    def continuing_tools(
        self,
        *,
        enqueue: bool,
        on_load: Callable[[PlanRecord, ToolSources], None] | None = None,
    ) -> Callable[[PlanRecord], ToolCatalog] | None:
        """The tools the continuation of a decision on a plan runs with here
        (:meth:`catalog_for`), for :mod:`toolplan.runs.approvals` to load before it records the
        decision; ``None`` when workers continue it (``enqueue`` without Temporal): they load
        the plan's tools themselves."""
        if enqueue and not self.settings.temporal.enabled:
            return None
        return lambda record: self.catalog_for(record, on_load=on_load)

    def execution_context(
        self,
        *,
        catalog: ToolCatalog | None = None,
        listener: EventListener | None = None,
        options: ExecutionOptions | None = None,
    ) -> ExecutionContext:
        """What one execution runs with: this client's store, tools (or ``catalog``), backend
        and worker ID, the settings' execution options (or ``options``), and ``listener`` for
        its step events (:func:`toolplan.service.wiring.execution_context`)."""
        return wiring.execution_context(
            self.settings,
            store=self.store,
            catalog=catalog if catalog is not None else self.catalog,
            listener=listener,
            worker_id=self.worker_id,
            backend=self.backend,
            options=options,
        )

    def planner_context(
        self,
        *,
        model: str | BaseChatModel | None = None,
        max_repairs: int | None = None,
        confidence_threshold: float | None = None,
        listener: PlanningListener | None = None,
    ) -> PlannerContext:
        """The planner's context: this client's store and tools, the model (``model``, else the
        client's, else ``settings.planner.model``) and the planner settings, with the overrides
        given; ``listener`` is told what planning is doing while the model works. Built once per
        distinct overrides (setting up a model costs time)."""
        model = model if model is not None else self.model
        key = (
            id(model) if model is not None and not isinstance(model, str) else model,
            max_repairs,
            confidence_threshold,
        )
        with self._lock:
            found = self._planners.get(key)
        if found is not None:
            return found if listener is None else replace(found, listener=listener)
        from toolplan.planning.setup import build_planner_context

        built = build_planner_context(
            self.settings,
            store=self.store,
            catalog=self.catalog,
            model=model,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
        )
        with self._lock:
            built = self._planners.setdefault(key, built)
        return built if listener is None else replace(built, listener=listener)

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store if this client opened it. Idempotent."""
        if not self._owns_store:
            return
        with self._lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()

    async def aclose(self) -> None:
        """:meth:`close`, off the event loop."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        self.close()
        return False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        await self.aclose()
        return False
