"""``Toolplan`` and ``AsyncToolplan`` mirror each other, as httpx's ``Client`` and ``AsyncClient``
do: the same methods with the same arguments, one blocking, one awaited, with the same results."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest

from toolplan import AsyncToolplan, Toolplan

PLAN = Path(__file__).resolve().parents[2] / "examples" / "blog_chain.json"


def _calls(cls: type) -> dict[str, Any]:
    """The public methods a class defines itself (its calls, not its inherited parts)."""
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def test_the_same_methods_with_the_same_arguments() -> None:
    sync, aio = _calls(Toolplan), _calls(AsyncToolplan)
    assert set(sync) == set(aio) and len(sync) == 17
    for name in sync:
        assert not inspect.iscoroutinefunction(sync[name]), name
        assert inspect.iscoroutinefunction(aio[name]), name
        assert inspect.signature(sync[name]).parameters == inspect.signature(aio[name]).parameters
        assert inspect.signature(sync[name]).return_annotation == (
            inspect.signature(aio[name]).return_annotation
        )


def _journey(tp: Any, call: Any) -> dict[str, Any]:
    """The same calls on either client (``call`` awaits the async client's coroutines): what
    each returned, as JSON where it has one, without the IDs and times that differ."""
    analysis = call(tp.validate(PLAN))
    ref = call(tp.submit(PLAN, query="a blog"))
    result = call(tp.execute(ref.plan_id))
    again = call(tp.result(ref.plan_id))
    shown = call(tp.show(ref.plan_id))
    page = call(tp.list_plans(limit=5))
    diagram = call(tp.diagram(ref.plan_id))
    tools = call(tp.tools(tag="blog"))
    outcome = call(tp.run(PLAN))
    cancelled = call(tp.cancel(outcome.plan_id, wait=0))
    cleared = call(tp.clear_cache())
    return {
        "types": [type(value).__name__ for value in (analysis, ref, result, again, page, outcome)],
        "layers": analysis.layers,
        "ref": ref.status,
        "result": [(s.id, s.status) for s in result.steps] + [result.status],
        "again": again.status if again is not None else None,
        "shown": sorted(shown),
        "page": len(page.items),
        "diagram": diagram.replace(ref.plan_id, "P").splitlines()[0],
        "tools": [info.name for info in tools],
        "outcome": (outcome.status, sorted(outcome.outputs)),
        "cancelled": cancelled.status,
        "cleared": cleared,
    }


def test_the_same_results(tmp_path: Path) -> None:
    with Toolplan(tools=["blog"], store=f"sqlite:///{tmp_path / 'sync.db'}") as tp:
        sync = _journey(tp, lambda value: value)
    loop = asyncio.new_event_loop()  # every coroutine of the async client on one loop
    try:
        client = AsyncToolplan(tools=["blog"], store=f"sqlite:///{tmp_path / 'async.db'}")
        aio = _journey(client, loop.run_until_complete)
        loop.run_until_complete(client.aclose())
    finally:
        loop.close()
    assert aio == sync
    assert sync["outcome"] == ("succeeded", ["blog", "comment"])


@pytest.mark.parametrize("where", ["no loop", "inside a running loop"])
def test_a_sync_client_works_inside_and_outside_an_event_loop(tmp_path: Path, where: str) -> None:
    # A notebook runs a loop: a sync call there runs in a worker thread of its own.
    with Toolplan(tools=["blog"], store=f"sqlite:///{tmp_path / 'tp.db'}") as tp:
        if where == "no loop":
            outcome = tp.run(PLAN)
        else:

            async def inside() -> Any:
                return tp.run(PLAN)

            outcome = asyncio.run(inside())
        assert outcome.status == "succeeded"
        assert tp.run(PLAN).status == "succeeded"  # a second loop, the same client
