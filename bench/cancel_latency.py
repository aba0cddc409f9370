"""``python -m bench.cancel_latency [--trials 7] [--store URI ...]``: how long a running
execution takes to notice a cancel from another process.

Each trial submits a plan of two parallel 60 s tool calls, runs it in a ``toolplan execute``
subprocess, waits until both calls are in flight, then runs ``toolplan cancel`` in a second
subprocess. Reported per store:

- ``notice``: stored ``cancelRequestedAt`` → stored ``finishedAt`` of the execution (both written
  on this machine, so one clock): the time the executor takes to notice the request, cancel its
  tool calls and record every step and the execution ``cancelled``;
- ``cancel_cli``: wall time of the whole ``toolplan cancel`` process (Python start-up included),
  which returns once the execution has ended.

Not part of ``python -m bench`` (it starts two CLI processes per trial); the figures quoted in
BENCHMARKS.md come from this script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

from toolplan.store import open_store

REPO = Path(__file__).resolve().parents[1]


@tool
async def hold(seconds: float) -> dict[str, Any]:
    """Wait `seconds` (a long call that is cancelled), then return {"held": seconds}."""
    await asyncio.sleep(seconds)
    return {"held": seconds}


TOOLS = [hold]

PLAN = {
    "steps": [
        {"id": "a", "tool": "hold", "parameters": {"seconds": 60}},
        {"id": "b", "tool": "hold", "parameters": {"seconds": 60}},
        {"id": "after", "tool": "hold", "parameters": {"seconds": "{{a.held}}"}},
    ]
}


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolplan", *args], env=env, capture_output=True, text=True
    )


def trial(store_uri: str, workdir: Path) -> dict[str, float]:
    env = {
        **os.environ,
        "TOOLPLAN_STORE": store_uri,
        "TOOLPLAN_TOOLS": "bench.cancel_latency",
        "PYTHONPATH": str(REPO),
    }
    plan_file = workdir / "plan.json"
    plan_file.write_text(json.dumps(PLAN))
    submitted = _cli(env, "submit", "--file", str(plan_file), "--json")
    assert submitted.returncode == 0, submitted.stderr
    plan_id = json.loads(submitted.stdout)["planId"]
    running = subprocess.Popen(
        [sys.executable, "-m", "toolplan", "execute", plan_id, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with closing(open_store(store_uri)) as store:
        deadline = time.monotonic() + 60
        while True:
            execution = store.get_execution(plan_id)
            if execution is not None and all(
                execution.step(s).status == "running" for s in ("a", "b")
            ):
                break
            assert time.monotonic() < deadline, "the steps never started"
            time.sleep(0.05)
        time.sleep(0.1)  # let the calls be properly in flight
        began = time.perf_counter()
        cancelled = _cli(env, "cancel", plan_id, "--json")
        cancel_cli = time.perf_counter() - began
        assert cancelled.returncode == 0, cancelled.stderr
        running.communicate(timeout=60)
        assert running.returncode == 1
        final = store.get_execution(plan_id)
    assert final is not None and final.status == "cancelled"
    assert final.cancel_requested_at and final.finished_at
    notice = _seconds(final.finished_at) - _seconds(final.cancel_requested_at)
    return {"notice": notice, "cancel_cli": cancel_cli}


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(values) * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
        "min_ms": round(min(values) * 1000, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cancel_latency")
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--store", action="append", help="store URI (default: a SQLite file)")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"trials": args.trials, "poll_s": 0.25}
    with tempfile.TemporaryDirectory() as tmp:
        stores = args.store or [f"sqlite:///{Path(tmp) / 'cancel.db'}"]
        for uri in stores:
            kind = uri.split(":", 1)[0]
            runs = [trial(uri, Path(tmp)) for _ in range(args.trials)]
            results[kind] = {
                "notice": _summary([r["notice"] for r in runs]),
                "cancel_cli": _summary([r["cancel_cli"] for r in runs]),
            }
            print(kind, json.dumps(results[kind]), file=sys.stderr, flush=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
