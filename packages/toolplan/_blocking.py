"""Run a coroutine to completion from sync code, whether or not this thread runs an event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` here, or in a worker thread when this thread already runs a loop (a sync
    tool called from async code), since a running loop cannot be re-entered."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolplan-blocking") as pool:
        return pool.submit(asyncio.run, coroutine).result()
