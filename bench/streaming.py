"""Streamed plan execution (issue 45) against plan-then-execute, in the same run.

    python -m bench.streaming                       # scripted slow model: ~2 min
    python -m bench.streaming --scale 0.25          # the same shape, 4x faster
    . /tmp/serve.env && python -m bench.streaming --real --out /tmp/streaming.json

**Scripted** (the issue's goal): a local OpenAI-compatible server (``tests/support/fake_openai``)
streams a 6-statement Python plan over 12 s (one statement every 2 s: statement k is complete
when statement k+1 starts, the last one when the answer ends), and each of the plan's tools is
read-only and takes 2 s. Two plan shapes:

* ``chain``: each step takes the previous step's output (``s2 = fetch(key=s1["next"])``), the
  shape where plan-then-execute waits longest: planning, then 6 tools one after the other;
* ``fan-out``: six independent calls. Plan-then-execute runs them side by side after planning,
  so streaming cannot save more than the time the last statement takes to arrive: it shows where
  streaming does not help.

Each run is the real client end to end (``Toolplan.run(FromQuery)``: the ``ChatOpenAI`` client,
streamed planning, validation, storing, execution) on a fresh SQLite store (no result cache
shared between runs), with ``stream_execution`` on and off, alternating. Reported per mode: the
median end-to-end time, planning time (until the plan was stored), time to the first tool call,
and the goal checks: streamed end-to-end <= planning + one tool + 10 %, and >= 1.5x faster than
plan-then-execute.

**Real** (``--real``): the same two modes against the model at ``OPENAI_BASE_URL``
(``TOOLPLAN_MODEL``, default ``openai:qwen2.5-coder-1.5b-instruct``), on the weather and metrics
queries of ``--queries`` (a file of one query per line; default :data:`REAL_QUERIES`), with the
built-in ``weather`` and ``metrics`` tools whose reads are tagged ``read-only`` for the run
(``get_weather``, ``list_metrics``, ``query_metric``). Reported: median time to the first tool
call, end-to-end median, and how many plans succeeded in each mode (accuracy unchanged?).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["REAL_QUERIES", "run_real", "run_scripted"]

REAL_QUERIES = (
    "What is the weather in Paris?",
    "Compare the weather in Madrid and in Oslo",
    "What is the current cpu_usage?",
    "Is memory_usage over 80? Check the threshold",
    "Get the weather in Tokyo and in Berlin, then compare them",
    "List the metrics, then query cpu_usage",
)


def _chain_plan(steps: int) -> str:
    lines = ['s1 = fetch(key="k1")']
    lines += [f's{i} = fetch(key=s{i - 1}["next"])' for i in range(2, steps + 1)]
    return "\n".join(lines) + "\n"


def _fan_plan(steps: int) -> str:
    return "\n".join(f's{i} = fetch(key="k{i}")' for i in range(1, steps + 1)) + "\n"


class _Clock:
    """When each tool call started, relative to the run's start."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.calls: list[float] = []

    def reset(self) -> None:
        self.started = time.perf_counter()
        self.calls = []

    def call(self) -> None:
        self.calls.append(time.perf_counter() - self.started)


def _fetch_tool(seconds: float, clock: _Clock) -> BaseTool:
    from toolplan.tools import tagged

    async def fetch(key: str) -> dict[str, str]:
        """Read-only: look ``key`` up (slowly); returns {"key": key, "next": the next key}."""
        clock.call()
        await asyncio.sleep(seconds)
        return {"key": key, "next": f"{key}+"}

    return tagged(StructuredTool.from_function(coroutine=fetch, name="fetch"), "read-only")


def _paced(text: str, every: float) -> Any:
    """A ``Reply.hold`` that makes a one-character-per-chunk answer arrive one line every
    ``every`` seconds: each line's first character (after the first line) and the answer's end
    wait ``every`` seconds, so statement k is complete at ``k * every``."""
    starts = {i + 1 for i, char in enumerate(text) if i > 0 and text[i - 1] == "\n" and char}
    end = len(text) + 1  # the finish chunk

    def hold(index: int) -> None:
        if index in starts or index == end:
            time.sleep(every)

    return hold


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


async def _run_once(
    query: str,
    tools: list[BaseTool],
    clock: _Clock,
    *,
    stream: bool,
) -> dict[str, Any]:
    from toolplan.client import AsyncToolplan
    from toolplan.config import Settings
    from toolplan.errors import ToolplanError
    from toolplan.pipeline.flow import FromQuery

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{Path(tmp) / 's.db'}")
        client = AsyncToolplan(settings=settings, tools=tools, stream_execution=stream)
        clock.reset()
        row: dict[str, Any] = {"mode": "streamed" if stream else "plan-then-execute"}
        try:
            outcome = await client.run(FromQuery(query))
        except ToolplanError as error:
            row.update(status="error", error=error.message)
        else:
            row["status"] = outcome.result.status if outcome.result is not None else "not run"
            row["planningS"] = round(outcome.planned.planning_ms / 1000, 2)
            early = client.store.get_plan(outcome.planned.ref.plan_id).meta.get("earlyStarts") or []
            row["startedEarly"] = sum(1 for e in early if e["status"] == "adopted")
            row["steps"] = (
                len(outcome.planned.planning.plan["steps"]) if outcome.planned.planning else None
            )
        finally:
            client.close()
        row["endToEndS"] = round(time.perf_counter() - clock.started, 2)
        row["firstToolS"] = round(min(clock.calls), 2) if clock.calls else None
        row["toolCalls"] = len(clock.calls)
        return row


async def run_scripted(
    *, scale: float = 1.0, repeats: int = 2, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """The issue's scripted model: 6 statements over ``12 * scale`` s, tools of ``2 * scale`` s."""
    from tests.support.fake_openai import FakeOpenAIServer, Reply

    every, tool_s = 2.0 * scale, 2.0 * scale
    clock = _Clock()
    tools = [_fetch_tool(tool_s, clock)]
    shapes = {"chain": _chain_plan(6), "fan-out": _fan_plan(6)}
    report: dict[str, Any] = {"model": "scripted", "planS": 6 * every, "toolS": tool_s}
    with FakeOpenAIServer(api_key="unused") as server:
        env = {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "unused",
            "TOOLPLAN_MODEL": "openai:gpt-4o-mini",
            "TOOLPLAN_PLAN_FORMAT": "python",
            "TOOLPLAN_LLM_RETRIES": "0",
            "TOOLPLAN_PLAN_REUSE": "off",
        }
        with _environment(env):
            # a first run imports and sets up what every later run reuses: not measured
            warm = 's1 = fetch(key="warm")\n'
            for stream in (True, False):
                server.script([Reply.content(warm)])
                await _run_once("warm up", tools, clock, stream=stream)
            for shape, text in shapes.items():
                rows = []
                for _ in range(repeats):
                    for stream in (True, False):
                        reply = Reply.content(text).with_(
                            pieces=len(text), hold=_paced(text, every)
                        )
                        server.script([reply])
                        row = await _run_once(f"fetch a {shape}", tools, clock, stream=stream)
                        log(f"{shape} {row['mode']}: {json.dumps(row)}")
                        rows.append(row)
                report[shape] = _summary(rows, planned_s=6 * every, tool_s=tool_s)
    return report


def _summary(rows: list[dict[str, Any]], *, planned_s: float, tool_s: float) -> dict[str, Any]:
    def median(mode: str, key: str) -> float | None:
        values = [r[key] for r in rows if r["mode"] == mode and r.get(key) is not None]
        return round(statistics.median(values), 2) if values else None

    out: dict[str, Any] = {}
    for mode in ("streamed", "plan-then-execute"):
        out[mode] = {
            "endToEndS": median(mode, "endToEndS"),
            "planningS": median(mode, "planningS"),
            "firstToolS": median(mode, "firstToolS"),
            "succeeded": sum(r["status"] == "succeeded" for r in rows if r["mode"] == mode),
            "runs": sum(r["mode"] == mode for r in rows),
        }
    streamed, pte = out["streamed"]["endToEndS"], out["plan-then-execute"]["endToEndS"]
    planning = out["streamed"]["planningS"]
    if streamed and pte and planning:
        out["speedup"] = round(pte / streamed, 2)
        out["boundS"] = round((planning + tool_s) * 1.1, 2)
        out["withinBound"] = streamed <= out["boundS"]
        out["atLeast1.5x"] = pte / streamed >= 1.5
    out["rows"] = rows
    return out


def _real_tools(clock: _Clock, delay: float = 0.0) -> list[BaseTool]:
    """The built-in weather and metrics tools, the reads tagged ``read-only`` for the run, each
    call noted on ``clock`` and taking ``delay`` seconds more (the built-in tools answer at once;
    a real weather or metrics service does not)."""
    from toolplan.tools import ToolCatalog, tagged
    from toolplan.tools.loading import load_tool_modules

    catalog: ToolCatalog = load_tool_modules(("weather", "metrics"))
    reads = {"get_weather", "list_metrics", "query_metric"}
    tools = []
    for tool in catalog:

        def make(original: BaseTool) -> BaseTool:
            async def call(**arguments: Any) -> Any:
                clock.call()
                if delay:
                    await asyncio.sleep(delay)
                return await original.ainvoke(arguments)

            wrapped = StructuredTool(
                name=original.name,
                description=original.description,
                args_schema=original.tool_call_schema,
                coroutine=call,
                tags=list(original.tags or []),
                metadata=dict(original.metadata or {}),
            )
            return tagged(wrapped, "read-only") if original.name in reads else wrapped

        tools.append(make(tool))
    return tools


async def run_real(
    queries: list[str],
    *,
    repeats: int = 1,
    tool_seconds: float = 0.0,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Each query planned by the real model, streamed and not, alternating."""
    if not os.environ.get("OPENAI_BASE_URL"):
        raise SystemExit("--real needs OPENAI_BASE_URL (. /tmp/serve.env)")
    model = os.environ.get("TOOLPLAN_MODEL", "openai:qwen2.5-coder-1.5b-instruct")
    clock = _Clock()
    tools = _real_tools(clock, tool_seconds)
    rows = []
    env = {"TOOLPLAN_MODEL": model, "TOOLPLAN_PLAN_FORMAT": "python", "TOOLPLAN_PLAN_REUSE": "off"}
    with _environment(env):
        for stream in (True, False):  # imports and setup, not measured (2 model calls)
            log(json.dumps({"warmUp": await _run_once(queries[0], tools, clock, stream=stream)}))
        for _ in range(repeats):
            for number, query in enumerate(queries):
                # the mode that goes second finds the query in the server's prompt cache:
                # alternate which one that is
                for stream in (True, False) if number % 2 == 0 else (False, True):
                    row = {"query": query, **await _run_once(query, tools, clock, stream=stream)}
                    log(json.dumps(row))
                    rows.append(row)
    summary = _summary(rows, planned_s=0.0, tool_s=0.0)
    for key in ("boundS", "withinBound", "atLeast1.5x"):
        summary.pop(key, None)
    return {"model": model, "queries": len(queries), "toolSeconds": tool_seconds, **summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="plan with OPENAI_BASE_URL's model")
    parser.add_argument("--queries", type=Path, help="--real: one query per line")
    parser.add_argument("--scale", type=float, default=1.0, help="scripted: time scale")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--tool-seconds", type=float, default=0.0, help="--real: added latency of each tool call"
    )
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    args = parser.parse_args()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.real:
        queries = (
            [q for q in args.queries.read_text().splitlines() if q.strip()]
            if args.queries
            else list(REAL_QUERIES)
        )
        report = asyncio.run(
            run_real(queries, repeats=args.repeats, tool_seconds=args.tool_seconds, log=log)
        )
    else:
        report = asyncio.run(run_scripted(scale=args.scale, repeats=args.repeats, log=log))
    text = json.dumps(report, indent=2, default=str)
    if args.out:
        args.out.write_text(text + "\n")

    def brief(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: brief(v) for k, v in value.items() if k != "rows"}
        return value

    print(json.dumps(brief(report), indent=2))


if __name__ == "__main__":
    main()
