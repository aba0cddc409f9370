"""``python -m bench [--quick] [--json] [--only MEASURE,...] [--out DIR]``.

Without ``--json`` the results are printed as markdown tables; with it, one JSON object with a key
per measure (plus ``meta``). A full run writes ``results.json``, ``report.md`` and the plots to
``bench/results/``; ``--quick`` writes files only when ``--out`` is given. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import MEASURES
from bench.machine import machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _plan(quick: bool) -> dict[str, Callable[[], Awaitable[dict[str, Any]]]]:
    from bench.overhead import run_overhead
    from bench.reader import run_reader
    from bench.roundtrips import run_round_trips
    from bench.scale import run_scale
    from bench.scheduling import run_scheduling
    from bench.throughput import run_store_throughput

    if quick:
        return {
            "scheduling": lambda: run_scheduling(dags=9, log=_log),
            "overhead": lambda: run_overhead(
                repeats={10: 3, 100: 2, 1000: 1}, fixed_repeats=3, log=_log
            ),
            "round_trips": lambda: run_round_trips(llm_latency=0.05, tool_delay=0.0125, log=_log),
            "store_throughput": lambda: run_store_throughput(
                plans=8, io_plans=6, writes=40, log=_log
            ),
            "scale": lambda: run_scale(repeats={100: 3, 1000: 1, 10_000: 1}, log=_log),
            "reader": lambda: run_reader(sizes=(10, 100), repeats=3),
        }
    return {
        "scheduling": lambda: run_scheduling(
            dags=200, sweep_latencies=(0.005, 0.05, 0.1), log=_log
        ),
        "overhead": lambda: run_overhead(log=_log),
        "round_trips": lambda: run_round_trips(llm_latency=0.8, tool_delay=0.2, log=_log),
        "store_throughput": lambda: run_store_throughput(log=_log),
        "scale": lambda: run_scale(log=_log),
        "reader": lambda: run_reader(),
    }


async def run(quick: bool, only: list[str]) -> dict[str, Any]:
    """Run the chosen measures in order; returns the results object."""
    results: dict[str, Any] = {"meta": machine_info()}
    results["meta"]["quick"] = quick
    plan = _plan(quick)
    started = time.perf_counter()
    for name in MEASURES:
        if name not in only:
            continue
        _log(f"{name} ...")
        began = time.perf_counter()
        results[name] = await plan[name]()
        _log(f"{name}: {time.perf_counter() - began:.1f} s")
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    results["meta"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="far fewer samples (CI: < 2 min)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", default=",".join(MEASURES), help="comma-separated measures")
    parser.add_argument("--out", type=Path, help="write results.json, report.md and plots here")
    args = parser.parse_args(argv)
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(only) - set(MEASURES))
    if unknown:
        parser.error(f"unknown measure(s) {', '.join(unknown)}; choose from {', '.join(MEASURES)}")

    results = asyncio.run(run(args.quick, only))
    arguments = " ".join(argv if argv is not None else sys.argv[1:])
    results["meta"]["command"] = f"python -m bench {arguments}".strip()

    from bench.report import markdown, plot

    out = args.out or (None if args.quick else RESULTS_DIR)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        (out / "report.md").write_text(markdown(results))
        for path in plot(results, out):
            _log(f"wrote {path}")
    if args.json:
        public = json.loads(json.dumps(results))
        public.get("scheduling", {}).pop("samples", None)
        print(json.dumps(public, indent=1))
    else:
        print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
