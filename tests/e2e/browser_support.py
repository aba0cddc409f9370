"""A real ``toolplan serve`` process (for the plan-page tests and the API's process tests) and a
real browser (Playwright driving Debian's chromium, installed by ``scripts/browser.sh``).

Without Playwright or ``/usr/bin/chromium`` the tests skip, which ``tests/conftest.py`` turns into
a failure under ``CI``: there the browser run must happen.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.e2e.conftest import Cli
from tests.support.ports import on_a_free_port, wait_until_serving

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = Path("/usr/bin/chromium")
EXPECT_TIMEOUT_MS = 30_000
"""How long a Playwright expectation waits: a guard against hangs on a busy 2-core machine, not
a timing assertion (each expectation ends as soon as the page shows what it waits for)."""


def launch_browser() -> Iterator[Browser]:
    """Chromium under Playwright, or a skip saying what is missing."""
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: pip install -e '.[dev]'")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: bash scripts/browser.sh installs it")
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Served:
    """``toolplan serve`` in a process of its own, its output in a file (never a full pipe)."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    token: str | None = None

    def gql(self, operation: str, **variables: Any) -> dict[str, Any]:
        """``data`` of a GraphQL operation that must succeed."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        response = httpx.post(
            f"{self.url}/graphql",
            json={"query": operation, "variables": variables},
            headers=headers,
            timeout=60,
        )
        body = response.json()
        assert "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data

    def answering(self) -> bool:
        """It answers HTTP (a process that only holds the port accepts connections too)."""
        try:
            httpx.get(f"{self.url}/ui/plans", timeout=1)
        except httpx.TransportError:
            return False
        return True

    def stop(self) -> str:
        """SIGTERM, wait; the server's log."""
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        return self.log.read_text(errors="replace")


def serve(cli: Cli, *args: str, token: str | None = None) -> Served:
    """Start ``toolplan serve *args`` on a free port (a new one if another process takes the first
    before the server binds it) with ``cli``'s store and test tools; return once it answers."""
    env = dict(cli.env)
    if token:
        env["TOOLPLAN_API_TOKEN"] = token

    def launch(port: int) -> Served:
        log = cli.tmp / f"serve-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                cli.argv("serve", "--port", str(port), *args),
                env=env,
                cwd=cli.tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        served = Served(process, f"http://127.0.0.1:{port}", log, token)
        wait_until_serving(process, served.answering, log, timeout=120, what="toolplan serve")
        return served

    return on_a_free_port(launch)
