"""A small MCP server for tests, built with the ``mcp`` package's FastMCP.

Run it over stdio (what an MCP client spawns) or streamable HTTP on a given port::

    python tests/support/mcp_server.py stdio
    python tests/support/mcp_server.py http --port 8765   # serves http://127.0.0.1:8765/mcp
    python tests/support/mcp_server.py stdio --prefix s_   # tools s_add, s_lookup_user, ...

Its tools cover the shapes toolplan must handle: JSON objects, lists, plain text, numbers, a tool
error (``isError``), a slow tool (to kill the server while a call is in flight) and one that
kills its own process mid-call. When ``$MCP_TEST_LOG`` is set, every call is appended to that
file as one JSON line, so a test can see what the server was asked, and when.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError


def _log(tool: str, **arguments: Any) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        line = {"tool": tool, "args": arguments, "pid": os.getpid(), "t": time.time()}
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    _log("add", a=a, b=b)
    return a + b


def lookup_user(user_id: str) -> dict[str, Any]:
    """Look up a user by ID. Returns {"id", "name", "email", "tags"}."""
    _log("lookup_user", user_id=user_id)
    return {
        "id": user_id,
        "name": f"User {user_id}",
        "email": f"{user_id}@example.test",
        "tags": ["alpha", "beta"],
    }


def list_orders(email: str, limit: int = 3) -> list[dict[str, Any]]:
    """List the latest orders of the customer with this email (newest first)."""
    _log("list_orders", email=email, limit=limit)
    return [{"order": f"o-{n}", "email": email, "total": 10 * n} for n in range(1, limit + 1)]


def shout(text: str) -> str:
    """Return `text` in upper case (a plain-text result)."""
    _log("shout", text=text)
    return text.upper()


def json_text(payload: str) -> str:
    """Return `payload` unchanged: a tool whose text result happens to be JSON."""
    _log("json_text", payload=payload)
    return payload


def fail(message: str) -> str:
    """Always fail with `message` (an MCP tool error, isError=true)."""
    _log("fail", message=message)
    raise ToolError(message)


async def slow(seconds: float, label: str = "slow") -> dict[str, Any]:
    """Sleep for `seconds`, then return {"label": label}."""
    _log("slow", seconds=seconds, label=label)
    await asyncio.sleep(seconds)
    return {"label": label}


def crash(code: int = 3) -> str:
    """Kill the server process in the middle of the call."""
    _log("crash", code=code)
    os._exit(code)


TOOLS = [add, lookup_user, list_orders, shout, json_text, fail, slow, crash]


def build(prefix: str = "") -> FastMCP:
    """The server, with every tool name prefixed by ``prefix`` (two servers can then share one
    catalog)."""
    server = FastMCP("toolplan-test", log_level="WARNING")
    for function in TOOLS:
        server.tool(name=prefix + function.__name__)(function)
    return server


def main() -> None:
    """Serve over stdio or streamable HTTP."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefix", default="", help="prefix of every tool name")
    args = parser.parse_args()
    server = build(args.prefix)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.settings.port = args.port
        server.run("streamable-http")


if __name__ == "__main__":
    main()
