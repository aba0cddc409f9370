"""What program order for effects costs (issue 49).

    python -m bench.ordering [--repeats N] [--out FILE]

Two measures, in one run:

* **The ordering pass** (:func:`toolplan.validation.dag.effect_order`): CPU time to compute the
  order edges of seeded plans of 10, 50 (the default step limit) and 500 steps, a mix of reads
  and writes on three resources with data references between them; median of ``--repeats``
  runs, in microseconds, beside the whole validation (:func:`~toolplan.validation.analyze`) of
  the same plan. The goal: under 1 ms for 50 steps.
* **Independent writes on one resource**: ``N`` calls that each take 20 ms and use nothing of
  each other, run by the in-process engine on a fresh SQLite store, as the tool declares itself:
  ``read-only`` (no order among them: the wall time is one call), ``commutative`` writes (in
  parallel too, but each write moves its resource's version when it ends: one store write more
  per step) and plain writes (each after the one before: ``N`` calls one after the other). Median
  wall time of ``--repeats`` runs, and its ratio to one call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.tools import StructuredTool, tool

from bench.machine import machine_info
from toolplan.config.policies import ExecutionOptions
from toolplan.plan_format.plan import parse_plan
from toolplan.runs import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog, tagged
from toolplan.validation import analyze
from toolplan.validation.dag import effect_order

__all__ = ["run_ordering_pass", "run_writes"]

CALL_SECONDS = 0.02


def _catalog() -> ToolCatalog:
    tools = []
    for resource in ("a", "b", "c"):
        for kind in ("read", "write"):

            def call(x: int = 0, inputs: list[Any] | None = None) -> dict[str, int]:
                return {"x": x}

            call.__name__ = f"{kind}_{resource}"
            call.__doc__ = f"A {kind} of {resource}."
            tags = ("read-only",) if kind == "read" else ()
            tools.append(tagged(tool(call), *tags, resource=resource))
    return ToolCatalog(tools, source="bench.ordering")


def _plan(steps: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    plan = []
    for index in range(steps):
        kind = "read" if rng.random() < 0.6 else "write"
        parameters: dict[str, Any] = {"x": index}
        if index and rng.random() < 0.3:  # a data reference to an earlier step
            parameters["inputs"] = [f"{{{{s{rng.randrange(index)}.x}}}}"]
        plan.append(
            {"id": f"s{index}", "tool": f"{kind}_{rng.choice('abc')}", "parameters": parameters}
        )
    return {"steps": plan}


def run_ordering_pass(sizes: tuple[int, ...] = (10, 50, 500), repeats: int = 200) -> dict[str, Any]:
    """Median CPU microseconds of the ordering pass and of the whole validation, per size."""
    catalog = _catalog()
    rows = []
    for size in sizes:
        plan = parse_plan(_plan(size, seed=size))
        analysis = analyze(plan, catalog, max_steps=size)
        passes, validations = [], []
        for _ in range(repeats):
            started = time.process_time_ns()
            effect_order(plan, catalog, analysis.dependencies)
            passes.append((time.process_time_ns() - started) / 1000)
            started = time.process_time_ns()
            analyze(plan, catalog, max_steps=size)
            validations.append((time.process_time_ns() - started) / 1000)
        rows.append(
            {
                "steps": size,
                "orderEdges": sum(len(after) for after in analysis.order_edges.values()),
                "orderingPassUs": round(statistics.median(passes), 1),
                "validationUs": round(statistics.median(validations), 1),
            }
        )
    return {"repeats": repeats, "rows": rows}


def _writes_catalog() -> ToolCatalog:
    async def call(i: int) -> dict[str, int]:
        await asyncio.sleep(CALL_SECONDS)
        return {"i": i}

    tools = []
    for name, tags in (
        ("read", ("read-only",)),
        ("commutative_write", ("commutative",)),
        ("write", ()),
    ):
        made = StructuredTool.from_function(
            coroutine=call, name=name, description=f"{name}, {CALL_SECONDS} s a call"
        )
        ttl = 0 if "read-only" in tags else None  # never from the cache: each call waits
        tools.append(tagged(made, *tags, resource="r", cache_ttl=ttl))
    return ToolCatalog(tools, source="bench.ordering")


async def _wall(tool_name: str, calls: int, directory: Path, run: int) -> float:
    catalog = _writes_catalog()
    store = SqliteStore(directory / f"{tool_name}-{run}.db")
    try:
        plan = {
            "steps": [
                {"id": f"c{i}", "tool": tool_name, "parameters": {"i": i}} for i in range(calls)
            ]
        }
        ref = submit_plan(plan, store=store, catalog=catalog, max_steps=calls)
        ctx = ExecutionContext(
            store=store, catalog=catalog, options=ExecutionOptions(concurrency=calls, cache=False)
        )
        started = time.perf_counter()
        result = await execute_stored_plan(ref.plan_id, ctx)
        wall = time.perf_counter() - started
        assert result.status == "succeeded", result.status
        return wall
    finally:
        store.close()


async def run_writes(calls: int = 10, repeats: int = 5) -> dict[str, Any]:
    """Median wall seconds of ``calls`` independent 20 ms calls, per declared effect."""
    samples: dict[str, list[float]] = {"read": [], "commutative_write": [], "write": []}
    with tempfile.TemporaryDirectory(prefix="toolplan-bench-ordering-") as folder:
        for run in range(repeats):  # alternating: load drift hits every kind alike
            for name in samples:
                samples[name].append(await _wall(name, calls, Path(folder), run))
    rows = []
    for name, walls in samples.items():
        median = statistics.median(walls)
        rows.append(
            {
                "effect": name.replace("_", " "),
                "calls": calls,
                "wallMs": round(median * 1000, 1),
                "overOneCall": round(median / CALL_SECONDS, 2),
            }
        )
    return {"repeats": repeats, "callSeconds": CALL_SECONDS, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per write measure")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    args = parser.parse_args()
    report = {
        "meta": machine_info(),
        "orderingPass": run_ordering_pass(),
        "independentWrites": asyncio.run(run_writes(repeats=args.repeats)),
    }
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    for row in report["orderingPass"]["rows"]:
        print(
            f"{row['steps']:>4} steps: ordering pass {row['orderingPassUs']} us "
            f"(validation {row['validationUs']} us, {row['orderEdges']} order edges)",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
