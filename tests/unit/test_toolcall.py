"""The fast tool-call path gives exactly what ``BaseTool.ainvoke`` gives: results, validation
errors, ``ToolException``s and other exceptions, and the ``RunnableConfig`` the tool sees."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config
from langchain_core.tools import BaseTool, ToolException, tool
from pydantic import BaseModel, ConfigDict, Field

from toolplan.engine.toolcall import callbacks_configured, fast_path_applies, invoke_tool


class Point(BaseModel):
    x: int
    y: int = 0


@tool
async def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool
async def point(p: Point, tags: list[str] | None = None) -> dict[str, Any]:
    """Echo a nested model and a list."""
    return {"p": p.model_dump(), "tags": tags}


@tool
async def fail_business(reason: str) -> str:
    """Report a business error."""
    raise ToolException(f"refused: {reason}")


@tool
async def crash(n: int) -> float:
    """Raise an ordinary exception."""
    return 1 / n


@tool
async def with_config(label: str, config: RunnableConfig) -> dict[str, Any]:
    """Return what the tool sees of its config, by parameter and by context."""
    seen = ensure_config()
    return {
        "label": label,
        "param": dict(config.get("metadata", {})),
        "context": dict(seen.get("metadata", {})),
        "run_name": config.get("run_name"),
        "configurable": sorted(config.get("configurable", {})),
    }


class Aliased(BaseModel):
    """Arguments with an alias and a default (what the fast path must keep as LangChain does)."""

    model_config = ConfigDict(populate_by_name=True)
    count: int = Field(default=3, alias="n")
    label: str


@tool(args_schema=Aliased)
async def aliased(label: str, count: int = 99) -> dict[str, Any]:
    """Echo an aliased argument and a defaulted one (the model's default, 3, is what counts)."""
    return {"count": count, "label": label}


@tool
def sync_only(a: int) -> int:
    """A sync tool (always through ainvoke)."""
    return a * 2


CONFIG: RunnableConfig = {
    "run_name": "s1:with_config",
    "metadata": {"plan_id": "plan_x", "step_id": "s1", "attempt": 1, "idempotency_key": "k"},
    "configurable": {"store": object()},
}

CASES: list[tuple[BaseTool, dict[str, Any]]] = [
    (add, {"a": 2, "b": 3}),
    (add, {"a": "7"}),  # coerced like LangChain does
    (add, {"a": "seven"}),  # validation error
    (add, {}),  # missing argument
    (add, {"a": 1, "unknown": 2}),  # extra argument dropped
    (point, {"p": {"x": 1}, "tags": ["a"]}),
    (point, {"p": {"x": "bad"}}),
    (fail_business, {"reason": "no"}),
    (crash, {"n": 0}),
    (crash, {"n": 4}),
    (with_config, {"label": "l"}),
    (sync_only, {"a": 4}),
    (aliased, {"n": 5, "label": "x"}),  # by alias
    (aliased, {"count": 2, "label": "y"}),  # by name
    (aliased, {"label": "z"}),  # the default
    (aliased, {"n": "many", "label": "w"}),  # validation error
]


async def _outcome(coro: Any) -> tuple[str, Any]:
    try:
        return ("ok", await coro)
    except Exception as error:  # the test compares every kind of error
        detail = error.errors() if hasattr(error, "errors") else str(error)
        return (type(error).__name__, str(detail))


@pytest.mark.parametrize(("chosen", "arguments"), CASES, ids=lambda v: getattr(v, "name", None))
def test_fast_path_matches_ainvoke(chosen: BaseTool, arguments: dict[str, Any]) -> None:
    async def both() -> tuple[Any, Any]:
        slow = await _outcome(chosen.ainvoke(dict(arguments), config=CONFIG))
        fast = await _outcome(invoke_tool(chosen, dict(arguments), CONFIG, fast=True))
        return slow, fast

    slow, fast = asyncio.run(both())
    assert fast == slow


def test_which_tools_take_the_fast_path() -> None:
    assert fast_path_applies(add)
    assert not fast_path_applies(sync_only)
    handled = add.model_copy(update={"handle_tool_error": True})
    assert not fast_path_applies(handled)


def test_a_configured_callback_disables_the_fast_path() -> None:
    class Recorder(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.started: list[str] = []

        async def on_tool_start(self, serialized: dict[str, Any], input_str: str, **_: Any) -> None:
            self.started.append(serialized["name"])

    handler = Recorder()
    assert not callbacks_configured()
    assert callbacks_configured({"callbacks": [handler]})


def test_tracing_env_counts_as_a_callback() -> None:
    # LangSmith caches its environment per process: check in a fresh one.
    env = {**os.environ, "LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "not-used"}
    script = "from toolplan.engine.toolcall import callbacks_configured as c; print(c())"
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "True"


def test_the_fast_path_leaves_the_callers_context_as_it_found_it() -> None:
    """The fast path sets the child config in the calling task's own context (no task of its
    own): it must be gone again once the tool returns or raises, or the step's later calls
    (the recorder, the next attempt) would run as children of this one."""
    from langchain_core.runnables.config import var_child_runnable_config

    async def after(chosen: BaseTool, arguments: dict[str, Any]) -> Any:
        await _outcome(invoke_tool(chosen, arguments, CONFIG, fast=True))
        return var_child_runnable_config.get()

    assert asyncio.run(after(with_config, {"label": "l"})) is None
    assert asyncio.run(after(crash, {"n": 0})) is None
