"""``python -m bench.foreach_scale [SIZES] [--repeats N] [--store sqlite,memory]``: ``forEach``
at scale (issue 42).

One step maps the zero-latency ``noop`` tool over a literal list of N items, through
``execute_stored_plan`` with the default concurrency, each item recorded on its own in the
store (its ``running`` and its end, as the engine writes them). The question is whether the cost
is linear: before item rows, each item update rewrote the step's whole list, so 1,000 items took
1.9 s and 10,000 took 214 s. Prints one JSON object: per store and size, the median wall time
of ``--repeats`` runs, the milliseconds per item (wall / N) and the per-item overhead over a
one-item map ((median(N) - median(1)) / (N - 1)); with the machine and commit (``bench.machine``).

Default sizes: 1000,10000,100000, each run ``--repeats`` times (default 3) on a fresh store; the
100,000-item run takes about 20 s per repeat on SQLite on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from bench.backends import store_factory
from bench.machine import machine_info
from bench.simtools import sim_catalog
from bench.stats import median
from toolplan.config.policies import ExecutionOptions
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.protocol import Store

__all__ = ["map_plan", "run_foreach_scale", "timed_map"]

DEFAULT_SIZES = (1000, 10_000, 100_000)


def map_plan(items: int) -> dict[str, Any]:
    """One step mapping ``noop`` over a literal list of ``items`` integers."""
    step = {
        "id": "each",
        "tool": "noop",
        "forEach": list(range(items)),
        "parameters": {"i": "{{$item}}"},
    }
    return {"reasoning": f"one forEach over {items} items", "steps": [step]}


async def timed_map(store: Store, items: int) -> float:
    """Seconds to execute a map over ``items`` items (stored first, untimed); raises unless
    every item succeeded."""
    catalog = sim_catalog()
    limit = max(items, 1)  # the operator's ceiling (TOOLPLAN_MAX_ITEMS) for this run
    ref = await asyncio.to_thread(
        submit_plan, map_plan(items), store=store, catalog=catalog, max_steps=1, max_items=limit
    )
    options = ExecutionOptions(max_items=limit)
    ctx = ExecutionContext(store=store, catalog=catalog, options=options)
    started = time.perf_counter()
    result = await execute_stored_plan(ref.plan_id, ctx)
    wall = time.perf_counter() - started
    if result.status != "succeeded":
        raise RuntimeError(f"a map over {items} items ended {result.status}")
    return wall


async def run_foreach_scale(
    *,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    repeats: int = 3,
    backends: tuple[str, ...] = ("sqlite",),
    log: Any = None,
) -> dict[str, Any]:
    """Median wall seconds, ms per item and per-item overhead, per store and size."""
    rows: dict[str, dict[str, Any]] = {}
    for backend in backends:
        with store_factory(backend) as new_store:
            store = new_store()
            await timed_map(store, 2)  # warm imports and the store
            base = median([await timed_map(store, 1) for _ in range(max(repeats, 3))])
            for size in sizes:
                walls = []
                for _ in range(repeats):
                    # A fresh store per run: every run starts from the same empty file.
                    walls.append(await timed_map(new_store(), size))
                    if log:
                        log(f"{backend}/{size}: {walls[-1]:.2f} s")
                wall = median(walls)
                rows[f"{backend}/{size}"] = {
                    "store": backend,
                    "items": size,
                    "runs": repeats,
                    "median_s": round(wall, 3),
                    "ms_per_item": round(wall * 1000 / size, 4),
                    "overhead_ms_per_item": round((wall - base) * 1000 / max(size - 1, 1), 4),
                    "walls_s": [round(w, 3) for w in walls],
                }
            rows[f"{backend}/1"] = {"store": backend, "items": 1, "median_s": round(base, 4)}
    return {"concurrency": ExecutionOptions().concurrency, "rows": rows, "meta": machine_info()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.foreach_scale")
    parser.add_argument("sizes", nargs="?", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--store", default="sqlite", help="comma-separated: sqlite,memory")
    args = parser.parse_args(argv)
    sizes = tuple(int(size) for size in args.sizes.split(","))

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    result = asyncio.run(
        run_foreach_scale(
            sizes=sizes,
            repeats=args.repeats,
            backends=tuple(args.store.split(",")),
            log=log,
        )
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
