"""Plan reuse reads its index by lookup keys, not by scanning it: a parametric lookup finds a
pattern whatever its fixed ends look like (none, short, longer than a key holds, punctuation),
and reads only the entries whose ends the query has, however many plans are stored."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.reuse_lookup import comparison_plan

from toolplan.planning.reuse import find_reusable
from toolplan.runs.context import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.service.plan_index import INDEX
from toolplan.service.wiring import resolve_catalog
from toolplan.store import Store, open_store
from toolplan.tools.catalog import ToolCatalog


class CountingStore:
    """The store, counting the index entries each ``find_records`` returns."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.returned: list[int] = []

    def find_records(self, collection: str, where: Any, **kwargs: Any) -> list[dict[str, Any]]:
        found = self._store.find_records(collection, where, **kwargs)
        if collection == INDEX:
            self.returned.append(len(found))
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'reuse.db'}")
    yield opened
    opened.close()


def stored(store: Store, catalog: ToolCatalog, query: str, a: str, b: str, run: bool) -> str:
    ref = submit_plan(
        comparison_plan(a, b),
        store=store,
        catalog=catalog,
        query=query,
        max_steps=10,
        reusable=True,
    )
    if run:
        result = asyncio.run(execute_stored_plan(ref.plan_id, ExecutionContext(store, catalog)))
        assert result.status == "succeeded"
    return ref.plan_id


LONG = "For the quarterly travel planning report of the whole team, compare the weather in"
CASES = [
    # stored query, a new query with other values
    ("Tokyo and London: compare their weather", "Paris and Oslo: compare their weather"),
    ("Compare the weather in Tokyo and London", "compare the weather in Paris and Oslo."),
    (
        f"{LONG} Tokyo and London, then summarise it all",
        f"{LONG} Paris and Oslo, then summarise it all",
    ),
    ("Weather: Tokyo vs London", "WEATHER: Paris vs Oslo"),
    ("Is it warmer in 'Tokyo' or (London)?", "Is it warmer in 'Paris' or (Oslo)"),
]


def test_parametric_lookup_finds_every_shape_of_pattern_and_reads_only_its_ends(
    store: Store,
) -> None:
    catalog = resolve_catalog(["weather"])
    for i in range(120):  # other plans of the same catalog: one prefix, 120 suffixes
        query = f"Check the forecast on Tokyo and London for run {i}"
        stored(store, catalog, query, "Tokyo", "London", False)
    counting = CountingStore(store)
    for query, other in CASES:
        plan_id = stored(store, catalog, query, "Tokyo", "London", True)
        found = find_reusable(counting, other, catalog, "parametric")  # type: ignore[arg-type]
        assert found is not None, (query, other)
        assert found.source.plan_id == plan_id and found.mode == "parametric"
        assert found.values == {"Tokyo": "Paris", "London": "Oslo"}
        assert counting.returned[-1] == 1  # its own entry, not the 120 others
        exact = find_reusable(counting, query.upper(), catalog, "exact")  # type: ignore[arg-type]
        assert exact is not None and exact.source.plan_id == plan_id
        assert counting.returned[-1] == 1
    # text no stored pattern starts or ends with reads nothing
    assert find_reusable(counting, "Plot the humidity of Lima", catalog, "parametric") is None  # type: ignore[arg-type]
    assert counting.returned[-1] == 0
    # of the 120 plans with one prefix, the suffix selects one (it never ran: not reused)
    query = "Check the forecast on Rome and Lima for run 7"
    assert find_reusable(counting, query, catalog, "parametric") is None  # type: ignore[arg-type]
    assert counting.returned[-1] == 1
