"""Build the full tool catalog from settings: Python tool modules plus MCP servers.

Every entry point (CLI session, API, graphs, the meta-tool's callers) should build its catalog here,
so a plan sees the same tools wherever it is validated and run.

A server that cannot be started or reached while loading is, by default, reported on stderr with
its name and the reason, and left out: the other tools still load, as in MCP clients. A plan that
uses one of its tools is then rejected as naming an unknown tool. With ``strict=True`` the failure
raises :class:`~toolplan.tools.mcp.MCPServerUnavailable` instead (exit code 3).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from toolplan._blocking import run_blocking
from toolplan.config import Settings
from toolplan.tools.catalog import RESERVED_TOOL_NAMES, ToolCatalog, load_tool_modules
from toolplan.tools.sources import ToolSources

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from toolplan.tools.mcp import MCPServerUnavailable

DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds an MCP server may take to start and list its tools."""

__all__ = [
    "McpConfig",
    "ToolsArg",
    "aload_catalog",
    "load_catalog",
    "resolve_catalog",
    "warn_on_stderr",
]

McpConfig = str | Path | Mapping[str, Any]
"""An ``mcpServers`` JSON file, or the parsed mapping."""

ToolsArg: TypeAlias = "ToolCatalog | Iterable[BaseTool | Callable[..., Any] | str] | None"
"""What a ``tools=`` argument may be: a catalog, tools, functions and module names, or ``None``."""


def warn_on_stderr(message: str) -> None:
    """The default warning for a server that could not be loaded."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


async def aload_catalog(
    settings: Settings,
    *,
    mcp_config: McpConfig | None = None,
    strict: bool = False,
    warn: Callable[[str], None] = warn_on_stderr,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
) -> ToolCatalog:
    """The catalog of ``settings.tool_modules`` plus the tools of every MCP server configured
    (``mcp_config``, else ``settings.mcp_config``).

    MCP tools are tagged ``mcp`` and ``mcp:<server>``, and their source is ``mcp:<server>``.
    """
    catalog = load_tool_modules(settings.tool_modules)
    catalog.origin = ToolSources.of(settings, mcp_config)
    if mcp_config is None:
        mcp_config = settings.mcp_config
    if mcp_config is None:
        return catalog
    # The MCP client (httpx, anyio, the mcp SDK) is imported only when servers are configured.
    from toolplan.tools.mcp import load_mcp_config, load_mcp_tools

    servers = load_mcp_config(mcp_config)

    def report(error: MCPServerUnavailable) -> None:
        warn(f"{error.message}; continuing without its tools")

    loaded = await load_mcp_tools(
        servers, startup_timeout=startup_timeout, on_error=None if strict else report
    )
    for name, tools in loaded.items():
        catalog.add(tools, source=f"mcp:{name}")
    return catalog


def load_catalog(
    settings: Settings,
    *,
    mcp_config: McpConfig | None = None,
    strict: bool = False,
    warn: Callable[[str], None] = warn_on_stderr,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
) -> ToolCatalog:
    """Sync form of :func:`aload_catalog` (MCP tools keep no session, so any loop may use them)."""
    return run_blocking(
        aload_catalog(
            settings,
            mcp_config=mcp_config,
            strict=strict,
            warn=warn,
            startup_timeout=startup_timeout,
        )
    )


def resolve_catalog(
    tools: ToolsArg = None, *, settings: Settings | None = None, drop_reserved: bool = False
) -> ToolCatalog:
    """The :class:`ToolCatalog` for any ``tools=`` argument of the Python API.

    A catalog is used as is; ``None`` means the configured tools (:func:`load_catalog` on
    ``settings``, default :meth:`Settings.from_env`); a list may mix LangChain tools, plain
    functions and module names. With ``drop_reserved``, tools named like the plan executor are
    left out instead of rejected (an agent's tool list may hold the ``execute_plan`` tool itself).
    """
    if isinstance(tools, ToolCatalog):
        return tools
    if tools is None:
        return load_catalog(settings or Settings.from_env())
    items = list(tools)
    if drop_reserved:
        from langchain_core.tools import BaseTool

        items = [
            t for t in items if not (isinstance(t, BaseTool) and t.name in RESERVED_TOOL_NAMES)
        ]
    catalog = load_tool_modules([t for t in items if isinstance(t, str)])
    catalog.add([t for t in items if not isinstance(t, str)])
    return catalog
