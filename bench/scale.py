"""Measure 5: scale. Validation and topological analysis of 100 to 10,000-step plans (expected
linear), execution of a 1,000-step DAG, and peak memory.

Memory is measured in a child process (``python -m bench.scale``), so its peak RSS belongs to
this work alone and not to the measures that ran before it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.dags import random_dag
from bench.memstore import MemoryStore
from bench.simtools import plan_from_dag, sim_catalog
from bench.stats import median
from toolplan.config import limits_from_env
from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.plan import load_plan
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.validation import analyze

__all__ = ["run_scale", "scale_plan"]


def scale_plan(steps: int) -> dict[str, Any]:
    """A mixed random DAG of ``steps`` steps, edges by template (as an LLM writes them)."""
    dag = random_dag(0, "mixed", min_steps=steps, max_steps=steps, median_latency=0.001)
    return plan_from_dag(dag, zero_latency=True)


def _limits() -> InputLimits:
    """The input limits with the plan size :func:`run_scale` raised (``TOOLPLAN_MAX_PLAN_BYTES``,
    which its child processes inherit): the bench reads it, as an entry point would."""
    return limits_from_env()


def _time(fn: Callable[[], Any], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return median(samples)


async def _execute(steps: int, backend: str) -> dict[str, Any]:
    catalog = sim_catalog()
    plan = scale_plan(steps)
    with tempfile.TemporaryDirectory(prefix="toolplan-bench-scale-") as directory:
        store = MemoryStore() if backend == "memory" else SqliteStore(Path(directory) / "s.db")
        try:
            ctx = ExecutionContext(store=store, catalog=catalog)
            warm = submit_plan(
                scale_plan(10), store=store, catalog=catalog, max_steps=10, limits=_limits()
            )
            await execute_stored_plan(warm.plan_id, ctx)
            ref = submit_plan(plan, store=store, catalog=catalog, max_steps=steps, limits=_limits())
            started = time.perf_counter()
            result = await execute_stored_plan(ref.plan_id, ctx)
            wall = time.perf_counter() - started
        finally:
            store.close()
    if result.status != "succeeded":
        raise RuntimeError(f"{steps}-step plan ended {result.status}")
    return {"seconds": round(wall, 3), "ms_per_step": round(wall * 1000 / steps, 3)}


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    # VmHWM, not getrusage: ru_maxrss survives exec(), so a child would report its parent's peak.
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(kind: str, steps: int) -> dict[str, Any]:
    """Runs in a child process: RSS after imports, then the peak after one piece of work."""
    catalog = sim_catalog()
    report: dict[str, Any] = {"rss_after_imports_mb": round(_rss_mb(), 1)}
    if kind == "analyze":
        analyze(load_plan(scale_plan(steps), limits=_limits()), catalog, max_steps=steps)
    else:
        asyncio.run(_execute(steps, "sqlite"))
    report["peak_rss_mb"] = round(_peak_mb(), 1)
    report["growth_mb"] = round(report["peak_rss_mb"] - report["rss_after_imports_mb"], 1)
    return report


def _memory(kind: str, steps: int) -> dict[str, Any]:
    root = Path(__file__).resolve().parents[1]
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    completed = subprocess.run(
        [sys.executable, "-m", "bench.scale", kind, str(steps)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
    )
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {completed.returncode}"}
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


async def run_scale(
    *,
    sizes: tuple[int, ...] = (100, 1000, 10_000),
    repeats: dict[int, int] | None = None,
    execute_steps: int = 1000,
    memory: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Timings per size (median of repeats) and per step, execution and memory."""
    repeats = repeats or {100: 20, 1000: 5, 10_000: 3}
    # A 10,000-step plan is about 2 MB of JSON, above the default input limit; raise it as a
    # user with plans this large would (the subprocess below inherits it).
    largest = max(len(json.dumps(scale_plan(size)).encode()) for size in sizes)
    os.environ["TOOLPLAN_MAX_PLAN_BYTES"] = str(max(largest * 2, 1_000_000))
    started = time.perf_counter()
    catalog = sim_catalog()
    rows: dict[str, Any] = {}
    analyze(
        load_plan(scale_plan(50), limits=_limits()), catalog
    )  # warm caches (catalog schemas, regexes)
    for size in sizes:
        data = scale_plan(size)
        limits = _limits()
        plan = load_plan(data, limits=limits)
        count = repeats.get(size, 1)
        store = MemoryStore()
        parse_s = _time(functools.partial(load_plan, data, limits=limits), count)
        analyze_s = _time(functools.partial(analyze, plan, catalog, max_steps=size), count)
        submit_s = _time(
            functools.partial(
                submit_plan, data, store=store, catalog=catalog, max_steps=size, limits=limits
            ),
            count,
        )
        analysis = analyze(plan, catalog, max_steps=size)
        rows[str(size)] = {
            "parse_ms": round(parse_s * 1000, 2),
            "analyze_ms": round(analyze_s * 1000, 2),
            "submit_ms": round(submit_s * 1000, 2),
            "analyze_us_per_step": round(analyze_s * 1e6 / size, 1),
            "submit_us_per_step": round(submit_s * 1e6 / size, 1),
            "layers": len(analysis.layers),
            "edges": sum(len(d) for d in analysis.dependencies.values()),
        }
        if log:
            log(
                f"  scale: {size} steps: analyze {analyze_s * 1000:.1f} ms, submit {submit_s * 1000:.1f} ms"
            )
    first, last = str(sizes[0]), str(sizes[-1])
    linearity = rows[last]["submit_us_per_step"] / rows[first]["submit_us_per_step"]
    execution = {
        backend: await _execute(execute_steps, backend) for backend in ("memory", "sqlite")
    }
    if log:
        log(f"  scale: {execute_steps}-step execution: {execution}")
    peaks = {}
    if memory:
        peaks = {
            f"analyze_{sizes[-1]}_steps": await asyncio.to_thread(_memory, "analyze", sizes[-1]),
            f"execute_{execute_steps}_steps_sqlite": await asyncio.to_thread(
                _memory, "execute", execute_steps
            ),
        }
    return {
        "sizes": list(sizes),
        "validation": rows,
        "per_step_growth": round(linearity, 2),
        "linear": linearity <= 2.0,
        "execution": {"steps": execute_steps, **execution},
        "memory": peaks,
        "seconds": round(time.perf_counter() - started, 1),
    }


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], int(sys.argv[2]))))
