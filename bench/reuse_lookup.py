"""What a plan-reuse lookup costs as the index grows: ``python -m bench.reuse_lookup [--json]``.

Fills a store's plan index (:data:`toolplan.service.plan_index.INDEX`) with ``--sizes`` plans (default 300,
3,000) of one catalog, each a real plan stored through :func:`toolplan.service.operations.submit_plan`
and indexed by :func:`toolplan.service.plan_index.index_plan`, for queries of many shapes: 48 phrasings
("Compare the weather in {a} and {b}", "Contrast the forecast for {a} and {b}", ...) times a
ticket number after the cities, so prefixes repeat and whole patterns do not. Then it times
:func:`toolplan.planning.reuse.find_reusable` (median of ``--repeats`` lookups each):

- ``exact hit`` / ``exact miss``: a stored query (its plan executed) / a query stored nowhere;
- ``parametric hit``: a stored query with other cities (its plan executed);
- ``parametric miss``: a query with a known prefix and no stored pattern;
- ``parametric, other text``: a query no stored prefix starts.

SQLite in a temporary file, and MongoDB on jongodb (or ``TOOLPLAN_TEST_MONGODB_URI``) when it
can run here. Wall times on a shared machine: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from toolplan.store.protocol import Store

__all__ = ["comparison_plan", "lookup_costs", "main"]

_VERBS = ("Compare", "Contrast", "Check", "Report", "Show", "Summarise")
_NOUNS = ("weather", "forecast", "conditions", "temperature")
_PREPOSITIONS = ("in", "for")
_CITIES = ("Tokyo", "London", "Paris", "Oslo", "Lima", "Rome", "Cairo", "Delhi", "Quito", "Seoul")


def _query(i: int, a: str, b: str) -> str:
    verb = _VERBS[i % len(_VERBS)]
    noun = _NOUNS[(i // len(_VERBS)) % len(_NOUNS)]
    preposition = _PREPOSITIONS[(i // (len(_VERBS) * len(_NOUNS))) % len(_PREPOSITIONS)]
    return f"{verb} the {noun} {preposition} {a} and {b} for ticket {i}"


def comparison_plan(a: str, b: str) -> dict[str, Any]:
    """Two weather lookups and their comparison: the plan every stored query here gets."""
    return {
        "steps": [
            {"id": "a", "tool": "get_weather", "parameters": {"location": a}},
            {"id": "b", "tool": "get_weather", "parameters": {"location": b}},
            {
                "id": "c",
                "tool": "compare_data",
                "parameters": {"data_a": "{{a}}", "data_b": "{{b}}"},
                "dependsOn": ["a", "b"],
            },
        ],
        "outputSteps": ["c"],
    }


def _cities(i: int) -> tuple[str, str]:
    a = _CITIES[i % len(_CITIES)]
    b = _CITIES[(i * 7 + 3) % len(_CITIES)]
    return (a, b) if a != b else (a, _CITIES[(i + 1) % len(_CITIES)])


def _median_ms(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def _fill(store: Store, catalog: Any, start: int, stop: int) -> None:
    from toolplan.service.operations import submit_plan
    from toolplan.service.plan_index import index_plan

    for i in range(start, stop):
        a, b = _cities(i)
        ref = submit_plan(
            comparison_plan(a, b), store=store, catalog=catalog, query=_query(i, a, b), max_steps=10
        )
        record = store.get_plan(ref.plan_id)
        assert record is not None
        index_plan(store, record, catalog)


def _execute(store: Store, catalog: Any, query: str, a: str, b: str) -> None:
    """Store, index and run one plan, so a lookup has a succeeded plan to find."""
    from toolplan.runs.context import ExecutionContext
    from toolplan.service.operations import execute_stored_plan, submit_plan
    from toolplan.service.plan_index import index_plan

    ref = submit_plan(
        comparison_plan(a, b), store=store, catalog=catalog, query=query, max_steps=10
    )
    record = store.get_plan(ref.plan_id)
    assert record is not None
    index_plan(store, record, catalog)
    result = asyncio.run(execute_stored_plan(ref.plan_id, ExecutionContext(store, catalog)))
    assert result.status == "succeeded", result.to_json()


def lookup_costs(kind: str, sizes: list[int], repeats: int) -> dict[str, dict[str, float]]:
    """``find_reusable``'s median ms per case, per index size, on a store of ``kind``."""
    from bench.backends import store_factory
    from toolplan.planning.reuse import find_reusable
    from toolplan.service.wiring import resolve_catalog

    catalog = resolve_catalog(["weather"])
    rows: dict[str, dict[str, float]] = {}
    with store_factory(kind) as fresh:
        store = fresh()
        filled = 0
        hit = "Compare the weather in Tokyo and London for ticket 999999"
        _execute(store, catalog, hit, "Tokyo", "London")
        filled_cases = {
            "exact hit": (hit.upper(), "exact", True),
            "exact miss": (
                "Compare the weather in Lima and Rome for ticket 123456789",
                "exact",
                False,
            ),
            "parametric hit": (
                "Compare the weather in Cairo and Quito for ticket 999999",
                "parametric",
                True,
            ),
            "parametric miss": (
                "Compare the weather in Cairo and Quito for ticket 123456789",
                "parametric",
                False,
            ),
            "parametric, other text": ("Plot the humidity of Oslo and Lima", "parametric", False),
        }
        for size in sizes:
            _fill(store, catalog, filled, size)
            filled = size
            row: dict[str, float] = {}
            for name, (query, mode, found) in filled_cases.items():
                reused = find_reusable(store, query, catalog, mode)  # type: ignore[arg-type]
                assert (reused is not None) == found, (name, reused)
                row[name] = _median_ms(
                    lambda q=query, m=mode: find_reusable(store, q, catalog, m), repeats
                )
            rows[str(size)] = row
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the lookup costs (``--json``: as one JSON object)."""
    parser = argparse.ArgumentParser(prog="python -m bench.reuse_lookup", description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sizes", default="300,3000", help="index sizes, ascending (300,3000)")
    parser.add_argument("--repeats", type=int, default=15, help="lookups per median (15)")
    parser.add_argument("--stores", default="sqlite,mongodb", help="sqlite,mongodb")
    args = parser.parse_args(argv)
    from bench.backends import mongo_pending_reason

    sizes = sorted(int(size) for size in args.sizes.split(","))
    results: dict[str, Any] = {"sizes": sizes, "repeats": args.repeats}
    for kind in args.stores.split(","):
        pending = mongo_pending_reason() if kind == "mongodb" else None
        results[kind] = pending or lookup_costs(kind, sizes, args.repeats)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for kind in args.stores.split(","):
        data = results[kind]
        if isinstance(data, str):
            print(f"{kind}: {data}")
            continue
        for size, row in data.items():
            cells = ", ".join(f"{name} {ms} ms" for name, ms in row.items())
            print(f"{kind} {size} plans: {cells}")


if __name__ == "__main__":
    main()
