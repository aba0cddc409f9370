"""An MCP server process on streamable HTTP (``tests/support/mcp_server.py http``), for tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.ports import free_port

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
    port = free_port()
    log = tmp / "mcp-http.jsonl"
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", "--port", str(port)],
        env={**os.environ, "MCP_TEST_LOG": str(log)},
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "mcp-http.stderr").open("wb"),  # the server logs each closed session
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the MCP server did not start: {process.returncode}") from None
            time.sleep(0.05)
    return HttpServer(process, f"http://127.0.0.1:{port}/mcp", log)
