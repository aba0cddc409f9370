"""How a LangGraph node finds its context: the runtime context it was invoked with, else the
graph's default (LangGraph Studio passes a JSON context that leaves it unset).

Shared by every graph (planning, execution, agent), below all of them: a graph's nodes are
``node(state, ctx)`` functions, bound to a resolver once when the graph is built.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from langgraph.runtime import Runtime

from toolplan.errors import InvalidInput

__all__ = ["bind_context", "context_resolver"]

C = TypeVar("C")
S = TypeVar("S")
R = TypeVar("R")


def context_resolver(
    attribute: str, default: Callable[[], C] | None, *, graph: str
) -> Callable[[Runtime[Any] | None], Awaitable[C]]:
    """How a graph's nodes find their context: the ``attribute`` of the runtime context they
    were invoked with, else ``default()`` (LangGraph Studio passes a JSON context that leaves it
    unset). ``default`` runs in a thread: building a context opens the store and imports tools,
    and the nodes are async (``langgraph dev`` forbids blocking the event loop)."""

    async def resolve(runtime: Runtime[Any] | None) -> C:
        given = runtime.context if runtime is not None else None
        found = getattr(given, attribute, None) if given is not None else None
        if found is not None:
            return cast(C, found)
        if default is None:
            raise InvalidInput(
                f"the {graph} graph was invoked without its context: pass "
                f"context=...(**{{{attribute!r}: ...}}), or build the graph with a "
                "default_context (toolplan.adapters.studio does, from the environment)"
            )
        return await asyncio.to_thread(default)

    return resolve


def bind_context(
    node: Callable[[S, C], Awaitable[R]], resolve: Callable[[Runtime[Any] | None], Awaitable[C]]
) -> Any:
    """``node(state, ctx)`` as a LangGraph node ``(state, runtime)`` whose context ``resolve``
    finds. (Typed ``Any``: LangGraph's node protocols do not describe a wrapper.)"""

    async def run(state: S, runtime: Runtime[Any]) -> R:
        return await node(state, await resolve(runtime))

    run.__name__ = run.__qualname__ = node.__name__
    run.__doc__ = node.__doc__
    return run
