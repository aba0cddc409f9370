"""Settings from environment variables and flags, in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from toolplan.analysis import DEFAULT_MAX_STEPS
from toolplan.engine.policies import ExecutionOptions, RetryPolicy
from toolplan.errors import InvalidInput
from toolplan.store import DEFAULT_STORE_URI

__all__ = ["DEFAULT_TOOL_MODULES", "Settings"]

DEFAULT_TOOL_MODULES: tuple[str, ...] = ("blog", "metrics", "weather")
"""Tool modules loaded when neither ``--tools`` nor ``TOOLPLAN_TOOLS`` is given."""


def _number(env: Mapping[str, str], name: str, kind: type[float] | type[int]) -> Any:
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        return kind(raw)
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not a valid {kind.__name__}") from None


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about where things are and how to run them.

    Environment variables: ``TOOLPLAN_STORE``, ``TOOLPLAN_TOOLS`` (comma-separated modules),
    ``TOOLPLAN_CONCURRENCY``, ``TOOLPLAN_MAX_STEPS``, ``TOOLPLAN_TIMEOUT`` (default step timeout,
    seconds), ``TOOLPLAN_BACKOFF`` (first retry delay, seconds), ``TOOLPLAN_LEASE_SECONDS``,
    ``TOOLPLAN_OUTPUT_LIMIT_BYTES`` (step outputs larger than this are stored truncated),
    ``TOOLPLAN_MCP`` (an ``mcpServers`` JSON file whose servers add tools).
    """

    store_uri: str = DEFAULT_STORE_URI
    tool_modules: tuple[str, ...] = DEFAULT_TOOL_MODULES
    max_steps: int = DEFAULT_MAX_STEPS
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)
    mcp_config: str | None = None
    """``mcpServers`` JSON file whose servers add tools (``TOOLPLAN_MCP``, ``--mcp``)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``env`` (default: ``os.environ``)."""
        env = os.environ if env is None else env
        tools = env.get("TOOLPLAN_TOOLS")
        modules = tuple(m.strip() for m in tools.split(",") if m.strip()) if tools else None
        retry = RetryPolicy()
        backoff = _number(env, "TOOLPLAN_BACKOFF", float)
        if backoff is not None:
            retry = replace(retry, initial_backoff=backoff)
        options: dict[str, Any] = {"retry": retry}
        for name, key, kind in (
            ("TOOLPLAN_CONCURRENCY", "concurrency", int),
            ("TOOLPLAN_TIMEOUT", "default_timeout", float),
            ("TOOLPLAN_LEASE_SECONDS", "lease_seconds", float),
            ("TOOLPLAN_OUTPUT_LIMIT_BYTES", "output_limit_bytes", int),
        ):
            value = _number(env, name, kind)
            if value is not None:
                options[key] = value
        try:
            execution = ExecutionOptions(**options)
        except ValueError as error:
            raise InvalidInput(str(error)) from None
        return cls(
            store_uri=env.get("TOOLPLAN_STORE") or DEFAULT_STORE_URI,
            tool_modules=modules or DEFAULT_TOOL_MODULES,
            max_steps=_number(env, "TOOLPLAN_MAX_STEPS", int) or DEFAULT_MAX_STEPS,
            execution=execution,
            mcp_config=env.get("TOOLPLAN_MCP") or None,
        )

    def with_overrides(
        self,
        *,
        store_uri: str | None = None,
        tool_modules: list[str] | tuple[str, ...] | None = None,
        concurrency: int | None = None,
        fail_fast: bool | None = None,
        max_steps: int | None = None,
        mcp_config: str | None = None,
    ) -> Settings:
        """A copy with the flags a user gave on the command line applied."""
        execution = self.execution
        try:
            if concurrency is not None:
                execution = replace(execution, concurrency=concurrency)
            if fail_fast is not None:
                execution = replace(execution, fail_fast=fail_fast)
        except ValueError as error:
            raise InvalidInput(str(error)) from None
        return replace(
            self,
            store_uri=store_uri or self.store_uri,
            tool_modules=tuple(tool_modules) if tool_modules else self.tool_modules,
            max_steps=max_steps or self.max_steps,
            execution=execution,
            mcp_config=mcp_config or self.mcp_config,
        )
