"""Real store faults for tests: a process holding the SQLite write lock, a read-only store file,
a file-size limit (``prlimit --fsize``, what a full disk looks like to a process).

Nothing here patches toolplan: each fault is an operating-system condition that the CLI
subprocesses under test meet as an operator would.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["GATED_PLAN", "LockHolder", "file_size_limit", "read_only_file", "wait_for_call"]

GATED_PLAN: dict[str, Any] = {
    "steps": [
        {"id": "first", "tool": "sleepy", "parameters": {"label": "first"}},
        {"id": "blocked", "tool": "gate", "parameters": {"label": "{{first.label}}"}},
        {"id": "last", "tool": "echo", "parameters": {"value": "{{blocked.label}}"}},
    ]
}
"""``first`` finishes, ``blocked`` waits for the test's gate file, ``last`` needs both: a fault
injected while ``blocked`` waits interrupts a run with one finished and one running step."""


def wait_for_call(calls: Callable[[], list[dict[str, Any]]], step: str, process: Any) -> None:
    """Wait until the test tools logged a call of ``step`` (``process`` must stay alive)."""
    deadline = time.monotonic() + 30
    while not any(c["step"] == step for c in calls()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"step {step!r} never started"
        time.sleep(0.02)


_HOLD_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()          # hold the write lock until the test closes our stdin
db.execute("ROLLBACK")
"""


class LockHolder:
    """Another process that holds the SQLite write lock (``BEGIN IMMEDIATE``) until released."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> LockHolder:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Start the holder and return once it has the lock."""
        self._process = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        assert line.strip() == "locked", self._process.communicate(timeout=10)

    def release(self) -> None:
        """Let the lock go (the holder rolls back and exits)."""
        if self._process is None:
            return
        process, self._process = self._process, None
        with contextlib.suppress(Exception):
            process.communicate(input="", timeout=10)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def _can_write(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as error:
        if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return False
        raise
    os.close(fd)
    return True


@contextlib.contextmanager
def read_only_file(path: Path) -> Iterator[str]:
    """Make ``path`` really read-only for every process, root included; yields how it was done.

    An unprivileged user gets ``chmod 0444``. Root ignores permission bits (a ``chmod``-ed file
    is still writable by root, and CI runs as root), so there the file gets the immutable
    attribute (``chattr +i``), which the kernel enforces for root too. Either way the test
    checks that the file cannot be opened for writing before relying on it; a filesystem that
    supports neither skips the test with the reason.
    """
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield "chmod 0444"
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root without chattr: cannot make a file read-only for root")
    done = subprocess.run([chattr, "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"running as root and chattr +i is refused here: {done.stderr.strip()}")
    try:
        assert not _can_write(path), "chattr +i did not make the file read-only"
        yield "chattr +i"
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def file_size_limit(limit_bytes: int) -> list[str]:
    """A command prefix that runs a process with ``RLIMIT_FSIZE`` (``prlimit --fsize``): writes
    past ``limit_bytes`` in any file fail with ``EFBIG``, as writes fail on a full disk."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("prlimit (util-linux) is not installed")
    return [prlimit, f"--fsize={limit_bytes}", "--"]
