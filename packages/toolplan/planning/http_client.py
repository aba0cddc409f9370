"""The OpenAI client's HTTP connections, one pool per event loop.

An asyncio connection belongs to the event loop that opened it. langchain-openai keeps one
``httpx`` async client per process (cached by base URL and timeout) and so hands the connection
a first ``asyncio.run`` kept alive to the next one, whose loop is another: ``RuntimeError: Event
loop is closed``. Scripts and notebooks call ``asyncio.run`` once per call, and the sync
:class:`~toolplan.client.Toolplan` runs each call in a loop of its own.

:class:`LoopBoundAsyncClient` is the client toolplan's OpenAI models are given instead: it builds
requests as openai's default client does, and sends each one through a client of the running
loop's own (built alike, on first use in that loop), so that a connection is only ever reused in
the loop that opened it. A closed loop's client is dropped with its connections.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import openai

from toolplan._caches import register_cache

__all__ = ["LoopBoundAsyncClient", "loop_bound_client"]


class LoopBoundAsyncClient(openai.DefaultAsyncHttpxClient):
    """openai's default async HTTP client whose connections belong to the running event loop.

    This client only builds the requests (base URL, headers, timeout); each is sent by the
    running loop's own client, built with the same arguments the first time that loop sends.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._options = dict(kwargs)
        self._by_loop: dict[asyncio.AbstractEventLoop, Any] = {}
        self._guard = threading.Lock()  # loops of several threads may send at once

    def _for_running_loop(self) -> Any:
        loop = asyncio.get_running_loop()
        with self._guard:
            for closed in [known for known in self._by_loop if known.is_closed()]:
                # Its connections cannot be closed without their loop; they go with the client.
                del self._by_loop[closed]
            client = self._by_loop.get(loop)
            if client is None:
                client = self._by_loop[loop] = openai.DefaultAsyncHttpxClient(**self._options)
        return client

    async def send(self, request: Any, **kwargs: Any) -> Any:
        """Send ``request`` through the running loop's client."""
        return await self._for_running_loop().send(request, **kwargs)

    async def aclose(self) -> None:
        """Close the running loop's connections (another loop's are closed with it)."""
        loop = asyncio.get_running_loop()
        with self._guard:
            client = self._by_loop.pop(loop, None)
        if client is not None:
            await client.aclose()


@functools.lru_cache(maxsize=8)
def loop_bound_client(timeout: float | None) -> LoopBoundAsyncClient:
    """The process's loop-bound client for requests of ``timeout`` seconds (as
    langchain-openai shares one client per timeout and base URL; the URL is the openai client's
    to set on each request)."""
    if timeout is None:
        return LoopBoundAsyncClient()
    return LoopBoundAsyncClient(timeout=timeout)


register_cache(loop_bound_client.cache_clear)
