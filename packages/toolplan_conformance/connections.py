"""Other connections to a store under test, as other processes would have them: one to reopen it
(what a crashed process left behind is what the next one reads) and several racing in threads
(concurrent claims, transitions, cache writes). Each opens the URI again with
:func:`toolplan.store.open_store`, so it gets its own connection, never the test's."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

from toolplan.store import Store, open_store

__all__ = ["in_threads", "other_store"]


@contextmanager
def other_store(uri: str) -> Iterator[Store]:
    """Another connection to the same store, as another process would have."""
    with closing(open_store(uri)) as store:
        yield store


def in_threads(uri: str, count: int, work: Callable[[Store, int], Any]) -> list[Any]:
    """Run ``work(store, i)`` in ``count`` threads, each on its own store, released together."""
    stores = [open_store(uri) for _ in range(count)]
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(stores[i], i)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for store in stores:
            store.close()
    if errors:
        raise errors[0]
    return results
