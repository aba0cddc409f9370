"""Measure 1: scheduling efficiency. Wall time divided by the critical path on seeded random DAGs.

Each DAG runs once under every scheduler, back to back and in a rotating order, so drift in the
machine's load is spread evenly. The critical path uses the *nominal* latencies: it is the physical
limit at unbounded concurrency and zero overhead, so every row includes the simulation's own timer
cost (see the ``oracle`` row: bare asyncio on the same sleeps).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.dags import SHAPES, Dag, graham_bound, random_dag, random_dags
from bench.schedulers import (
    EngineHarness,
    run_langgraph_functional,
    run_langgraph_send,
    run_oracle,
    run_toolplan_schedule,
    run_waves,
)
from bench.stats import median, percentile, summary

__all__ = ["GOAL_MEDIAN", "GOAL_P95", "SCHEDULER_LABELS", "run_scheduling"]

GOAL_MEDIAN = 1.05
GOAL_P95 = 1.10

SCHEDULER_LABELS = {
    "oracle": "bare asyncio, one task per step (simulation floor)",
    "toolplan_schedule": "toolplan `schedule()` alone",
    "toolplan_engine": "toolplan engine (`run_plan_steps`: schedule + StepRunner + Recorder, in-memory store)",
    "waves": "wave/superstep reference (Kahn layers, seed 000)",
    "langgraph_send": "LangGraph StateGraph + `Send` fan-out",
    "langgraph_functional": "LangGraph functional API (`@task` futures, eager)",
}

Runner = Callable[[Dag, int | None], Awaitable[float]]


async def run_scheduling(
    *,
    dags: int = 200,
    median_latency: float = 0.02,
    sigma: float = 0.5,
    workers: int = 4,
    max_steps: int = 40,
    sweep_latencies: tuple[float, ...] = (),
    sweep_dags: int = 15,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every DAG under every scheduler (unbounded), then toolplan and waves capped at
    ``workers``; return summaries plus the per-DAG ratios (``samples``) for plots."""
    engine = EngineHarness()
    unbounded: dict[str, Runner] = {
        "oracle": run_oracle,
        "toolplan_schedule": run_toolplan_schedule,
        "toolplan_engine": engine.run,
        "waves": run_waves,
        "langgraph_send": run_langgraph_send,
        "langgraph_functional": run_langgraph_functional,
    }
    capped: dict[str, Runner] = {
        "toolplan_schedule": run_toolplan_schedule,
        "toolplan_engine": engine.run,
        "waves": run_waves,
    }
    warmup = random_dag(999, "mixed", median_latency=0.001, max_steps=8)
    for runner in unbounded.values():
        await runner(warmup, None)
        await runner(warmup, 2)

    graphs = random_dags(dags, median_latency=median_latency, sigma=sigma, max_steps=max_steps)
    ratios: dict[str, list[float]] = {name: [] for name in unbounded}
    overhead_ms: dict[str, list[float]] = {name: [] for name in unbounded}
    capped_graham: dict[str, list[float]] = {name: [] for name in capped}
    capped_lower: dict[str, list[float]] = {name: [] for name in capped}
    shapes: list[str] = []
    started = time.perf_counter()
    names = list(unbounded)
    for index, dag in enumerate(graphs):
        cp = dag.critical_path
        shapes.append(dag.shape)
        rotation = names[index % len(names) :] + names[: index % len(names)]
        for name in rotation:
            wall = await unbounded[name](dag, None)
            ratios[name].append(wall / cp)
            overhead_ms[name].append((wall - cp) * 1000)
        bound = graham_bound(dag, workers)
        lower = max(cp, dag.work / workers)
        for name, runner in capped.items():
            wall = await runner(dag, workers)
            capped_graham[name].append(wall / bound)
            capped_lower[name].append(wall / lower)
        if log and (index + 1) % max(1, len(graphs) // 10) == 0:
            log(
                f"  scheduling: {index + 1}/{len(graphs)} DAGs, {time.perf_counter() - started:.0f} s"
            )

    def by_shape(values: list[float]) -> dict[str, float]:
        return {
            shape: round(median([v for v, s in zip(values, shapes, strict=True) if s == shape]), 3)
            for shape in SHAPES
        }

    sweep = {
        f"{latency * 1000:g}": await _sweep(engine, latency, sigma, sweep_dags, max_steps)
        for latency in sweep_latencies
    }
    engine_ratios = ratios["toolplan_engine"]
    schedule_ratios = ratios["toolplan_schedule"]
    return {
        "dags": len(graphs),
        "steps": summary([float(d.size) for d in graphs], 1),
        "median_latency_ms": median_latency * 1000,
        "sigma": sigma,
        "critical_path_ms": summary([d.critical_path * 1000 for d in graphs], 1),
        "ideal_wave_over_cp": summary([d.wave_time / d.critical_path for d in graphs]),
        "unbounded": {
            name: {
                "label": SCHEDULER_LABELS[name],
                "wall_over_cp": summary(values),
                "median_by_shape": by_shape(values),
                "overhead_ms": summary(overhead_ms[name], 2),
            }
            for name, values in ratios.items()
        },
        "capped": {
            "workers": workers,
            **{
                name: {
                    "wall_over_graham_bound": summary(capped_graham[name]),
                    "wall_over_lower_bound": summary(capped_lower[name]),
                    "within_graham_bound": sum(v <= 1.0 for v in capped_graham[name]),
                }
                for name in capped
            },
        },
        "latency_sweep": sweep,
        "goals": {
            "toolplan_engine_median_le_1.05": median(engine_ratios) <= GOAL_MEDIAN,
            "toolplan_engine_p95_le_1.10": percentile(engine_ratios, 95) <= GOAL_P95,
            "toolplan_schedule_median_le_1.05": median(schedule_ratios) <= GOAL_MEDIAN,
            "toolplan_schedule_p95_le_1.10": percentile(schedule_ratios, 95) <= GOAL_P95,
        },
        "seconds": round(time.perf_counter() - started, 1),
        "samples": {"shape": shapes, **{k: [round(v, 4) for v in vs] for k, vs in ratios.items()}},
    }


async def _sweep(
    engine: EngineHarness, latency: float, sigma: float, count: int, max_steps: int
) -> dict[str, Any]:
    """The engine and the asyncio floor on the first ``count`` DAGs at another median latency:
    the engine's overhead is a fixed cost per step, so its ratio falls as tools get slower."""
    graphs = random_dags(count, median_latency=latency, sigma=sigma, max_steps=max_steps)
    engine_ratios, oracle_ratios = [], []
    for dag in graphs:
        engine_ratios.append(await engine.run(dag, None) / dag.critical_path)
        oracle_ratios.append(await run_oracle(dag, None) / dag.critical_path)
    return {
        "dags": count,
        "toolplan_engine": summary(engine_ratios),
        "oracle": summary(oracle_ratios),
    }
