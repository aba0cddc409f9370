"""One checkpointer kept open for a long-lived caller (the API server, a worker, a batch).

A store whose checkpointer costs a connection to open (SQLite: an ``aiosqlite`` thread, a connect
and the schema check, milliseconds per execution) keeps one per event loop while a caller is
inside :meth:`KeptCheckpointers.keep`; its ``checkpointer()`` then hands out that one instead of
opening a new one. It is opened on first use (a store that is down when the server starts only
fails the executions that need it) and closed when the caller leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KeptCheckpointers"]


@dataclass
class _Kept:
    stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    saver: Any = None


class KeptCheckpointers:
    """Per event loop, the checkpointer kept open while someone keeps it."""

    def __init__(self, open_saver: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        self._open = open_saver
        self._kept: dict[asyncio.AbstractEventLoop, _Kept] = {}

    @asynccontextmanager
    async def keep(self) -> AsyncIterator[None]:
        """While inside, :meth:`saver` in this event loop shares one open checkpointer (nested
        calls share the outer one)."""
        loop = asyncio.get_running_loop()
        if loop in self._kept:
            yield
            return
        kept = self._kept[loop] = _Kept()
        try:
            yield
        finally:
            del self._kept[loop]
            await kept.stack.aclose()

    async def saver(self) -> Any | None:
        """The checkpointer kept for the running event loop (opened now if it is the first
        use), or ``None`` when nobody keeps one."""
        kept = self._kept.get(asyncio.get_running_loop())
        if kept is None:
            return None
        async with kept.opening:
            if kept.saver is None:
                kept.saver = await kept.stack.enter_async_context(self._open())
        return kept.saver
