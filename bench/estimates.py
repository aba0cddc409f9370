"""``python -m bench.estimates [--dags 30] [--json]``: plan estimates against actual durations on
the bench's random DAGs.

Six simulated services (``svc0`` ... ``svc5``, medians 20 to 200 ms) each draw every call's latency
from their own lognormal: **stable** (sigma 0.05) or **noisy** (sigma 0.5, the bench DAGs' spread). A
warm-up plan calls each service 20 times, so the store holds their history. Then each of
``--dags`` random DAGs (:func:`bench.dags.random_dag`, the three shapes in turn, each step given
a seeded random service) is submitted with ``submit_plan`` (which stores its estimate) and
executed by the real engine on a SQLite store (the default execution options: concurrency 10,
the graph layer on). Reported per spread: estimate / actual, where actual is the stored execution
``finishedAt - startedAt`` (what ``toolplan show`` prints beside the estimate), and how many
estimates are within 25%. For comparison, the same DAGs estimated from per-tool **medians**
instead of means (what the estimate would be with the other choice).

Not part of ``python -m bench``; the figures quoted in BENCHMARKS.md come from this script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from bench.dags import SHAPES, random_dag
from toolplan.config.policies import ExecutionOptions
from toolplan.config.settings import EstimateSettings
from toolplan.runs.runner import ExecutionContext
from toolplan.service.estimates import schedule_length
from toolplan.service.operations import actual_duration_ms, execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog

MEDIANS_MS = (20, 40, 60, 90, 140, 200)
SPREADS = {"stable": 0.05, "noisy": 0.5}
WARM_CALLS = 20


def _service(index: int, sigma: float, rng: random.Random) -> BaseTool:
    median = MEDIANS_MS[index] / 1000

    async def call(inputs: list[Any] | None = None) -> dict[str, Any]:
        seconds = rng.lognormvariate(math.log(median), sigma)
        await asyncio.sleep(seconds)
        return {"ms": round(seconds * 1000, 3)}

    return StructuredTool.from_function(
        coroutine=call,
        name=f"svc{index}",
        description=f"A simulated service (median {MEDIANS_MS[index]} ms).",
    )


def _plan(order: list[str], deps: dict[str, list[str]], tools: dict[str, str]) -> dict[str, Any]:
    steps = []
    for step in order:
        parameters: dict[str, Any] = {}
        if deps[step]:
            parameters["inputs"] = [f"{{{{{dep}.ms}}}}" for dep in deps[step]]
        steps.append({"id": step, "tool": tools[step], "parameters": parameters})
    return {"steps": steps}


async def _spread(name: str, sigma: float, dags: int, folder: Path) -> dict[str, Any]:
    rng = random.Random(f"estimates:{name}")
    catalog = ToolCatalog(
        [_service(i, sigma, rng) for i in range(len(MEDIANS_MS))], source="bench.estimates"
    )
    store = SqliteStore(folder / f"{name}.db")
    settings = EstimateSettings()
    options = ExecutionOptions()
    ctx = ExecutionContext(store=store, catalog=catalog, options=options)
    try:
        warm = {
            "steps": [
                {"id": f"w{i}_{n}", "tool": f"svc{i}", "parameters": {}}
                for i in range(len(MEDIANS_MS))
                for n in range(WARM_CALLS)
            ]
        }
        ref = submit_plan(warm, store=store, catalog=catalog, max_steps=500, estimates=settings)
        await execute_stored_plan(ref.plan_id, ctx)
        history = store.tool_durations([f"svc{i}" for i in range(len(MEDIANS_MS))], 100)
        medians = {tool: statistics.median(seen) for tool, seen in history.items()}

        rows = []
        for index in range(dags):
            dag = random_dag(index // 3, SHAPES[index % 3])
            pick = random.Random(f"{dag.name}:tools")
            tools = {step: f"svc{pick.randrange(len(MEDIANS_MS))}" for step in dag.order}
            plan = _plan(dag.order, dag.deps, tools)
            ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50, estimates=settings)
            assert ref.estimate is not None and ref.analysis is not None
            await execute_stored_plan(ref.plan_id, ctx)
            actual = actual_duration_ms(store.get_execution(ref.plan_id))
            assert actual is not None
            by_median = schedule_length(
                ref.analysis.order,
                ref.analysis.dependencies,
                {step: medians[tools[step]] for step in dag.order},
                settings.concurrency,
            )
            rows.append(
                {
                    "dag": dag.name,
                    "steps": dag.size,
                    "estimate_ms": ref.estimate.duration_ms,
                    "basis": ref.estimate.basis,
                    "actual_ms": actual,
                    "ratio": ref.estimate.duration_ms / actual,
                    "median_ratio": by_median / actual,
                }
            )
    finally:
        store.close()
    return {"sigma": sigma, "rows": rows, "summary": _summary(rows)}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def describe(key: str) -> dict[str, float]:
        ratios = sorted(row[key] for row in rows)
        return {
            "median": statistics.median(ratios),
            "min": ratios[0],
            "max": ratios[-1],
            "within_25pct": sum(1 for r in ratios if abs(r - 1) <= 0.25) / len(ratios),
        }

    return {"dags": len(rows), "mean": describe("ratio"), "median": describe("median_ratio")}


async def run(dags: int) -> dict[str, Any]:
    """Every spread, on fresh SQLite stores in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        return {
            name: await _spread(name, sigma, dags, Path(folder)) for name, sigma in SPREADS.items()
        }


def _table(result: dict[str, Any]) -> str:
    lines = [
        "| latencies | DAGs | estimate/actual median | min - max | within 25% | "
        "with medians: median | within 25% |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, data in result.items():
        mean, median = data["summary"]["mean"], data["summary"]["median"]
        lines.append(
            f"| {name} (sigma {data['sigma']:g}) | {data['summary']['dags']} "
            f"| {mean['median']:.3f} | {mean['min']:.3f} - {mean['max']:.3f} "
            f"| {mean['within_25pct']:.0%} | {median['median']:.3f} "
            f"| {median['within_25pct']:.0%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.estimates", description=__doc__)
    parser.add_argument("--dags", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.dags))
    print(json.dumps(result, indent=2) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
