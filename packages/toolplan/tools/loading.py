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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from toolplan._blocking import run_blocking
from toolplan.tools.catalog import ToolCatalog, load_tool_modules
from toolplan.tools.sources import ToolSources

if TYPE_CHECKING:
    from toolplan.tools.mcp import MCPServerUnavailable


__all__ = [
    "McpConfig",
    "ToolSettings",
    "aload_catalog",
    "load_catalog",
    "warn_on_stderr",
]

McpConfig = str | Path | Mapping[str, Any]
"""An ``mcpServers`` JSON file, or the parsed mapping."""


class ToolSettings(Protocol):
    """Where a catalog's tools come from (what :class:`~toolplan.config.Settings` says)."""

    @property
    def tool_modules(self) -> Sequence[str]: ...

    @property
    def mcp_config(self) -> str | None: ...


def warn_on_stderr(message: str) -> None:
    """The default warning for a server that could not be loaded."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


async def aload_catalog(
    settings: ToolSettings,
    *,
    mcp_config: McpConfig | None = None,
    strict: bool = False,
    warn: Callable[[str], None] = warn_on_stderr,
    startup_timeout: float | None = None,
) -> ToolCatalog:
    """The catalog of ``settings.tool_modules`` plus the tools of every MCP server configured
    (``mcp_config``, else ``settings.mcp_config``).

    MCP tools are tagged ``mcp`` and ``mcp:<server>``, and their source is ``mcp:<server>``.
    """
    catalog = load_tool_modules(settings.tool_modules)
    if mcp_config is None:
        mcp_config = settings.mcp_config
    catalog.origin = ToolSources.of(settings.tool_modules, mcp_config)
    if mcp_config is None:
        return catalog
    # The MCP client (httpx, anyio, the mcp SDK) is imported only when servers are configured.
    from toolplan.tools.mcp import DEFAULT_STARTUP_TIMEOUT, load_mcp_config, load_mcp_tools

    servers = load_mcp_config(mcp_config)

    def report(error: MCPServerUnavailable) -> None:
        warn(f"{error.message}; continuing without its tools")

    loaded = await load_mcp_tools(
        servers,
        startup_timeout=DEFAULT_STARTUP_TIMEOUT if startup_timeout is None else startup_timeout,
        on_error=None if strict else report,
        on_clash=warn,
    )
    for name, tools in loaded.items():
        catalog.add(tools, source=f"mcp:{name}")
    return catalog


def load_catalog(
    settings: ToolSettings,
    *,
    mcp_config: McpConfig | None = None,
    strict: bool = False,
    warn: Callable[[str], None] = warn_on_stderr,
    startup_timeout: float | None = None,
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
