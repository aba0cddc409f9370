"""LangGraph Studio's graphs (``langgraph.json``, ``langgraph dev``): the planner, executor and
agent graphs, compiled without a checkpointer (the server brings its own), whose default
contexts come from one :class:`~toolplan.client.AsyncToolplan` built from the environment.

Studio invokes a graph with a JSON context, so the nodes cannot be handed a context object: they
build one on first use from the environment (``TOOLPLAN_STORE``, ``TOOLPLAN_TOOLS``,
``TOOLPLAN_MODEL``, ...), once per distinct settings.
"""

from __future__ import annotations

import functools
from typing import Any

from toolplan._caches import register_cache
from toolplan.agent.graph import AgentContext, build_agent_graph
from toolplan.client import AsyncToolplan
from toolplan.config import Settings
from toolplan.pipeline.planning import build_planner_graph
from toolplan.planning.context import PlannerContext
from toolplan.runs.context import ExecutionContext
from toolplan.runs.graph import build_execution_graph

__all__ = [
    "agent_context",
    "agent_graph",
    "execution_context",
    "executor_graph",
    "planner_context",
    "planner_graph",
]


@functools.lru_cache(maxsize=4)
def _client(settings: Settings) -> AsyncToolplan:
    return AsyncToolplan(settings=settings)


register_cache(_client.cache_clear)


def planner_context() -> PlannerContext:
    """The planner's context for Studio: the environment's store, tools and model."""
    return _client(Settings.from_env()).planner_context()


def execution_context() -> ExecutionContext:
    """An execution's context for Studio: the environment's store, tools and backend."""
    return _client(Settings.from_env()).execution_context()


def agent_context() -> AgentContext:
    """The agent's context for Studio: the planner's and the executor's, and the environment's
    plan reuse mode."""
    client = _client(Settings.from_env())
    return AgentContext(
        client.planner_context(), client.execution_context(), reuse=client.settings.plan_reuse
    )


def planner_graph() -> Any:
    """The ``planner`` graph, for Studio: planning, then the plan stored."""
    return build_planner_graph(planner_context).compile(name="planner")


def executor_graph() -> Any:
    """The ``executor`` graph, for Studio."""
    return build_execution_graph(execution_context).compile(name="executor")


def agent_graph() -> Any:
    """The ``agent`` graph, for Studio."""
    return build_agent_graph(agent_context).compile(name="agent")
