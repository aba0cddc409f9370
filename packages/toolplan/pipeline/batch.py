"""Batch runs over query files: plan (and optionally execute) many queries, resumably.

Input files:

- ``.txt``: one query per line; blank lines and lines starting with ``#`` are ignored. The id of a
  query is its line number, so keep the file stable between resumed runs.
- ``.jsonl``: one object per line, ``{"id", "query", "expected": {"tools": [...]}}``; ``id``
  defaults to the line number and ``expected`` is optional.

Each finished query appends one JSON line to the output file at once (flushed), so an interrupted
batch keeps everything done and a rerun skips ids already present.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolplan.config.settings import ReuseMode
from toolplan.errors import InvalidInput, ToolplanError
from toolplan.pipeline.flow import FromQuery, Planned, obtain_plan, plan_then_execute
from toolplan.planning.context import PlannerContext
from toolplan.planning.planner import PlanDeclined, PlanningFailed
from toolplan.runs.runner import ExecutionContext

__all__ = [
    "BatchItem",
    "load_queries",
    "read_results",
    "run_batch",
    "summarize",
]


@dataclass(frozen=True)
class BatchItem:
    """One query of a batch."""

    id: str
    query: str
    expected_tools: tuple[str, ...] | None = None


def load_queries(path: str | Path) -> list[BatchItem]:
    """Read a ``.txt`` or ``.jsonl`` query file; every problem names its line."""
    path = Path(path)
    if path.suffix not in (".txt", ".jsonl"):
        raise InvalidInput(f"query file {str(path)!r} must end in .txt or .jsonl")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"query file {str(path)!r} does not exist") from None
    items: list[BatchItem] = []
    if path.suffix == ".txt":
        for number, line in enumerate(lines, 1):
            if line.strip() and not line.lstrip().startswith("#"):
                items.append(BatchItem(str(number), line.strip()))
    else:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            items.append(_jsonl_item(path, number, line))
    seen = Counter(item.id for item in items)
    duplicates = sorted(key for key, count in seen.items() if count > 1)
    if duplicates:
        raise InvalidInput(f"{path}: duplicate ids {', '.join(map(repr, duplicates))}")
    if not items:
        raise InvalidInput(f"{path} holds no queries")
    return items


def _jsonl_item(path: Path, number: int, line: str) -> BatchItem:
    where = f"{path}:{number}"
    try:
        data = json.loads(line)
    except ValueError as error:
        raise InvalidInput(f"{where}: not valid JSON ({error})") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("query"), str)
        or not data["query"].strip()
    ):
        raise InvalidInput(f'{where}: expected an object with a non-empty "query" string')
    expected = data.get("expected") or {}
    tools = expected.get("tools") if isinstance(expected, dict) else None
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, str) for t in tools)
    ):
        raise InvalidInput(f'{where}: "expected.tools" must be a list of tool names')
    return BatchItem(
        str(data.get("id", number)),
        data["query"].strip(),
        tuple(tools) if tools is not None else None,
    )


def read_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """Result lines already in an output file, by id (a torn last line is ignored)."""
    path = Path(path)
    if not path.exists():
        return {}
    results: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a line cut short by a hard kill; that query runs again
        if isinstance(data, dict) and "id" in data:
            results[str(data["id"])] = data
    return results


async def _process(
    item: BatchItem,
    planner: PlannerContext,
    executor: ExecutionContext | None,
    reuse: ReuseMode,
) -> dict[str, Any]:
    line: dict[str, Any] = {
        "id": item.id,
        "query": item.query,
        "requestId": None,
        "planId": None,
        "status": None,
        "error": None,
        "tools": [],
        "llmCalls": 0,
        "usage": {"inputTokens": 0, "outputTokens": 0},
        "planMs": None,
        "execMs": None,
        "reusedFrom": None,
    }
    started = time.perf_counter()
    exec_started: float | None = None

    def planned(stored: Planned) -> None:
        nonlocal exec_started
        line.update(
            requestId=stored.ref.request_id,
            planId=stored.ref.plan_id,
            status=stored.ref.status,
            planMs=_ms(started),
        )
        if stored.planning is not None:
            outcome = stored.planning
            line.update(
                tools=[step["tool"] for step in outcome.plan["steps"]],
                llmCalls=outcome.llm_calls,
                usage=outcome.usage,
            )
        else:  # a stored plan reused: 0 LLM calls
            line.update(tools=list(stored.tools), reusedFrom=stored.reused_from, reuse=stored.reuse)
        exec_started = time.perf_counter()

    source = FromQuery(item.query, reuse=reuse)
    try:
        if executor is None:
            planned(
                await obtain_plan(
                    source,
                    store=planner.store,
                    catalog=planner.catalog,
                    max_steps=planner.max_steps,
                    planner=planner,
                    limits=planner.limits,
                    estimates=planner.estimates,
                )
            )
            return line
        run = await plan_then_execute(
            source,
            executor,
            max_steps=planner.max_steps,
            planner=planner,
            review="skip",  # stored as needs_review, not run: the line says so
            on_planned=planned,
            limits=planner.limits,
            estimates=planner.estimates,
        )
    except PlanningFailed as failed:
        line.update(
            status="declined" if isinstance(failed, PlanDeclined) else "invalid",
            error=failed.message,
            llmCalls=failed.llm_calls,
            usage=failed.usage,
        )
        if isinstance(failed, PlanDeclined):
            line["declined"] = failed.reason
        line["planMs"] = _ms(started)
        return line
    except ToolplanError as error:
        line.update(status="error", error=error.message)
        if exec_started is None:
            line["planMs"] = _ms(started)
        else:
            line["execMs"] = _ms(exec_started)
        return line
    if run.result is not None:
        failed_steps = [s for s in run.result.steps if s.status != "succeeded"]
        line.update(
            status=run.result.status,
            error="; ".join(f"{s.step_id}: {s.error}" for s in failed_steps) or None,
            execMs=run.execution_ms,
        )
    return line


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


async def run_batch(
    items: Iterable[BatchItem],
    planner: PlannerContext,
    *,
    out: str | Path,
    executor: ExecutionContext | None = None,
    concurrency: int = 4,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    reuse: ReuseMode = "exact",
) -> list[dict[str, Any]]:
    """Plan (and with ``executor``, execute) each item not yet in ``out``; append results to it.

    Before planning, each query looks for a stored plan to reuse (:mod:`toolplan.planning.reuse`,
    ``reuse``: ``toolplan batch`` passes the settings' ``TOOLPLAN_PLAN_REUSE``): a reused query's
    line has ``reusedFrom``, ``reuse`` and ``llmCalls: 0``.

    One failing query never stops the batch: its line records the error. Cancelling the returned
    coroutine (Ctrl-C) stops cleanly; finished lines are already in ``out``.
    """
    if concurrency < 1:
        raise InvalidInput("--concurrency must be at least 1")
    mode = reuse
    out = Path(out)
    done = read_results(out)
    pending = [item for item in items if item.id not in done]
    out.parent.mkdir(parents=True, exist_ok=True)
    gate = asyncio.Semaphore(concurrency)
    written: list[dict[str, Any]] = []
    with out.open("a", encoding="utf-8") as handle:

        def write(line: dict[str, Any]) -> None:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            written.append(line)
            if on_result is not None:
                on_result(line)

        async def one(item: BatchItem) -> None:
            async with gate:
                try:
                    line = await _process(item, planner, executor, mode)
                except (asyncio.CancelledError, KeyboardInterrupt):
                    raise
                except Exception as error:  # never let one query stop the batch
                    line = {
                        "id": item.id,
                        "query": item.query,
                        "status": "error",
                        "error": repr(error),
                    }
                write(line)

        # The executions of a batch share one checkpointer connection.
        async with (
            executor.store.keep_checkpointer() if executor is not None else contextlib.nullcontext()
        ):
            await _gather_all(one(item) for item in pending)
    return written


async def _gather_all(coroutines: Iterable[Awaitable[None]]) -> None:
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(items: list[BatchItem], results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Counts by status, latency percentiles, LLM usage and tool-selection quality."""
    rows = [results[item.id] for item in items if item.id in results]
    plan_ms = [r["planMs"] for r in rows if isinstance(r.get("planMs"), int | float)]
    exec_ms = [r["execMs"] for r in rows if isinstance(r.get("execMs"), int | float)]
    summary: dict[str, Any] = {
        "queries": len(items),
        "done": len(rows),
        "byStatus": dict(sorted(Counter(str(r.get("status")) for r in rows).items())),
        "planMs": {"p50": _percentile(plan_ms, 0.5), "p95": _percentile(plan_ms, 0.95)},
        "execMs": {"p50": _percentile(exec_ms, 0.5), "p95": _percentile(exec_ms, 0.95)},
        "llmCalls": sum(int(r.get("llmCalls") or 0) for r in rows),
        "inputTokens": sum(int((r.get("usage") or {}).get("inputTokens", 0)) for r in rows),
        "outputTokens": sum(int((r.get("usage") or {}).get("outputTokens", 0)) for r in rows),
        "cachedInputTokens": sum(
            int((r.get("usage") or {}).get("cachedInputTokens", 0)) for r in rows
        ),
        "repairs": sum(max(0, int(r.get("llmCalls") or 0) - 1) for r in rows),
        "reused": sum(1 for r in rows if r.get("reusedFrom")),
        "reusedByMode": dict(
            sorted(Counter(str(r.get("reuse")) for r in rows if r.get("reusedFrom")).items())
        ),
        "reusedFrom": {
            str(r["id"]): r["reusedFrom"] for r in rows if r.get("reusedFrom") and "id" in r
        },
        "toolSelection": None,
    }
    scored = [
        (item, results[item.id])
        for item in items
        if item.expected_tools is not None and item.id in results
    ]
    if scored:
        hits = predicted = expected = exact = 0
        for item, row in scored:
            chosen = set(row.get("tools") or [])
            wanted = set(item.expected_tools or ())
            hits += len(chosen & wanted)
            predicted += len(chosen)
            expected += len(wanted)
            exact += chosen == wanted
        summary["toolSelection"] = {
            "scored": len(scored),
            "precision": round(hits / predicted, 4) if predicted else None,
            "recall": round(hits / expected, 4) if expected else None,
            "exactSetAccuracy": round(exact / len(scored), 4),
        }
    return summary
