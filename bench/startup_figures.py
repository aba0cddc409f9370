"""``python -m bench.startup_figures [DAGS]``: the engine rows of BENCHMARKS.md's issue-15 table in
one process, as one JSON line: wall/critical path at 20 ms tools (and the asyncio floor), the fixed
cost of one execution (opening a checkpointer each, and with one kept open as long-lived callers
do) and ms/step at 10 steps on SQLite and in memory, and the start skew of 30
parallel steps (first to last tool start). ``raw_*`` keys keep every sample, so runs of two
commits alternated under the same load can be pooled."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from typing import Any

from langchain_core.tools import tool

from bench.backends import store_factory
from bench.dags import random_dag, random_dags
from bench.overhead import _engine, overhead_dag
from bench.schedulers import EngineHarness, run_oracle
from bench.simtools import plan_from_dag
from bench.stats import median, percentile
from toolplan.config.policies import ExecutionOptions
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.tools import ToolCatalog

STARTS: list[float] = []


@tool
async def stamp(i: int) -> dict:
    """Record when this step started."""
    STARTS.append(time.perf_counter())
    await asyncio.sleep(0.02)
    return {"i": i}


async def skew(store) -> float:
    cat = ToolCatalog([stamp], source="skew")
    plan = {
        "reasoning": "wide",
        "steps": [{"id": f"s{i}", "tool": "stamp", "parameters": {"i": i}} for i in range(30)],
    }
    ref = await asyncio.to_thread(submit_plan, plan, store=store, catalog=cat, max_steps=30)
    ctx = ExecutionContext(store=store, catalog=cat, options=ExecutionOptions(concurrency=30))
    STARTS.clear()
    r = await execute_stored_plan(ref.plan_id, ctx)
    assert r.status == "succeeded", r.status
    return (max(STARTS) - min(STARTS)) * 1000


async def main(n_dags: int) -> None:
    out: dict[str, Any] = {}
    eng = EngineHarness()
    warm = random_dag(999, "mixed", median_latency=0.001, max_steps=8)
    await eng.run(warm, None)
    await run_oracle(warm, None)
    ratios, floor = [], []
    for dag in random_dags(n_dags, median_latency=0.02, sigma=0.5, max_steps=40):
        ratios.append(await eng.run(dag, None) / dag.critical_path)
        floor.append(await run_oracle(dag, None) / dag.critical_path)
    out["engine_wall_over_cp_20ms"] = [round(median(ratios), 3), round(percentile(ratios, 95), 3)]
    out["asyncio_floor"] = [round(median(floor), 3), round(percentile(floor, 95), 3)]
    out["raw_ratios"], out["raw_floor"] = ratios, floor
    one = overhead_dag(1)
    one_plan = plan_from_dag(one, zero_latency=True)
    ten = overhead_dag(10)
    ten_plan = plan_from_dag(ten, zero_latency=True)
    warm_plan = plan_from_dag(warm, zero_latency=True)
    for backend in ("sqlite", "memory"):
        with store_factory(backend) as new_store:
            store = new_store()
            for _ in range(5):
                await _engine(store, warm, warm_plan)
            fixed = [await _engine(store, one, one_plan) for _ in range(40)]
            out[f"fixed_{backend}_ms"] = round(median(fixed) * 1000, 2)
            # A long-lived caller (API server, worker, batch) keeps one checkpointer open; a
            # tree without keep_checkpointer opens one per execution here too.
            keep = getattr(store, "keep_checkpointer", None)
            async with keep() if keep is not None else contextlib.nullcontext():
                kept = [await _engine(store, one, one_plan) for _ in range(40)]
            out[f"fixed_kept_{backend}_ms"] = round(median(kept) * 1000, 2)
            out[f"raw_fixed_kept_{backend}"] = kept
            tens = [await _engine(store, ten, ten_plan) for _ in range(40)]
            out[f"{backend}_ms_per_step_10"] = round(median(tens) * 1000 / 10, 3)
            skews = [await skew(store) for _ in range(15)]
            out[f"skew30_{backend}_ms"] = [round(median(skews), 2), round(max(skews), 2)]
            out[f"raw_fixed_{backend}"], out[f"raw_ten_{backend}"] = fixed, tens
            out[f"raw_skew_{backend}"] = skews
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 60))
