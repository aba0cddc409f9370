"""An MCP server process on streamable HTTP (``tests/support/mcp_server.py http``), for tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support.ports import on_a_free_port, wait_until_serving

SERVER = Path(__file__).resolve().parent / "mcp_server.py"


@dataclass
class HttpServer:
    """One MCP server process on streamable HTTP."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


def start_http_server(tmp: Path) -> HttpServer:
    """The MCP test server on streamable HTTP, on a free port (a new one if another process takes
    the first before the server binds it); returns once it answers."""
    log = tmp / "mcp-http.jsonl"
    return on_a_free_port(lambda port: _launch(port, tmp, log))


def _launch(port: int, tmp: Path, log: Path) -> HttpServer:
    output = tmp / f"mcp-http-{port}.stderr"  # the server logs each closed session there
    with output.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(SERVER), "http", "--port", str(port)],
            env={**os.environ, "MCP_TEST_LOG": str(log)},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        # An HTTP answer, not just a connection: the process holding a taken port accepts those.
        try:
            httpx.get(url, timeout=1)
        except httpx.TransportError:
            return False
        return True

    wait_until_serving(process, answering, output, timeout=30, what="the MCP server")
    return HttpServer(process, f"{url}/mcp", log)
