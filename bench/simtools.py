"""Simulated tools for the scheduling, overhead, throughput and scale measures, and plans built
from :class:`~bench.dags.Dag` graphs."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.tools import tool

from bench.dags import Dag
from toolplan.tools import ToolCatalog, tagged

__all__ = ["SIM_TOOLS", "noop", "plan_from_dag", "sim_catalog", "sim_sleep"]


@tool
async def sim_sleep(seconds: float, inputs: list[Any] | None = None) -> dict[str, Any]:
    """Wait `seconds` (a simulated I/O-bound tool), then return {"slept": seconds}."""
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@tool
async def noop(i: int, inputs: list[Any] | None = None) -> dict[str, Any]:
    """A zero-latency tool: returns {"i": i, "n": number of inputs}."""
    return {"i": i, "n": len(inputs or ())}


# Pure functions: read-only, so program order adds no edge between them (the scheduling measures
# keep their DAGs), and never cached, so a repeated call still waits its latency.
for _pure in (sim_sleep, noop):
    tagged(_pure, "read-only", cache_ttl=0)

SIM_TOOLS = [sim_sleep, noop]


def sim_catalog() -> ToolCatalog:
    """A catalog with the simulated tools only."""
    return ToolCatalog(SIM_TOOLS, source="bench.simtools")


def plan_from_dag(dag: Dag, *, zero_latency: bool = False) -> dict[str, Any]:
    """The canonical plan for ``dag``: each step receives its dependencies' outputs by template,
    so edges are inferred exactly as for an LLM-written plan."""
    steps = []
    for index, step in enumerate(dag.order):
        inputs = [f"{{{{{dep}.{'i' if zero_latency else 'slept'}}}}}" for dep in dag.deps[step]]
        parameters: dict[str, Any] = (
            {"i": index} if zero_latency else {"seconds": round(dag.latency[step], 6)}
        )
        if inputs:
            parameters["inputs"] = inputs
        steps.append(
            {"id": step, "tool": "noop" if zero_latency else "sim_sleep", "parameters": parameters}
        )
    return {"reasoning": f"benchmark DAG {dag.name}", "steps": steps}
