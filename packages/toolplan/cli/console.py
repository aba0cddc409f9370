"""The CLI's output streams, and what happens when their reader goes away.

``toolplan run --file plan.json | head -2`` closes stdout after two lines; ``2>&1 | head`` closes
stderr, where progress goes, in the middle of a run. Output is never part of a run: the plan runs
to its end either way and its step records are the truth. So a write to a pipe whose reader has
left does not raise. The stream is pointed at ``os.devnull`` (what is still buffered, and the
interpreter's own flush at exit, then have nowhere to fail: no "Exception ignored ...
BrokenPipeError"), later writes vanish, and the command ends quietly with its own exit code, as
``git log | head`` does.
"""

from __future__ import annotations

import os
from typing import IO, Any

from rich.console import Console

__all__ = ["PipeConsole", "stop_writing"]


def stop_writing(stream: IO[str] | None) -> None:
    """The reader of ``stream`` went away: send what is still buffered, and every later write, to
    ``os.devnull`` (the standard recipe of the Python docs, note on SIGPIPE)."""
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError):  # no file descriptor (a test's capture buffer), or closed
        return
    if fd < 0:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class PipeConsole(Console):
    """A rich console that goes quiet when its reader goes away.

    rich's default (``Console.on_broken_pipe``) raises ``SystemExit(1)`` from inside whatever was
    printing, and silences stdout even when the pipe that broke is stderr: a progress line
    printed in the middle of a run ended the process there, with steps left ``running``."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._options = options

    def reset(self) -> None:
        """Read the environment (``COLUMNS``, ``NO_COLOR``, ``TERM``...) and the terminal again,
        as a new process would: rich reads them once, when the console is built, and the CLI
        builds its consoles at import. For hosts that run the CLI more than once in one process
        (the end-to-end tests run it in-process)."""
        Console.__init__(self, **self._options)

    def on_broken_pipe(self) -> None:
        """Stop writing to this console's stream; the command goes on."""
        self.quiet = True
        stop_writing(self.file)
