"""Process-wide caches, registered so that one call empties them all (tests, long-lived hosts
that change configuration). At the bottom of the layers: any module may register a cache."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["clear_caches", "register_cache"]

_CACHE_CLEARERS: list[Callable[[], None]] = []


def register_cache(clear: Callable[[], None]) -> None:
    """Register the ``clear`` function of a process-wide cache, so :func:`clear_caches` empties it.

    Every such cache must be keyed by what it depends on (the :class:`Settings`, a store object,
    a directory), never by nothing: a changed environment must give a fresh entry, not a stale one.
    """
    _CACHE_CLEARERS.append(clear)


def clear_caches() -> None:
    """Empty every process-wide cache (default graph contexts, prompts, tool statistics).

    For tests and long-lived hosts that change configuration; objects the caches held (stores
    opened for default contexts) are not closed.
    """
    for clear in _CACHE_CLEARERS:
        clear()
