"""``python -m bench.map_overhead [REPEATS]``: what one ``forEach`` item costs against one plain step.

The same N zero-latency tool calls (``noop``) run two ways, through ``execute_stored_plan`` with
the default concurrency:

- **plain**: N independent steps, one call each (what a model writes when it knows N in advance);
- **forEach**: one step mapping over a literal list of N items (one call per item).

Both pay the fixed cost of an execution once; the per-call figure divides the whole execution by N.
Each item has its own durable record (for resume), as each plain step has, so the question is
whether an item costs more or less than a step. Prints one JSON object (medians of ``REPEATS``
runs, alternating the two shapes so load drifts hit both alike).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from bench.backends import store_factory
from bench.overhead import timed_execution
from bench.stats import median
from toolplan.config.policies import ExecutionOptions

__all__ = ["foreach_plan", "plain_plan", "run_map_overhead"]


def plain_plan(calls: int) -> dict[str, Any]:
    """``calls`` independent steps, one ``noop`` call each."""
    steps = [{"id": f"s{i}", "tool": "noop", "parameters": {"i": i}} for i in range(calls)]
    return {"reasoning": f"{calls} plain steps", "steps": steps}


def foreach_plan(calls: int) -> dict[str, Any]:
    """One step mapping ``noop`` over a literal list of ``calls`` items."""
    step = {
        "id": "each",
        "tool": "noop",
        "forEach": list(range(calls)),
        "maxItems": max(calls, 1),
        "parameters": {"i": "{{$item}}"},
    }
    return {"reasoning": f"one forEach over {calls} items", "steps": [step]}


async def run_map_overhead(
    *,
    sizes: tuple[int, ...] = (1, 10, 100),
    repeats: int = 15,
    backends: tuple[str, ...] = ("memory", "sqlite"),
) -> dict[str, Any]:
    """Per-call milliseconds (median) of the plain and forEach shapes, per store and size, and
    their ratio (forEach / plain: below 1 means an item is cheaper than a step)."""
    rows: dict[str, dict[str, Any]] = {}
    for backend in backends:
        with store_factory(backend) as new_store:
            store = new_store()
            await timed_execution(store, plain_plan(2), max_steps=2)  # warm imports and the store
            await timed_execution(store, foreach_plan(2), max_steps=2)
            for size in sizes:
                plain: list[float] = []
                mapped: list[float] = []
                for _ in range(repeats):
                    plain.append(await timed_execution(store, plain_plan(size), max_steps=size))
                    mapped.append(await timed_execution(store, foreach_plan(size), max_steps=size))
                plain_ms = median(plain) * 1000 / size
                map_ms = median(mapped) * 1000 / size
                rows[f"{backend}/{size}"] = {
                    "store": backend,
                    "calls": size,
                    "plain_ms_per_call": round(plain_ms, 3),
                    "foreach_ms_per_call": round(map_ms, 3),
                    "ratio": round(map_ms / plain_ms, 2),
                }
    return {"repeats": repeats, "concurrency": ExecutionOptions().concurrency, "rows": rows}


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print(json.dumps(asyncio.run(run_map_overhead(repeats=repeats)), indent=2))


if __name__ == "__main__":
    main()
