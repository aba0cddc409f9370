"""MCP tool servers: read an ``mcpServers`` file and turn each server's tools into catalog tools.

The file is the one MCP clients use (Claude Desktop, Cursor, VS Code's ``servers`` key works too)::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
        "crm": {"url": "http://127.0.0.1:8000/mcp", "transport": "streamable_http",
                "headers": {"Authorization": "Bearer ${CRM_TOKEN}"}}
    }}

Connections go through ``langchain-mcp-adapters``. Every tool call opens its own MCP session (the
adapters' default): a stdio server is started per call and an HTTP server gets a fresh session
handshake. That costs a process start for stdio servers, but nothing is bound to one event loop or
one process, a restarted server is simply used again, a resumed plan needs no session state, and a
server that dies fails only the steps that call it.

Each tool is wrapped so the engine sees plain JSON outputs (structured content when the server sends
it, else text, which the engine parses when it holds JSON) and errors that name the server.

A tool name two or more servers export is prefixed by each one's server name (``files_read`` and
``backup_read``), and the loader says which; names only one server exports are kept as they are.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from toolplan._blocking import run_blocking

# The two MCP errors live in toolplan.errors; imported from here too, as before.
from toolplan.errors import InvalidInput, MCPServerError, MCPServerUnavailable

__all__ = [
    "MCP_TAG",
    "MCPServer",
    "MCPServerError",
    "MCPServerUnavailable",
    "load_mcp_config",
    "load_mcp_tools",
    "mcp_output",
    "prefix_clashes",
    "prefixed_name",
]

logger = logging.getLogger("toolplan.tools")

DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds an MCP server may take to start and list its tools."""

MCP_TAG = "mcp"
"""Tag on every MCP tool; each also carries ``mcp:<server>``."""

Transport = Literal["stdio", "streamable_http", "sse"]
"""How toolplan talks to a server: a child process on stdin/stdout, or HTTP."""

_TRANSPORTS: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "streamable_http",
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
    "sse": "sse",
}


@dataclass(frozen=True)
class MCPServer:
    """One configured server: its name and a ``langchain-mcp-adapters`` connection."""

    name: str
    transport: Transport
    connection: dict[str, Any] = field(compare=False)

    @property
    def where(self) -> str:
        """``stdio: cmd args`` or the URL, for messages."""
        if self.transport == "stdio":
            return "stdio: " + " ".join([self.connection["command"], *self.connection["args"]])
        return str(self.connection["url"])


# -- configuration -------------------------------------------------------------------------------


_BRACED_VARIABLE = re.compile(r"\$\{([^}]+)\}")


def _expand(value: str) -> str:
    """``${VAR}`` from the environment (bare ``$`` is left alone: tokens may contain it)."""
    return _BRACED_VARIABLE.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)


def _string_map(value: Any, where: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(v, str | int | float) for v in value.values()
    ):
        raise InvalidInput(f"{where}: {key!r} must be an object of strings")
    return {str(k): str(v) for k, v in value.items()}


def _server(name: str, entry: Any, origin: str) -> MCPServer:
    where = f"{origin}: server {name!r}"
    if not isinstance(entry, dict):
        raise InvalidInput(f"{where} must be an object with 'command' or 'url'")
    declared = entry.get("transport") or entry.get("type")
    if declared is None:
        declared = "stdio" if "command" in entry else "streamable_http" if "url" in entry else None
    if declared is None:
        raise InvalidInput(
            f"{where} has neither 'command' (a stdio server) nor 'url' (an HTTP server)"
        )
    transport = _TRANSPORTS.get(str(declared).lower())
    if transport is None:
        raise InvalidInput(
            f"{where}: unsupported transport {declared!r}; use stdio, streamable_http or sse"
        )
    if transport == "stdio":
        command = entry.get("command")
        args = entry.get("args", [])
        if not isinstance(command, str) or not command:
            raise InvalidInput(f"{where}: 'command' must be the executable to start, as a string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise InvalidInput(f"{where}: 'args' must be a list of strings")
        connection: dict[str, Any] = {"transport": "stdio", "command": command, "args": list(args)}
        if entry.get("env") is not None:
            connection["env"] = _string_map(entry["env"], where, "env")
        if entry.get("cwd") is not None:
            connection["cwd"] = str(entry["cwd"])
    else:
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidInput(f"{where}: 'url' must be an http:// or https:// URL, got {url!r}")
        connection = {
            "transport": transport,
            "url": url,
            "headers": {
                k: _expand(v)
                for k, v in _string_map(entry.get("headers"), where, "headers").items()
            },
            "httpx_client_factory": _watched_http_client,
        }
        if entry.get("timeout") is not None:
            if not isinstance(entry["timeout"], int | float) or entry["timeout"] <= 0:
                raise InvalidInput(f"{where}: 'timeout' must be a positive number of seconds")
            connection["timeout"] = float(entry["timeout"])
    return MCPServer(name, transport, connection)


def load_mcp_config(source: str | Path | Mapping[str, Any]) -> list[MCPServer]:
    """Read servers from an ``mcpServers`` JSON file (a path) or an already parsed mapping.

    Entries with ``"disabled": true`` are skipped; keys toolplan does not use are ignored. Raises
    :class:`~toolplan.errors.InvalidInput` naming the file, server and field that is wrong.
    """
    if isinstance(source, Mapping):
        data: Any = source
        origin = "the MCP configuration"
    else:
        path = Path(source)
        origin = f"MCP configuration {str(path)!r}"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InvalidInput(f"{origin} does not exist") from None
        except OSError as error:
            raise InvalidInput(f"cannot read {origin}: {error.strerror}") from None
        except json.JSONDecodeError as error:
            raise InvalidInput(
                f"{origin} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
            ) from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping):
        raise InvalidInput(
            f'{origin} must be an object with "mcpServers": {{"name": {{"command": ...}} or '
            '{"url": ...}}'
        )
    return [
        _server(str(name), entry, origin)
        for name, entry in servers.items()
        if not (isinstance(entry, dict) and entry.get("disabled") is True)
    ]


# -- detecting a server that dies during a call --------------------------------------------------
#
# mcp 1.x's streamable HTTP client swallows a response stream that breaks before the reply, and the
# call then waits until the read timeout (5 minutes) — modelcontextprotocol/python-sdk#1811, fixed
# in 2.x only (#3441). The HTTP clients toolplan creates report such a break to the call in flight
# through a context variable, so the step fails at once with an error naming the server.


class _Watch:
    def __init__(self) -> None:
        self.broken = asyncio.Event()
        self.error: BaseException | None = None

    def trip(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
            self.broken.set()


_CURRENT_CALL: contextvars.ContextVar[_Watch | None] = contextvars.ContextVar(
    "toolplan_mcp_call", default=None
)


class _WatchedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, watch: _Watch) -> None:
        self._inner = inner
        self._watch = watch

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx.TransportError as error:
            self._watch.trip(error)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class _WatchedTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        watch = _CURRENT_CALL.get()
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError as error:
            if watch is not None and request.method == "POST":
                watch.trip(error)  # the SDK may not hand this one to the call either
            raise
        if watch is None or not isinstance(response.stream, httpx.AsyncByteStream):
            return response
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_WatchedStream(response.stream, watch),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _watched_http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx.Timeout | None = None,
    auth: httpx.Auth | None = None,
) -> httpx.AsyncClient:
    """Like ``mcp``'s ``create_mcp_http_client``, on transports that report broken streams.

    httpx ignores ``HTTP(S)_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY`` when given a ``transport=``, so
    the client is built as usual, with the proxies the environment asks for mounted by httpx
    itself, and then each of its transports (direct and proxied) is wrapped.
    """
    client = httpx.AsyncClient(
        headers=headers, timeout=timeout or httpx.Timeout(30.0, read=300.0), auth=auth
    )
    client._transport = _WatchedTransport(client._transport)
    client._mounts = {
        pattern: None if mounted is None else _WatchedTransport(mounted)
        for pattern, mounted in client._mounts.items()
    }
    return client


# -- errors and outputs --------------------------------------------------------------------------


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _reason(error: BaseException) -> str:
    """The root cause of a connection failure, without task-group wrappers."""
    leaves = _leaves(error)
    first = next((e for e in leaves if not isinstance(e, asyncio.CancelledError)), leaves[0])
    if isinstance(first, httpx.ConnectError):
        return f"connection refused or host unreachable ({first})"
    if isinstance(first, FileNotFoundError):
        return f"command not found ({first.filename or first})"
    if isinstance(first, TimeoutError):
        return "timed out"
    # Which of these surfaces depends on timing: a stdio server that exits at once either closes
    # the session ("Connection closed") or is gone before the first write (anyio's stream errors).
    closed = isinstance(first, anyio.BrokenResourceError | anyio.ClosedResourceError)
    text = str(first) or type(first).__name__
    if closed or text == "Connection closed":
        text = "the server closed the connection (did it crash? its stderr may say why)"
    return text


def _parsed(texts: list[str]) -> Any:
    if len(texts) != 1:
        return None
    try:
        return json.loads(texts[0])
    except ValueError:
        return None


def mcp_output(content: Any, artifact: Any) -> Any:
    """A tool result as JSON for the engine.

    Structured content wins. FastMCP wraps a non-object result as ``{"result": value}``; that
    wrapper is removed unless the text content shows the tool really returned such an object.
    Without structured content: one text block is returned as text (the engine parses JSON text),
    several become a list (each parsed when it is JSON), other blocks are kept as content blocks.
    """
    blocks = content if isinstance(content, list) else [content]
    texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    structured = artifact.get("structured_content") if isinstance(artifact, dict) else None
    if isinstance(structured, dict):
        if set(structured) == {"result"} and _parsed(texts) != structured:
            return structured["result"]
        return structured
    if isinstance(content, str):
        return content
    if len(texts) == len(blocks):
        if len(texts) == 1:
            return texts[0]
        return [json.loads(t) if _parsed([t]) is not None else t for t in texts]
    return [{k: v for k, v in b.items() if k != "id"} if isinstance(b, dict) else b for b in blocks]


def _wrap(tool: BaseTool, server: MCPServer) -> BaseTool:
    """The adapter's tool, with JSON outputs, server-naming errors and disconnect detection."""
    call = getattr(tool, "coroutine", None)
    if call is None:  # pragma: no cover - the adapters always build coroutine tools
        raise TypeError(f"MCP tool {tool.name!r} has no coroutine")

    async def run(**arguments: Any) -> Any:
        watch = _Watch()
        token = _CURRENT_CALL.set(watch)
        try:
            work = asyncio.ensure_future(call(**arguments))  # the task copies the context
        finally:
            _CURRENT_CALL.reset(token)
        broken = asyncio.ensure_future(watch.broken.wait())
        try:
            await asyncio.wait({work, broken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            broken.cancel()
            if not work.done():
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
        if work.cancelled() and watch.error is not None:
            raise MCPServerError(
                f"MCP server {server.name!r} ({server.where}) disconnected while {tool.name!r} "
                f"was running: {_reason(watch.error)}",
                server=server.name,
                tool=tool.name,
            )
        try:
            content, artifact = work.result()
        except ToolException as error:  # the tool itself reported an error (isError)
            raise ToolException(f"MCP server {server.name!r}: {error}") from None
        except Exception as error:
            raise MCPServerError(
                f"MCP server {server.name!r} ({server.where}) failed when calling {tool.name!r}: "
                f"{_reason(error)}",
                server=server.name,
                tool=tool.name,
            ) from None
        return mcp_output(content, artifact)

    def run_sync(**arguments: Any) -> Any:
        return run_blocking(run(**arguments))  # no session outlives a call, so any loop will do

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema if tool.args_schema is not None else {"type": "object"},
        func=run_sync,
        coroutine=run,
        metadata={**(tool.metadata or {}), "mcp_server": server.name},
        tags=[MCP_TAG, f"{MCP_TAG}:{server.name}"],
    )


# -- loading -------------------------------------------------------------------------------------


async def _server_tools(server: MCPServer, startup_timeout: float) -> list[BaseTool]:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient(
        {server.name: server.connection},  # type: ignore[dict-item]
        handle_tool_errors=False,  # errors must fail the step, not become its output
    )
    try:
        async with asyncio.timeout(startup_timeout):
            tools = await client.get_tools(server_name=server.name)
    except Exception as error:
        raise MCPServerUnavailable(
            f"MCP server {server.name!r} ({server.where}) could not be loaded: {_reason(error)}",
            server=server.name,
        ) from None
    return [_wrap(tool, server) for tool in tools]


async def load_mcp_tools(
    servers: Iterable[MCPServer],
    *,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    on_error: Callable[[MCPServerUnavailable], None] | None = None,
    on_clash: Callable[[str], None] | None = None,
) -> dict[str, list[BaseTool]]:
    """Connect to every server at once and list its tools: server name → tools.

    A server that cannot be started or reached raises :class:`MCPServerUnavailable`, or, with
    ``on_error``, is reported to it and left out so the other servers' tools still load. A tool
    name two or more servers export is prefixed by the server's name on each of them
    (:func:`prefix_clashes`), and ``on_clash`` (default: a logged warning) is told which.
    """
    servers = list(servers)
    results = await asyncio.gather(
        *(_server_tools(server, startup_timeout) for server in servers), return_exceptions=True
    )
    loaded: dict[str, list[BaseTool]] = {}
    for server, result in zip(servers, results, strict=True):
        if isinstance(result, MCPServerUnavailable):
            if on_error is None:
                raise result
            on_error(result)
        elif isinstance(result, BaseException):
            raise result
        else:
            loaded[server.name] = result
    return prefix_clashes(loaded, on_clash)


def prefixed_name(server: str, tool: str) -> str:
    """``tool`` of ``server`` as it is named when another server exports the same name:
    ``{server}_{tool}``, the server's name reduced to the characters tool names may hold."""
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', server)}_{tool}"


def prefix_clashes(
    loaded: Mapping[str, list[BaseTool]], on_clash: Callable[[str], None] | None = None
) -> dict[str, list[BaseTool]]:
    """``loaded`` (server name → tools) with every tool name that two or more servers export
    renamed :func:`prefixed_name` on each of them, so neither is lost or chosen at random; the
    server is still called by its own name for the tool. ``on_clash`` (default: a logged
    warning) is told which names were prefixed, and as what."""
    servers_of: dict[str, list[str]] = {}
    for server, tools in loaded.items():
        for tool in tools:
            servers_of.setdefault(tool.name, []).append(server)
    clashing = {name: servers for name, servers in servers_of.items() if len(servers) > 1}
    if not clashing:
        return dict(loaded)
    renamed = {
        server: [_prefixed(tool, server) if tool.name in clashing else tool for tool in tools]
        for server, tools in loaded.items()
    }
    named = "; ".join(
        f"{name!r} as " + ", ".join(repr(prefixed_name(server, name)) for server in servers)
        for name, servers in sorted(clashing.items())
    )
    message = (
        f"{len(clashing)} MCP tool name(s) are exported by more than one server, so each is "
        f"prefixed by its server's name: {named}"
    )
    (on_clash or logger.warning)(message)
    return renamed


def _prefixed(tool: BaseTool, server: str) -> BaseTool:
    return tool.model_copy(
        update={
            "name": prefixed_name(server, tool.name),
            # The planner tells the two apart by their descriptions as well as their names.
            "description": f"{tool.description} (MCP server {server!r})",
            "metadata": {**(tool.metadata or {}), "mcp_tool": tool.name},
        }
    )
