"""Settings from environment variables and flags, in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from toolplan._caches import clear_caches, register_cache
from toolplan.analysis import DEFAULT_MAX_STEPS
from toolplan.analysis.estimates import EstimateSettings
from toolplan.analysis.reuse import ReuseMode, reuse_mode
from toolplan.engine.policies import ExecutionOptions, RetryPolicy, TimeoutPolicy
from toolplan.errors import InvalidInput
from toolplan.plans.limits import InputLimits
from toolplan.store import DEFAULT_STORE_URI

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_TOOL_MODULES",
    "DEFAULT_TYPED_SCHEMA_MAX_TOOLS",
    "PlannerSettings",
    "Settings",
    "StructuredMethod",
    "TemporalSettings",
    "clear_caches",
    "register_cache",
]

DEFAULT_TOOL_MODULES: tuple[str, ...] = ("blog", "metrics", "weather")
"""Tool modules loaded when neither ``--tools`` nor ``TOOLPLAN_TOOLS`` is given."""

DEFAULT_TYPED_SCHEMA_MAX_TOOLS = 64
"""Catalogs with more tools get the generic schema (``TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS``).
BENCHMARKS.md ("Planning with a real model") shows how the schema grows with the catalog."""

DEFAULT_MODEL = "openai:gpt-4o-mini"
"""Used when neither ``--model`` nor ``TOOLPLAN_MODEL`` is set."""

StructuredMethod = Literal["function_calling", "json_schema"]
"""How the plan is requested: tool calling (widest support) or strict ``json_schema``."""
PlanReuse = ReuseMode
"""Plan reuse before planning a query (:mod:`toolplan.analysis.reuse`)."""


def _number(env: Mapping[str, str], name: str, kind: type[float] | type[int]) -> Any:
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        return kind(raw)
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not a valid {kind.__name__}") from None


def _flag(env: Mapping[str, str], name: str) -> bool | None:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise InvalidInput(f"{name}={raw!r} is not a yes/no value; use 1 or 0")


def _timeout_policy(env: Mapping[str, str]) -> TimeoutPolicy:
    """The adaptive-timeout policy from ``TOOLPLAN_ADAPTIVE_TIMEOUTS`` (on unless 0),
    ``TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS``, ``TOOLPLAN_TIMEOUT_FACTOR`` and
    ``TOOLPLAN_TIMEOUT_HISTORY``."""
    values: dict[str, Any] = {}
    enabled = _flag(env, "TOOLPLAN_ADAPTIVE_TIMEOUTS")
    if enabled is not None:
        values["enabled"] = enabled
    for name, key, kind in (
        ("TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS", "min_observations", int),
        ("TOOLPLAN_TIMEOUT_FACTOR", "factor", float),
        ("TOOLPLAN_TIMEOUT_HISTORY", "history", int),
    ):
        value = _number(env, name, kind)
        if value is not None:
            values[key] = value
    try:
        return TimeoutPolicy(**values)
    except ValueError as error:
        raise InvalidInput(str(error)) from None


def _estimate_settings(env: Mapping[str, str], concurrency: int) -> EstimateSettings:
    """Plan estimates: ``TOOLPLAN_ESTIMATE_DEFAULT_MS`` (a tool never seen), ``TOOLPLAN_PRICES``
    (the price table file) and the concurrency limit the schedule is estimated under."""
    default_ms = _number(env, "TOOLPLAN_ESTIMATE_DEFAULT_MS", float)
    if default_ms is not None and default_ms < 0:
        raise InvalidInput(f"TOOLPLAN_ESTIMATE_DEFAULT_MS={default_ms:g} must not be negative")
    return EstimateSettings(
        default_ms=EstimateSettings.default_ms if default_ms is None else default_ms,
        prices_file=(env.get("TOOLPLAN_PRICES") or "").strip() or None,
        concurrency=concurrency,
    )


@dataclass(frozen=True)
class PlannerSettings:
    """How plans are requested from the LLM (``toolplan plan``, ``run "QUERY"``, the API)."""

    model: str = DEFAULT_MODEL
    """``provider:model`` for ``init_chat_model`` (``TOOLPLAN_MODEL``, ``--model``)."""
    max_repairs: int = 2
    """Invalid plans sent back to the model at most this often (``TOOLPLAN_MAX_REPAIRS``)."""
    confidence_threshold: float = 0.5
    """Plans less confident than this are stored as ``needs_review``
    (``TOOLPLAN_CONFIDENCE_THRESHOLD``)."""
    structured_method: StructuredMethod = "function_calling"
    """``TOOLPLAN_STRUCTURED_METHOD``."""
    llm_timeout: float = 60.0
    """Seconds per LLM request (``TOOLPLAN_LLM_TIMEOUT``)."""
    llm_retries: int = 3
    """Retries of transient LLM errors: 429, 5xx, timeouts (``TOOLPLAN_LLM_RETRIES``)."""
    openai_api_key: str | None = field(default=None, repr=False)
    """``OPENAI_API_KEY``; never printed."""
    openai_base_url: str | None = None
    """``OPENAI_BASE_URL``: any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio)."""
    prompts_dir: str | None = None
    """``TOOLPLAN_PROMPTS_DIR``: read prompt files from here instead of the shipped ones."""
    llm_max_tokens: int | None = None
    """Output-token limit per planning call (``TOOLPLAN_LLM_MAX_TOKENS``); by default derived
    from the step limit (``--max-steps``): 400 + 120 per step."""
    typed_schema_max_tools: int = DEFAULT_TYPED_SCHEMA_MAX_TOOLS
    """Catalogs with more tools are planned with the generic schema (parameters as a JSON
    string) instead of the catalog-typed one; 0 always uses the generic schema
    (``TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS``)."""

    def __post_init__(self) -> None:
        if self.llm_max_tokens is not None and self.llm_max_tokens < 1:
            raise InvalidInput(f"TOOLPLAN_LLM_MAX_TOKENS={self.llm_max_tokens} must be at least 1")
        if self.typed_schema_max_tools < 0:
            raise InvalidInput(
                f"TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS={self.typed_schema_max_tools} must be 0 or more"
            )
        if self.structured_method not in ("function_calling", "json_schema"):
            raise InvalidInput(
                f"TOOLPLAN_STRUCTURED_METHOD={self.structured_method!r}; "
                "use function_calling or json_schema"
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PlannerSettings:
        """The planner's settings from environment variables."""
        values: dict[str, Any] = {
            "model": env.get("TOOLPLAN_MODEL") or DEFAULT_MODEL,
            "structured_method": env.get("TOOLPLAN_STRUCTURED_METHOD") or "function_calling",
            "openai_api_key": env.get("OPENAI_API_KEY") or None,
            "openai_base_url": env.get("OPENAI_BASE_URL") or None,
            "prompts_dir": env.get("TOOLPLAN_PROMPTS_DIR") or None,
        }
        for name, key, kind in (
            ("TOOLPLAN_MAX_REPAIRS", "max_repairs", int),
            ("TOOLPLAN_CONFIDENCE_THRESHOLD", "confidence_threshold", float),
            ("TOOLPLAN_LLM_TIMEOUT", "llm_timeout", float),
            ("TOOLPLAN_LLM_RETRIES", "llm_retries", int),
            ("TOOLPLAN_LLM_MAX_TOKENS", "llm_max_tokens", int),
            ("TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS", "typed_schema_max_tools", int),
        ):
            value = _number(env, name, kind)
            if value is not None:
                values[key] = value
        return cls(**values)


@dataclass(frozen=True)
class TemporalSettings:
    """Where plans run when they run on Temporal (``toolplan worker --temporal`` runs them).

    Without an ``address`` plans run in the process that executes them (or in ``toolplan worker``
    processes sharing the store's lease queue).
    """

    address: str | None = None
    """``host:port`` of the Temporal frontend (``TOOLPLAN_TEMPORAL_ADDRESS``,
    ``--temporal-address``); ``None``: Temporal is not used."""
    namespace: str = "default"
    """``TOOLPLAN_TEMPORAL_NAMESPACE``."""
    task_queue: str = "toolplan"
    """The task queue workflows and activities are sent to (``TOOLPLAN_TEMPORAL_TASK_QUEUE``)."""
    heartbeat_seconds: float = 10.0
    """A running step's heartbeat timeout (``TOOLPLAN_TEMPORAL_HEARTBEAT``): when its worker
    stops heartbeating for this long (killed, lost), the step is retried on another worker."""

    def __post_init__(self) -> None:
        if self.heartbeat_seconds <= 0:
            raise InvalidInput(
                f"TOOLPLAN_TEMPORAL_HEARTBEAT must be positive, got {self.heartbeat_seconds}"
            )
        if not self.namespace or not self.task_queue:
            raise InvalidInput(
                "TOOLPLAN_TEMPORAL_NAMESPACE and TOOLPLAN_TEMPORAL_TASK_QUEUE cannot be empty"
            )

    @property
    def enabled(self) -> bool:
        """Whether plans run on Temporal."""
        return self.address is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TemporalSettings:
        """The Temporal settings from environment variables."""
        values: dict[str, Any] = {
            "address": (env.get("TOOLPLAN_TEMPORAL_ADDRESS") or "").strip() or None,
            "namespace": env.get("TOOLPLAN_TEMPORAL_NAMESPACE") or "default",
            "task_queue": env.get("TOOLPLAN_TEMPORAL_TASK_QUEUE") or "toolplan",
        }
        heartbeat = _number(env, "TOOLPLAN_TEMPORAL_HEARTBEAT", float)
        if heartbeat is not None:
            values["heartbeat_seconds"] = heartbeat
        return cls(**values)


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about where things are and how to run them.

    Environment variables: ``TOOLPLAN_STORE``, ``TOOLPLAN_TOOLS`` (comma-separated modules),
    ``TOOLPLAN_CONCURRENCY``, ``TOOLPLAN_MAX_STEPS``, ``TOOLPLAN_TIMEOUT`` (default step timeout,
    seconds), ``TOOLPLAN_BACKOFF`` (first retry delay, seconds), ``TOOLPLAN_LEASE_SECONDS``,
    ``TOOLPLAN_OUTPUT_LIMIT_BYTES`` (step outputs larger than this are stored truncated),
    ``TOOLPLAN_MCP`` (an ``mcpServers`` JSON file whose servers add tools),
    ``TOOLPLAN_GRAPH_CHECKPOINTS`` (``0``: no LangGraph checkpoint layer), ``TOOLPLAN_CANCEL_POLL``
    (seconds between a running execution's checks for a cancel request), ``TOOLPLAN_CACHE_TTL``
    (seconds a read-only tool's result is reused), the adaptive timeouts
    (:class:`~toolplan.engine.policies.TimeoutPolicy`): ``TOOLPLAN_ADAPTIVE_TIMEOUTS``,
    ``TOOLPLAN_TIMEOUT_MIN_OBSERVATIONS``, ``TOOLPLAN_TIMEOUT_FACTOR``,
    ``TOOLPLAN_TIMEOUT_HISTORY``, plan estimates (:class:`~toolplan.analysis.estimates.EstimateSettings`):
    ``TOOLPLAN_ESTIMATE_DEFAULT_MS``, ``TOOLPLAN_PRICES``, and the planner's
    (:class:`PlannerSettings`): ``TOOLPLAN_MODEL``, ``TOOLPLAN_MAX_REPAIRS``,
    ``TOOLPLAN_CONFIDENCE_THRESHOLD``, ``TOOLPLAN_STRUCTURED_METHOD``, ``TOOLPLAN_LLM_TIMEOUT``,
    ``TOOLPLAN_LLM_RETRIES``, ``TOOLPLAN_LLM_MAX_TOKENS``, ``TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS``,
    ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``TOOLPLAN_PROMPTS_DIR``, the input limits
    ``TOOLPLAN_MAX_PLAN_BYTES``, ``TOOLPLAN_MAX_STRING_CHARS``, ``TOOLPLAN_MAX_DEPTH``,
    ``TOOLPLAN_MAX_NUMBER_DIGITS`` (:class:`~toolplan.plans.limits.InputLimits`),
    ``TOOLPLAN_PLAN_REUSE`` (off, exact, parametric), and Temporal's
    (:class:`TemporalSettings`): ``TOOLPLAN_TEMPORAL_ADDRESS``, ``TOOLPLAN_TEMPORAL_NAMESPACE``,
    ``TOOLPLAN_TEMPORAL_TASK_QUEUE``, ``TOOLPLAN_TEMPORAL_HEARTBEAT``.
    Frozen and hashable: caches keyed by settings see a changed environment as new settings.
    """

    store_uri: str = DEFAULT_STORE_URI
    tool_modules: tuple[str, ...] = DEFAULT_TOOL_MODULES
    max_steps: int = DEFAULT_MAX_STEPS
    execution: ExecutionOptions = field(default_factory=ExecutionOptions)
    mcp_config: str | None = None
    """``mcpServers`` JSON file whose servers add tools (``TOOLPLAN_MCP``, ``--mcp``)."""
    planner: PlannerSettings = field(default_factory=PlannerSettings)
    limits: InputLimits = field(default_factory=InputLimits)
    """What plans and queries may be (size, nesting, strings, numbers), checked at the edge."""
    tool_sources_given: bool = False
    """Whether the tools were chosen (a flag, ``TOOLPLAN_TOOLS``/``TOOLPLAN_MCP``, the project
    config) rather than defaulted: when not, executing a stored plan loads the tool sources
    recorded with it."""
    project_file: str | None = None
    """The project config file these settings read (:mod:`toolplan.project`), if any."""
    temporal: TemporalSettings = field(default_factory=TemporalSettings)
    """Whether (and where) plans run as Temporal workflows."""
    plan_reuse: PlanReuse = "exact"
    """Plan reuse before planning a query (``TOOLPLAN_PLAN_REUSE``): off, exact or parametric
    (:mod:`toolplan.analysis.reuse`)."""
    estimates: EstimateSettings = field(default_factory=EstimateSettings)
    """How plan estimates are made: ``TOOLPLAN_ESTIMATE_DEFAULT_MS``, ``TOOLPLAN_PRICES``."""

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, project: bool | None = None
    ) -> Settings:
        """Settings from ``env`` (default: ``os.environ``), over the project config of the
        current folder (:mod:`toolplan.project`; by default read only with ``os.environ``)."""
        from toolplan.project import default_store_uri, find_project, make_importable

        use_project = env is None if project is None else project
        env = os.environ if env is None else env
        config = find_project() if use_project else None
        make_importable(config)
        tools = env.get("TOOLPLAN_TOOLS")
        modules = tuple(m.strip() for m in tools.split(",") if m.strip()) if tools else None
        if modules is None and config is not None and config.tools:
            modules = config.tools
        mcp = env.get("TOOLPLAN_MCP") or (config.mcp if config else None)
        store = env.get("TOOLPLAN_STORE") or (config.store if config else None)
        if not store:
            store = default_store_uri(config) if use_project else DEFAULT_STORE_URI
        retry = RetryPolicy()
        backoff = _number(env, "TOOLPLAN_BACKOFF", float)
        if backoff is not None:
            retry = replace(retry, initial_backoff=backoff)
        options: dict[str, Any] = {"retry": retry, "timeouts": _timeout_policy(env)}
        checkpoints = _flag(env, "TOOLPLAN_GRAPH_CHECKPOINTS")
        if checkpoints is not None:
            options["graph_checkpoints"] = checkpoints
        for name, key, kind in (
            ("TOOLPLAN_CONCURRENCY", "concurrency", int),
            ("TOOLPLAN_TIMEOUT", "default_timeout", float),
            ("TOOLPLAN_LEASE_SECONDS", "lease_seconds", float),
            ("TOOLPLAN_CANCEL_POLL", "cancel_poll", float),
            ("TOOLPLAN_CACHE_TTL", "cache_ttl", float),
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
            store_uri=store,
            tool_modules=modules or DEFAULT_TOOL_MODULES,
            max_steps=_number(env, "TOOLPLAN_MAX_STEPS", int) or DEFAULT_MAX_STEPS,
            execution=execution,
            mcp_config=mcp or None,
            planner=PlannerSettings.from_env(env),
            limits=InputLimits.from_env(env),
            tool_sources_given=bool(modules or mcp),
            project_file=str(config.path) if config else None,
            temporal=TemporalSettings.from_env(env),
            plan_reuse=reuse_mode(env.get("TOOLPLAN_PLAN_REUSE")),
            estimates=_estimate_settings(env, execution.concurrency),
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
        no_cache: bool = False,
        temporal_address: str | None = None,
    ) -> Settings:
        """A copy with the flags a user gave on the command line applied."""
        execution = self.execution
        estimates = self.estimates
        try:
            if concurrency is not None:
                execution = replace(execution, concurrency=concurrency)
                estimates = replace(estimates, concurrency=concurrency)
            if fail_fast is not None:
                execution = replace(execution, fail_fast=fail_fast)
            if no_cache:
                execution = replace(execution, cache=False)
        except ValueError as error:
            raise InvalidInput(str(error)) from None
        return replace(
            self,
            store_uri=store_uri or self.store_uri,
            tool_modules=tuple(tool_modules) if tool_modules else self.tool_modules,
            max_steps=max_steps or self.max_steps,
            execution=execution,
            estimates=estimates,
            mcp_config=mcp_config or self.mcp_config,
            tool_sources_given=self.tool_sources_given or bool(tool_modules or mcp_config),
            temporal=replace(self.temporal, address=temporal_address)
            if temporal_address
            else self.temporal,
        )
