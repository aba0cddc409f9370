"""Calling a LangChain tool: ``BaseTool.ainvoke``, or a fast path with the same semantics when
nothing would observe the call.

``ainvoke`` costs about 0.25 ms per call on this project's machines, mostly building a callback
manager and starting/ending a tool run that no handler receives, plus ``get_type_hints`` on the
tool's coroutine every call. When no callback handler is configured (no tracing, no verbose/debug,
no callbacks on the tool or in the config), :func:`invoke_tool` does what ``ainvoke`` does for a
``StructuredTool`` without those parts: the same argument parsing and validation
(``_to_args_and_kwargs``; a ``ValidationError`` propagates as it would), the same
``RunnableConfig`` (with the idempotency metadata) passed to the coroutine's config parameter and
set as the child config for nested runnables, and every exception, ``ToolException`` included,
raised unchanged. Tools the fast path does not cover (sync-only tools, tools handling their own
errors, ``content_and_artifact`` tools, custom ``BaseTool`` subclasses) always go through
``ainvoke``. ``tests/unit/test_toolcall.py`` shows both paths give identical results and errors.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, set_config_context
from langchain_core.runnables.utils import coro_with_context
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools.base import _get_runnable_config_param

__all__ = ["callbacks_configured", "fast_path_applies", "invoke_tool"]


def callbacks_configured(config: RunnableConfig | None = None) -> bool:
    """Whether a tool call made now would reach any callback handler: tracing (LangSmith env or
    context), verbose/debug, configure hooks, or callbacks in ``config``."""
    manager = AsyncCallbackManager.configure((config or {}).get("callbacks"), None, False)
    return bool(manager.handlers or manager.inheritable_handlers)


@functools.lru_cache(maxsize=1024)
def _config_param(function: Callable[..., Any]) -> str | None:
    return _get_runnable_config_param(function)


@functools.lru_cache(maxsize=1024)
def _takes_callbacks(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return True
    return "callbacks" in parameters or "run_manager" in parameters


def fast_path_applies(tool: BaseTool) -> bool:
    """A plain ``@tool``/``StructuredTool`` with a coroutine, no callbacks of its own, no error
    handlers and plain content output: what :func:`invoke_tool` can call directly."""
    return (
        type(tool) is StructuredTool
        and tool.coroutine is not None
        and not tool.callbacks
        and not tool.verbose
        and not tool.handle_tool_error
        and not tool.handle_validation_error
        and tool.response_format == "content"
        and not _takes_callbacks(tool.coroutine)
    )


async def invoke_tool(tool: BaseTool, arguments: Any, config: RunnableConfig, *, fast: bool) -> Any:
    """``tool.ainvoke(arguments, config=config)``; with ``fast`` (the caller checked
    :func:`callbacks_configured` is false) and a tool :func:`fast_path_applies` to, without the
    callback machinery."""
    if not (fast and isinstance(arguments, dict) and fast_path_applies(tool)):
        return await tool.ainvoke(arguments, config=config)
    assert isinstance(tool, StructuredTool) and tool.coroutine is not None
    config = ensure_config(config)
    args, kwargs = tool._to_args_and_kwargs(arguments, None)
    if param := _config_param(tool.coroutine):
        kwargs[param] = config
    with set_config_context(config) as context:
        return await coro_with_context(tool.coroutine(*args, **kwargs), context)
