"""What-if measurements for the engine and store changes BENCHMARKS.md proposes.

``python -m bench.experiments [--out FILE]``. Each experiment patches one thing at run time (the
package itself is not changed) and alternates the stock and the patched version run by run, so
both see the same machine load. These are not part of ``python -m bench``: they measure
proposals, not the current code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import tempfile
import time
import types
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from bench.dags import random_dags
from bench.schedulers import EngineHarness
from bench.simtools import noop, plan_from_dag, sim_catalog
from bench.stats import median, percentile
from toolplan.engine.recorder import Recorder
from toolplan.plan_format.plan import load_plan
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.validation import Analysis, analyze

__all__ = ["run_experiments"]


@contextlib.asynccontextmanager
async def _normal_sync_checkpointer(self: SqliteStore) -> AsyncIterator[Any]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(self.path)) as saver:
        await saver.conn.execute("PRAGMA synchronous=NORMAL")
        yield saver


async def sqlite_checkpointer_synchronous(runs: int = 40) -> dict[str, Any]:
    """``execute_stored_plan`` of a 1-step plan: the checkpointer connection at SQLite's default
    ``synchronous=FULL`` (an fsync per checkpoint commit) against ``NORMAL`` (the store's own)."""
    catalog = sim_catalog()
    plan = {"steps": [{"id": "a", "tool": "noop", "parameters": {"i": 1}}]}
    samples: dict[str, list[float]] = {"stock": [], "patched": []}
    with tempfile.TemporaryDirectory(prefix="toolplan-bench-exp-") as directory:
        stores = {
            "stock": SqliteStore(Path(directory) / "a.db"),
            "patched": SqliteStore(Path(directory) / "b.db"),
        }
        patched_checkpointer = types.MethodType(_normal_sync_checkpointer, stores["patched"])
        stores["patched"].checkpointer = patched_checkpointer  # type: ignore[method-assign]
        for index in range(runs + 3):
            for name, store in stores.items():
                ref = submit_plan(plan, store=store, catalog=catalog, max_steps=5)
                started = time.perf_counter()
                await execute_stored_plan(
                    ref.plan_id, ExecutionContext(store=store, catalog=catalog)
                )
                if index >= 3:  # the first runs create the checkpoint tables
                    samples[name].append((time.perf_counter() - started) * 1000)
        for store in stores.values():
            store.close()
    return _ab(samples, "ms")


@contextlib.contextmanager
def _started_without_await() -> Iterator[None]:
    stock = Recorder.started

    async def started(
        self: Recorder, step_id: str, tool: str, attempt: int, resolved: Any, started_at: str | None
    ) -> None:
        changes: dict[str, Any] = {
            "status": "running",
            "attempts": attempt,
            "resolved_parameters": resolved,
            "error": None,
        }
        if started_at is not None:
            changes["started_at"] = started_at
        loop = asyncio.get_running_loop()
        # Same single writer thread, so it is still stored before the step's final write.
        loop.run_in_executor(
            self._executor,
            functools.partial(self.store.update_step, self.plan_id, step_id, changes),
        )
        self._emit("started", step_id, tool, attempt)

    Recorder.started = started  # type: ignore[method-assign]
    try:
        yield
    finally:
        Recorder.started = stock  # type: ignore[method-assign]


@contextlib.contextmanager
def _cached_config_param() -> Iterator[None]:
    import langchain_core.tools.base as base

    stock = base._get_runnable_config_param
    cached = functools.lru_cache(maxsize=None)(stock)
    base._get_runnable_config_param = cached
    try:
        yield
    finally:
        base._get_runnable_config_param = stock


async def _engine_ab(
    patch: Callable[[], contextlib.AbstractContextManager[None]], dags: int
) -> dict[str, Any]:
    engine = EngineHarness()
    graphs = random_dags(dags)
    samples: dict[str, list[float]] = {"stock": [], "patched": []}
    await engine.run(graphs[0])
    for index, dag in enumerate(graphs):
        order = ("stock", "patched") if index % 2 == 0 else ("patched", "stock")
        for name in order:
            if name == "patched":
                with patch():
                    wall = await engine.run(dag)
            else:
                wall = await engine.run(dag)
            samples[name].append(wall / dag.critical_path)
    return _ab(samples, "wall/CP")


async def recorder_started_without_await(dags: int = 30) -> dict[str, Any]:
    """Measure 1's engine row with the ``running`` write enqueued instead of awaited."""
    return await _engine_ab(_started_without_await, dags)


async def langchain_config_param_cache(calls: int = 2000, dags: int = 30) -> dict[str, Any]:
    """``BaseTool.arun`` resolves the ``config`` parameter with ``get_type_hints`` on every call;
    cached per function: microseconds per ``tool.ainvoke`` and measure 1's engine row."""
    samples: dict[str, list[float]] = {"stock": [], "patched": []}
    for block in range(10):
        for name in ("stock", "patched") if block % 2 == 0 else ("patched", "stock"):
            with _cached_config_param() if name == "patched" else contextlib.nullcontext():
                started = time.perf_counter()
                for i in range(calls // 10):
                    await noop.ainvoke({"i": i})
                samples[name].append((time.perf_counter() - started) * 1e6 / (calls // 10))
    return {
        "tool_ainvoke": _ab(samples, "us"),
        "engine": await _engine_ab(_cached_config_param, dags),
    }


@contextlib.contextmanager
def _inline_writes() -> Iterator[None]:
    stock = Recorder._write

    async def write(self: Recorder, step_id: str, changes: Any) -> None:
        self.store.update_step(self.plan_id, step_id, changes)

    Recorder._write = write  # type: ignore[method-assign]
    try:
        yield
    finally:
        Recorder._write = stock  # type: ignore[method-assign]


@contextlib.contextmanager
def _direct_tool_call() -> Iterator[None]:
    from toolplan.engine import attempts

    stock = attempts.Caller._call

    async def call(self: Any, tool: Any, arguments: Any, config: Any, timeout: float) -> Any:
        return attempts.normalize_output(await tool.coroutine(**arguments))

    attempts.Caller._call = call  # type: ignore[method-assign]
    try:
        yield
    finally:
        attempts.Caller._call = stock  # type: ignore[method-assign]


@contextlib.contextmanager
def _inline_writes_and_direct_call() -> Iterator[None]:
    with _inline_writes(), _direct_tool_call():
        yield


async def engine_overhead_decomposition(dags: int = 45) -> dict[str, Any]:
    """Where measure 1's engine overhead goes: the same DAGs with store writes done inline on
    the event loop (no writer thread; fine for the in-memory store only), with the tool's
    coroutine called directly (no LangChain ``BaseTool.ainvoke``), with both, and bare asyncio."""
    from bench.schedulers import run_oracle

    variants: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
        "stock": contextlib.nullcontext,
        "inline_writes": _inline_writes,
        "direct_tool_call": _direct_tool_call,
        "both": _inline_writes_and_direct_call,
    }
    engine = EngineHarness()
    graphs = random_dags(dags)
    samples: dict[str, list[float]] = {name: [] for name in [*variants, "asyncio_floor"]}
    await engine.run(graphs[0])
    names = list(variants)
    for index, dag in enumerate(graphs):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            with variants[name]():
                samples[name].append(await engine.run(dag) / dag.critical_path)
        samples["asyncio_floor"].append(await run_oracle(dag) / dag.critical_path)
    return {
        "unit": "wall/CP",
        "runs": dags,
        **{
            name: {"median": round(median(v), 3), "p95": round(percentile(v, 95), 3)}
            for name, v in samples.items()
        },
    }


async def overhead_decomposition(steps: int = 1000, runs: int = 4) -> dict[str, Any]:
    """Measure 2's in-memory row (ms per step, zero-latency tools) with the same patches as
    :func:`engine_overhead_decomposition`, alternating run by run."""
    from bench.memstore import MemoryStore
    from bench.overhead import _engine, overhead_dag

    variants: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
        "stock": contextlib.nullcontext,
        "inline_writes": _inline_writes,
        "direct_tool_call": _direct_tool_call,
        "both": _inline_writes_and_direct_call,
    }
    dag, warm = overhead_dag(steps), overhead_dag(10)
    plan = plan_from_dag(dag, zero_latency=True)
    store = MemoryStore()
    await _engine(store, warm, plan_from_dag(warm, zero_latency=True))
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, patch in variants.items():
            with patch():
                samples[name].append(await _engine(store, dag, plan) * 1000 / steps)
    return {
        "unit": "ms per step",
        "steps": steps,
        "runs": runs,
        **{k: round(median(v), 3) for k, v in samples.items()},
    }


def reuse_stored_analysis(dags: int = 30) -> dict[str, Any]:
    """``run_plan_steps`` re-validates the stored plan with :func:`analyze`; the stored analysis
    (``PlanRecord.analysis``) could be loaded instead (tools still checked against the catalog)."""
    catalog = sim_catalog()
    again, loaded = [], []
    for dag in random_dags(dags):
        plan = load_plan(plan_from_dag(dag))
        stored = analyze(plan, catalog, max_steps=dag.size).to_json()
        started = time.perf_counter()
        analyze(plan, catalog, max_steps=dag.size)
        again.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        Analysis.from_json(stored)
        all(step.tool in catalog for step in plan.steps)
        loaded.append((time.perf_counter() - started) * 1000)
    return _ab({"stock": again, "patched": loaded}, "ms per execution")


def tool_stats_vs_history(sizes: tuple[int, ...] = (1_000, 10_000, 100_000)) -> dict[str, Any]:
    """``submit_plan`` calls ``Store.tool_stats()`` (an aggregate over every step record) for
    each plan: its cost on SQLite as the history grows. Executions are created through the store;
    their steps are then marked succeeded with one SQL statement (only the query is measured)."""
    result: dict[str, Any] = {"unit": "ms per tool_stats() call"}
    with tempfile.TemporaryDirectory(prefix="toolplan-bench-exp-") as directory:
        store = SqliteStore(Path(directory) / "history.db")
        catalog = sim_catalog()
        total = 0
        for size in sizes:
            while total < size:
                ref = submit_plan(
                    {"steps": [{"id": "a", "tool": "noop", "parameters": {"i": 1}}]},
                    store=store,
                    catalog=catalog,
                    max_steps=5,
                )
                store.create_execution(
                    ref.plan_id, [(f"s{i}", f"tool{i % 10}") for i in range(1000)], status="running"
                )
                total += 1000
            store._db.execute("UPDATE tp_steps SET status = 'succeeded', duration_ms = 1.0")
            samples = []
            for _ in range(5):
                started = time.perf_counter()
                store.tool_stats()
                samples.append((time.perf_counter() - started) * 1000)
            result[f"{size}_step_records"] = round(median(samples), 2)
        store.close()
    return result


def jongodb_update_vs_collection(sizes: tuple[int, ...] = (100, 1000, 2000)) -> dict[str, Any]:
    """Why the MongoDB rows stop at 100 steps on jongodb: ``update_one`` by a unique compound
    key, milliseconds, as the collection grows (pymongo directly, no toolplan code)."""
    from pymongo import ASCENDING
    from tests.support.mongo_server import JongoServer, fresh_db_name

    result: dict[str, Any] = {"unit": "ms per update_one"}
    with JongoServer() as server:
        client = server.client()
        database = client[fresh_db_name("exp")]
        for size in sizes:
            collection = database[f"steps{size}"]
            collection.create_index([("planId", ASCENDING), ("stepId", ASCENDING)], unique=True)
            collection.insert_many(
                [{"planId": "p", "stepId": f"s{i}", "status": "pending"} for i in range(size)]
            )
            started = time.perf_counter()
            for i in range(20):
                collection.update_one(
                    {"planId": "p", "stepId": f"s{i}"}, {"$set": {"status": "running"}}
                )
            result[f"{size}_documents"] = round((time.perf_counter() - started) * 1000 / 20, 2)
        client.close()
    return result


def _ab(samples: dict[str, list[float]], unit: str) -> dict[str, Any]:
    stock, patched = samples["stock"], samples["patched"]
    return {
        "unit": unit,
        "runs": len(stock),
        "stock": {"median": round(median(stock), 3), "p95": round(percentile(stock, 95), 3)},
        "patched": {"median": round(median(patched), 3), "p95": round(percentile(patched, 95), 3)},
    }


async def run_experiments() -> dict[str, Any]:
    """Every experiment; JSON-ready."""
    return {
        "sqlite_checkpointer_synchronous_normal": await sqlite_checkpointer_synchronous(),
        "engine_overhead_decomposition": await engine_overhead_decomposition(),
        "overhead_decomposition": await overhead_decomposition(),
        "recorder_started_without_await": await recorder_started_without_await(),
        "langchain_config_param_cache": await langchain_config_param_cache(),
        "reuse_stored_analysis": reuse_stored_analysis(),
        "tool_stats_vs_history": tool_stats_vs_history(),
        "jongodb_update_vs_collection": jongodb_update_vs_collection(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.experiments", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    results = asyncio.run(run_experiments())
    text = json.dumps(results, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
