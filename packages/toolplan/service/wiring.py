"""Building what an entry point runs with from :class:`~toolplan.config.Settings`: the execution
context and its backend, the tool catalog of a ``tools=`` argument.

The wiring layer: it reads settings and chooses implementations (Temporal or this process), so
that the layers below take explicit parts and never read the environment themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions
from toolplan.engine.recorder import EventListener
from toolplan.errors import InvalidInput
from toolplan.runs.backend import InProcessBackend
from toolplan.runs.context import ExecutionBackend, ExecutionContext, new_worker_id
from toolplan.store.protocol import Store
from toolplan.tools.catalog import RESERVED_TOOL_NAMES, ToolCatalog, load_tool_modules
from toolplan.tools.loading import load_catalog

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["ToolsArg", "backend_for", "execution_context", "resolve_catalog"]

ToolsArg: TypeAlias = "ToolCatalog | Iterable[BaseTool | Callable[..., Any] | str] | None"
"""What a ``tools=`` argument may be: a catalog, tools, functions and module names, or ``None``."""


def resolve_catalog(
    tools: ToolsArg = None, *, settings: Settings | None = None, drop_reserved: bool = False
) -> ToolCatalog:
    """The :class:`ToolCatalog` for any ``tools=`` argument of the Python API.

    A catalog is used as is; ``None`` means the configured tools (:func:`load_catalog` on
    ``settings``, default ``Settings()``); a list may mix LangChain tools, plain
    functions and module names. With ``drop_reserved``, tools named like the plan executor are
    left out instead of rejected (an agent's tool list may hold the ``execute_plan`` tool itself).
    """
    if isinstance(tools, ToolCatalog):
        return tools
    if tools is None:
        return load_catalog(settings or Settings())
    items = list(tools)
    if drop_reserved:
        from langchain_core.tools import BaseTool

        items = [
            t for t in items if not (isinstance(t, BaseTool) and t.name in RESERVED_TOOL_NAMES)
        ]
    catalog = load_tool_modules([t for t in items if isinstance(t, str)])
    catalog.add([t for t in items if not isinstance(t, str)])
    return catalog


def backend_for(settings: Settings) -> ExecutionBackend:
    """The backend the settings choose: Temporal when ``TOOLPLAN_TEMPORAL_ADDRESS`` (or
    ``--temporal-address``) is set, else this process."""
    if not settings.temporal.enabled:
        return InProcessBackend()
    try:
        from toolplan.temporal import temporal_backend
    except ImportError as error:
        raise InvalidInput(
            f"TOOLPLAN_TEMPORAL_ADDRESS is set but the Temporal SDK is missing ({error}); "
            "install it with: pip install 'toolplan[temporal]'"
        ) from None
    return temporal_backend(settings.temporal)


def execution_context(
    settings: Settings,
    *,
    store: Store,
    catalog: ToolCatalog,
    listener: EventListener | None = None,
    worker_id: str | None = None,
    backend: ExecutionBackend | None = None,
    options: ExecutionOptions | None = None,
) -> ExecutionContext:
    """The context every entry point uses, the client's included: the settings' execution
    options and limits unless ``options`` is given, and the backend they choose
    (:func:`backend_for`) unless ``backend`` is given.

    A long-lived process (the API server) passes one ``worker_id`` for all its runs, so that
    after a store outage it can take back the lease its own failed run still holds.
    """
    return ExecutionContext(
        store=store,
        catalog=catalog,
        options=options if options is not None else settings.execution,
        listener=listener,
        worker_id=worker_id or new_worker_id(),
        backend=backend or backend_for(settings),
    )
