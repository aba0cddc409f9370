"""The schedulers measure 1 compares, each running a :class:`~bench.dags.Dag` whose steps sleep for
their simulated latency. Every function returns the wall time in seconds.

Only the toolplan rows use toolplan code; the references are written here, in the bench only:

- ``oracle``: bare asyncio, one task per step awaiting its dependencies (the best this simulation
  can do on this machine: what remains above the critical path is timer and event-loop cost);
- ``waves``: Kahn layers, each gathered before the next starts (seed 000's scheduler);
- ``langgraph_send``: a plain LangGraph ``StateGraph`` whose router ``Send``s every ready step;
  a superstep ends when all of its steps have finished;
- ``langgraph_functional``: LangGraph's functional API, every ``@task`` launched the moment the
  futures of its dependencies resolve (what the design sketch suggests for an eager engine).
"""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from bench.dags import Dag
from bench.memstore import MemoryStore
from bench.simtools import plan_from_dag, sim_catalog
from toolplan.config.policies import ExecutionOptions
from toolplan.engine.scheduler import StepOutcome, schedule
from toolplan.runs.runner import ExecutionContext, run_plan_steps
from toolplan.service.operations import submit_plan

__all__ = [
    "run_langgraph_functional",
    "run_langgraph_send",
    "run_oracle",
    "run_toolplan_engine",
    "run_toolplan_schedule",
    "run_waves",
]


async def run_oracle(dag: Dag, concurrency: int | None = None) -> float:
    """Bare asyncio: each step awaits its dependencies' tasks, then sleeps."""
    gate = asyncio.Semaphore(concurrency or dag.size)
    tasks: dict[str, asyncio.Task[None]] = {}

    async def one(step: str) -> None:
        if dag.deps[step]:
            await asyncio.gather(*(tasks[d] for d in dag.deps[step]))
        async with gate:
            await asyncio.sleep(dag.latency[step])

    started = time.perf_counter()
    for step in dag.order:
        tasks[step] = asyncio.ensure_future(one(step))
    await asyncio.gather(*tasks.values())
    return time.perf_counter() - started


async def run_waves(dag: Dag, concurrency: int | None = None) -> float:
    """The wave/superstep reference: each Kahn layer is gathered before the next starts."""
    gate = asyncio.Semaphore(concurrency or dag.size)

    async def one(step: str) -> None:
        async with gate:
            await asyncio.sleep(dag.latency[step])

    started = time.perf_counter()
    for layer in dag.layers:
        await asyncio.gather(*(one(step) for step in layer))
    return time.perf_counter() - started


async def run_toolplan_schedule(dag: Dag, concurrency: int | None = None) -> float:
    """toolplan's scheduler alone (``toolplan.engine.scheduler.schedule``); a step is a sleep."""

    async def run(step: str) -> StepOutcome:
        await asyncio.sleep(dag.latency[step])
        return StepOutcome("succeeded")

    async def skip(step: str, reason: str, kind: object = None) -> None:
        return None

    started = time.perf_counter()
    await schedule(dag.order, dag.deps, run, skip, concurrency=concurrency or dag.size)
    return time.perf_counter() - started


class EngineHarness:
    """The real engine on an in-memory store: plans are stored first, only execution is timed."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.catalog = sim_catalog()

    async def run(self, dag: Dag, concurrency: int | None = None) -> float:
        """``run_plan_steps``: schedule + StepRunner (templates, LangChain tool call, timeout) +
        Recorder (every transition written to the store) + lease."""
        ref = submit_plan(
            plan_from_dag(dag), store=self.store, catalog=self.catalog, max_steps=dag.size
        )
        record = self.store.get_plan(ref.plan_id)
        assert record is not None
        ctx = ExecutionContext(
            store=self.store,
            catalog=self.catalog,
            options=ExecutionOptions(concurrency=concurrency or dag.size),
        )
        started = time.perf_counter()
        execution = await run_plan_steps(ctx, record)
        wall = time.perf_counter() - started
        if execution.status != "succeeded":
            raise RuntimeError(f"{dag.name}: execution ended {execution.status}")
        return wall


async def run_toolplan_engine(dag: Dag, concurrency: int | None = None) -> float:
    """:meth:`EngineHarness.run` on a fresh in-memory store."""
    return await EngineHarness().run(dag, concurrency)


class _SendState(TypedDict):
    done: Annotated[list[str], operator.add]


def _send_graph(dag: Dag) -> Any:
    launched: set[str] = set()

    def route(state: _SendState) -> list[Send] | str:
        done = set(state["done"])
        ready = [s for s in dag.order if s not in launched and all(d in done for d in dag.deps[s])]
        if not ready:
            return END
        launched.update(ready)
        return [Send("run_step", {"step": s}) for s in ready]

    async def run_step(payload: dict[str, str]) -> dict[str, list[str]]:
        await asyncio.sleep(dag.latency[payload["step"]])
        return {"done": [payload["step"]]}

    def dispatch(state: _SendState) -> dict[str, list[str]]:
        return {"done": []}

    builder = StateGraph(_SendState)
    builder.add_node("dispatch", dispatch)
    builder.add_node("run_step", run_step)  # type: ignore[arg-type]
    builder.add_edge(START, "dispatch")
    builder.add_conditional_edges("dispatch", route, ["run_step", END])
    builder.add_edge("run_step", "dispatch")
    return builder.compile()


async def run_langgraph_send(dag: Dag, concurrency: int | None = None) -> float:
    """A StateGraph: ``dispatch`` ``Send``s every ready step to ``run_step``; supersteps."""
    graph = _send_graph(dag)
    config: dict[str, Any] = {"recursion_limit": 4 * dag.size + 10}
    if concurrency:
        config["max_concurrency"] = concurrency
    started = time.perf_counter()
    state = await graph.ainvoke({"done": []}, config)
    wall = time.perf_counter() - started
    if len(set(state["done"])) != dag.size:
        raise RuntimeError(f"{dag.name}: LangGraph ran {len(state['done'])} of {dag.size} steps")
    return wall


def _functional_flow(dag: Dag) -> Any:
    @task
    async def run_step(step: str) -> str:
        await asyncio.sleep(dag.latency[step])
        return step

    @entrypoint()
    async def flow(_: dict[str, Any]) -> int:
        futures: dict[str, asyncio.Future[str]] = {}

        async def when_ready(step: str) -> str:
            if dag.deps[step]:
                await asyncio.gather(*(futures[d] for d in dag.deps[step]))
            return await run_step(step)

        for step in dag.order:
            futures[step] = asyncio.ensure_future(when_ready(step))
        return len(await asyncio.gather(*futures.values()))

    return flow


async def run_langgraph_functional(dag: Dag, concurrency: int | None = None) -> float:
    """LangGraph functional API: ``@task`` futures launched eagerly (no checkpointer)."""
    flow = _functional_flow(dag)
    started = time.perf_counter()
    count = await flow.ainvoke({})
    wall = time.perf_counter() - started
    if count != dag.size:
        raise RuntimeError(f"{dag.name}: functional API ran {count} of {dag.size} steps")
    return wall
