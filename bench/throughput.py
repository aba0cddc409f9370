"""Measure 4: store throughput. Plans submitted and executed per second, 1 and 4 workers.

Workers are coroutines in one process that take work from the store's queue exactly as a
``toolplan worker`` does: ``Store.claim`` (an atomic claim with a lease), then
``execute_stored_plan`` under the claiming worker's ID. Two workloads: zero-latency tools (the
store and engine are the bottleneck) and 50 ms tools (I/O-bound, where workers overlap).
Also the cost of one durable step-record write (``Store.update_step``), two per step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bench.backends import mongo_is_jongodb, mongo_pending_reason, store_factory
from bench.dags import Dag
from bench.simtools import plan_from_dag, sim_catalog
from bench.stats import median, percentile
from toolplan.config.policies import ExecutionOptions
from toolplan.plan_format.plan import parse_plan
from toolplan.runs.runner import ExecutionContext, new_worker_id
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.protocol import Store, utc_now

__all__ = ["run_store_throughput", "workload_dag"]

LEASE_SECONDS = 30.0


def workload_dag(latency: float) -> Dag:
    """Four parallel steps and a join: a typical small plan."""
    steps = ["a", "b", "c", "d", "join"]
    deps = {"a": [], "b": [], "c": [], "d": [], "join": ["a", "b", "c", "d"]}
    return Dag("fanout4-join", "wide", steps, deps, dict.fromkeys(steps, latency))


def _submit_all(store: Store, plan: dict[str, Any], count: int) -> tuple[list[str], float]:
    catalog = sim_catalog()
    started = time.perf_counter()
    ids = []
    for _ in range(count):
        ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
        steps = [(s.id, s.tool) for s in parse_plan(plan).steps]
        store.enqueue(ref.plan_id, steps)
        ids.append(ref.plan_id)
    return ids, time.perf_counter() - started


async def _drain(store: Store, workers: int) -> tuple[int, float]:
    catalog = sim_catalog()
    done = 0

    async def worker() -> None:
        nonlocal done
        worker_id = new_worker_id()
        ctx = ExecutionContext(
            store=store, catalog=catalog, options=ExecutionOptions(), worker_id=worker_id
        )
        while True:
            plan_id = await asyncio.to_thread(store.claim, worker_id, LEASE_SECONDS)
            if plan_id is None:
                return
            result = await execute_stored_plan(plan_id, ctx)
            if result.status != "succeeded":
                raise RuntimeError(f"{plan_id} ended {result.status}: {result.error}")
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return done, time.perf_counter() - started


def _write_cost(store: Store, steps: int, writes: int) -> dict[str, float]:
    """Microseconds per ``update_step`` (the running and the succeeded transition alternately)
    on an execution with ``steps`` step records."""
    plan = plan_from_dag(
        Dag(
            "w",
            "deep",
            [f"s{i}" for i in range(steps)],
            {f"s{i}": [] for i in range(steps)},
            {f"s{i}": 0.0 for i in range(steps)},
        ),
        zero_latency=True,
    )
    ref = submit_plan(plan, store=store, catalog=sim_catalog(), max_steps=steps)
    store.create_execution(ref.plan_id, [(f"s{i}", "noop") for i in range(steps)], status="running")
    samples = []
    for n in range(writes):
        step = f"s{(n // 2) % steps}"
        if n % 2 == 0:
            changes = {
                "status": "running",
                "attempts": 1,
                "resolved_parameters": {"i": n},
                "error": None,
                "started_at": utc_now(),
            }
        else:
            changes = {
                "status": "succeeded",
                "attempts": 1,
                "output": {"i": n, "n": 0},
                "error": None,
                "finished_at": utc_now(),
                "duration_ms": 0.1,
                "output_truncated": False,
                "used_fallback": False,
                "resolved_parameters": {"i": n},
            }
        started = time.perf_counter()
        store.update_step(ref.plan_id, step, changes)
        samples.append((time.perf_counter() - started) * 1e6)
    return {"median_us": round(median(samples), 1), "p95_us": round(percentile(samples, 95), 1)}


async def run_store_throughput(
    *,
    plans: int = 60,
    io_plans: int = 40,
    io_latency: float = 0.05,
    worker_counts: tuple[int, ...] = (1, 4),
    writes: int = 200,
    backends: tuple[str, ...] = ("memory", "sqlite", "mongodb"),
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Submit and execute rates per backend, workload and worker count; write cost per step."""
    mongo_reason = mongo_pending_reason()
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for backend in backends:
        if backend == "mongodb" and mongo_reason:
            results[backend] = {"pending": mongo_reason}
            continue
        try:
            results[backend] = await _backend(
                backend, plans, io_plans, io_latency, worker_counts, writes, log
            )
        except Exception as error:  # one store failing must not hide the others' figures
            results[backend] = {"error": f"{type(error).__name__}: {error}"}
    return {
        "workload": "5 steps: 4 parallel + 1 join",
        "io_latency_s": io_latency,
        "workers": list(worker_counts),
        "worker_model": "coroutines in one process: Store.claim, then execute_stored_plan",
        "mongodb_server": None
        if mongo_reason
        else ("jongodb" if mongo_is_jongodb() else "external"),
        "backends": results,
        "seconds": round(time.perf_counter() - started, 1),
    }


async def _backend(
    backend: str,
    plans: int,
    io_plans: int,
    io_latency: float,
    worker_counts: tuple[int, ...],
    writes: int,
    log: Callable[[str], None] | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    with store_factory(backend) as new_store:
        for workload, latency, count in (
            ("zero_latency", 0.0, plans),
            ("io_50ms", io_latency, io_plans),
        ):
            plan = plan_from_dag(workload_dag(latency), zero_latency=latency == 0.0)
            for workers in worker_counts:
                store = new_store()
                await _drain_warm(store, plan)
                ids, submit_seconds = await asyncio.to_thread(_submit_all, store, plan, count)
                done, run_seconds = await _drain(store, workers)
                if done != len(ids):
                    raise RuntimeError(f"{backend}: {done} of {len(ids)} plans ran")
                row[f"{workload}/{workers}w"] = {
                    "plans": count,
                    "submitted_per_s": round(count / submit_seconds, 1),
                    "executed_per_s": round(done / run_seconds, 1),
                    "steps_per_s": round(done * 5 / run_seconds, 1),
                }
                if log:
                    log(
                        f"  throughput: {backend} {workload} {workers} worker(s): {done / run_seconds:.1f} plans/s"
                    )
        # jongodb's upserts and updates scan the collection (a 1,000-step execution cannot
        # even be created within the store's 15 s timeout), so it gets the 100-step probe only.
        jongodb = backend == "mongodb" and mongo_is_jongodb()
        row["update_step"] = {
            f"{steps}_steps": (
                {"skipped": "jongodb: upserts/updates are O(collection size)"}
                if jongodb and steps > 100
                else await asyncio.to_thread(_write_cost, new_store(), steps, writes)
            )
            for steps in (100, 1000)
        }
    return row


async def _drain_warm(store: Store, plan: dict[str, Any]) -> None:
    """One untimed plan first: creates checkpoint tables/indexes and warms the code paths."""
    await asyncio.to_thread(_submit_all, store, plan, 1)
    await _drain(store, 1)
