"""Ports for test servers: one that is free now, and a new one when another process takes it first.

A port chosen free (bind port 0, read it, close) stays free only until someone binds it. A server
started on it binds it a moment later, and on a busy machine another process can take it in
between: the server then exits saying "address already in use". A helper that starts a server on a
chosen port wraps its launch in :func:`on_a_free_port`; the launch waits with
:func:`wait_until_serving`, which raises :class:`PortTaken` when that happened, and the launch runs
again on a new free port.

Usage::

    def launch(port: int) -> Thing:
        process = subprocess.Popen([..., "--port", str(port)], stdout=log, stderr=STDOUT)
        wait_until_serving(process, answering, log_path, timeout=30, what="the thing")
        return Thing(process, port)

    thing = on_a_free_port(launch)
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pytest

PORT_ATTEMPTS = 5
"""Launches, each on a new free port, before giving up: losing the race once is bad luck, five
times in a row is something else (and the error says what the server printed)."""

T = TypeVar("T")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing was bound to a moment ago: for a server that needs its
    port up front (start it with :func:`on_a_free_port`), or an address where nothing answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PortTaken(Exception):
    """A server exited because another process holds its port."""


class ServerDidNotStart(RuntimeError):
    """A test server exited, or did not serve in time, for a reason other than a taken port."""


def port_taken(output: str) -> bool:
    """Whether a server's output says it could not bind its port: uvicorn (``toolplan serve``,
    FastMCP, ``langgraph dev``) prints "[Errno 98] error while attempting to bind on address
    (...): address already in use", Go servers "bind: address already in use"."""
    return "address already in use" in output.lower()


def on_a_free_port(launch: Callable[[int], T], *, attempts: int = PORT_ATTEMPTS) -> T:
    """``launch(port)`` on a free port; while it raises :class:`PortTaken`, again on a new one
    (``attempts`` launches in all, then the last :class:`PortTaken` propagates)."""
    for attempt in range(1, attempts + 1):
        try:
            return launch(free_port())
        except PortTaken:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def wait_until_serving(
    process: subprocess.Popen[Any],
    ready: Callable[[], bool],
    log: Path,
    *,
    timeout: float,
    what: str,
    since: int = 0,
) -> None:
    """Poll ``ready()`` until it is true.

    If ``process`` exits first, raise :class:`PortTaken` when its ``log`` says its port was taken,
    else :class:`ServerDidNotStart` with the log. After ``timeout`` seconds, kill it and raise
    :class:`ServerDidNotStart`. ``ready`` should wait for an answer, not just a connection: a
    process that merely holds the port accepts connections too. ``since``: where this launch's
    output starts in ``log``, for a log that earlier launches wrote to as well.
    """
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            said = _said(log, since)
            message = f"{what} exited with {process.returncode}:\n{said[-3000:]}"
            if port_taken(said):
                raise PortTaken(message)
            raise ServerDidNotStart(message)
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            said = _said(log, since)
            raise ServerDidNotStart(f"{what} did not serve within {timeout:g}s:\n{said[-3000:]}")
        time.sleep(0.05)


def _said(log: Path, since: int) -> str:
    with log.open("rb") as output:
        output.seek(since)
        return output.read().decode(errors="replace")


# -- for the tests of the helpers: the race, lost on purpose ---------------------------------------


@contextmanager
def holding(port: int = 0) -> Iterator[int]:
    """Listen on 127.0.0.1:``port`` (0: one the OS picks), as the process that took it would;
    yield the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", port))
        held.listen()
        yield int(held.getsockname()[1])


@contextmanager
def first_pick_taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Make :func:`on_a_free_port`'s first pick a port held here (listening), as if another
    process had taken it between the pick and the server's bind; later picks are free as usual.

    Yields the list of ports picked, the taken one first: a helper that moved on after meeting
    it has picked two.
    """
    picks: list[int] = []
    pick = free_port
    with holding() as taken:

        def choose() -> int:
            picks.append(pick() if picks else taken)
            return picks[-1]

        monkeypatch.setattr(f"{__name__}.free_port", choose)
        yield picks
