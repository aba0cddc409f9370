"""MCP over HTTP honours the environment's proxy settings (``HTTP_PROXY`` / ``NO_PROXY``).

A real forward proxy process (``tests/support/http_proxy.py``) logs every request it forwards; an
MCP server process serves streamable HTTP on loopback. With ``HTTP_PROXY`` set, loading the
catalog and calling a tool must go through the proxy; with ``NO_PROXY`` naming the host, not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.mcp_http import HttpServer, start_http_server
from toolplan.config import Settings
from toolplan.tools.loading import aload_catalog

LOCAL = Settings(tool_modules=("tests.support.tools",))

pytestmark = pytest.mark.e2e

PROXY = Path(__file__).resolve().parents[1] / "support" / "http_proxy.py"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@dataclass
class Proxy:
    process: subprocess.Popen[str]
    url: str
    log: Path

    def requests(self) -> list[dict[str, str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[Proxy]:
    log = tmp_path / "proxy.jsonl"
    process = subprocess.Popen(
        [sys.executable, str(PROXY), "--log", str(log)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line.startswith("PROXY_URL="), line
    yield Proxy(process, line.removeprefix("PROXY_URL="), log)
    process.kill()
    process.wait(timeout=10)


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = start_http_server(tmp_path)
    yield server
    server.kill()


@pytest.fixture
def clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


async def _call_add(server: HttpServer) -> object:
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": {"remote": {"url": server.url}}})
    return await catalog.get("add").ainvoke({"a": 2, "b": 3})


async def test_http_mcp_traffic_goes_through_the_environment_proxy(
    mcp_server: HttpServer, proxy: Proxy, clean_proxy_env: pytest.MonkeyPatch
) -> None:
    clean_proxy_env.setenv("HTTP_PROXY", proxy.url)
    assert await _call_add(mcp_server) == 5
    proxied = [r for r in proxy.requests() if r["url"] == mcp_server.url]
    # the catalog load (initialize, list tools) and the call each POST through the proxy
    assert len([r for r in proxied if r["method"] == "POST"]) >= 4, proxy.requests()
    assert [c["tool"] for c in mcp_server.calls()] == ["add"]


async def test_no_proxy_bypasses_the_proxy(
    mcp_server: HttpServer, proxy: Proxy, clean_proxy_env: pytest.MonkeyPatch
) -> None:
    clean_proxy_env.setenv("HTTP_PROXY", proxy.url)
    clean_proxy_env.setenv("NO_PROXY", "127.0.0.1")
    assert await _call_add(mcp_server) == 5
    assert proxy.requests() == []
