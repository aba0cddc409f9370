"""Settings from environment variables, the project config and flags, in one place.

Each settings class reads its variables through a pydantic-settings model beside it
(:class:`toolplan.config.environment.Variables`). The environment wins over the project config
(:mod:`toolplan.project`: ``tools``, ``mcp``, ``store`` and the tuning knobs,
:mod:`toolplan.config.tuning`), which wins over the defaults; flags win over both
(:meth:`Settings.with_overrides`). Only entry points call them; what lies below is given its
settings (the store its waits as :class:`~toolplan.store.StoreOptions`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast, get_args

from pydantic import Field, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from toolplan._caches import clear_caches, register_cache
from toolplan.config.environment import Variables
from toolplan.config.policies import ExecutionOptions, RetryPolicy, TimeoutPolicy
from toolplan.config.tuning import Tuning, warn_moved
from toolplan.errors import InvalidInput, SettingRemoved
from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.plan import DEFAULT_MAX_STEPS
from toolplan.project import TUNING_KEYS
from toolplan.store import DEFAULT_STORE_URI, StoreOptions

if TYPE_CHECKING:
    from toolplan.project import ProjectConfig

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_TOOL_MODULES",
    "DEFAULT_TYPED_SCHEMA_MAX_TOOLS",
    "EstimateSettings",
    "PlannerRewrites",
    "PlannerRewritesGiven",
    "PlannerSettings",
    "ReuseMode",
    "Settings",
    "StructuredMethod",
    "TemporalSettings",
    "clear_caches",
    "is_local_url",
    "limits_from_env",
    "register_cache",
    "rewrites_mode",
    "store_options_from_env",
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
PlanFormat = Literal["json", "python"]
"""What the model writes the plan in: a JSON document in a schema (``json``), or Python
statements read and never run (``python``: :mod:`toolplan.planning.python_format`)."""
PlannerRewrites = Literal["format", "none"]
"""Which rules may change the model's plan after it is written (:mod:`toolplan.planning.rewrites`):
``format`` (the default) those that change no meaning (a fence around the JSON, ``null`` for an
optional argument); ``none`` not even those: the plan is validated as the model wrote it."""
PlannerRewritesGiven = Literal["format", "all", "none"]
"""What ``TOOLPLAN_PLANNER_REWRITES`` and ``rewrites=`` accept: ``all`` as well, which turned on
the heuristic rules, removed since: it is read as ``format`` and warns (:func:`rewrites_mode`)."""


def rewrites_mode(value: str, setting: str, *, stacklevel: int = 1) -> PlannerRewrites:
    """``value`` of ``setting`` as the rules it runs: ``all`` warns (:class:`SettingRemoved`,
    ``stacklevel`` frames above the caller) and is ``format``; any other value is returned as it
    is, for the settings to check."""
    if value != "all":
        return cast(PlannerRewrites, value)
    why = (
        "the heuristic rewrite rules it turned on were removed in toolplan 0.1.0 (none was shown "
        "to help on data it was not written for)"
    )
    warnings.warn(SettingRemoved(setting, "all", "format", why), stacklevel=stacklevel + 1)
    return "format"


ReuseMode = Literal["off", "exact", "parametric"]
"""Plan reuse before planning a query (:mod:`toolplan.planning.reuse`): ``off``, ``exact`` (the
same query) or ``parametric`` (the same text with other values)."""
PlanReuse = ReuseMode
DEFAULT_ESTIMATE_MS = 1000.0


def reuse_mode(value: str | None, default: ReuseMode = "exact") -> ReuseMode:
    """``TOOLPLAN_PLAN_REUSE``'s mode (``off``, ``exact`` or ``parametric``)."""
    if value is None or not value.strip():
        return default
    mode = value.strip().lower()
    if mode not in get_args(ReuseMode):
        raise InvalidInput(f"TOOLPLAN_PLAN_REUSE must be off, exact or parametric, not {value!r}")
    return cast(ReuseMode, mode)


@dataclass(frozen=True)
class EstimateSettings:
    """How plans are estimated (:mod:`toolplan.service.estimates`)."""

    default_ms: float = DEFAULT_ESTIMATE_MS
    """Milliseconds a call of a tool never observed is assumed to take
    (``TOOLPLAN_ESTIMATE_DEFAULT_MS``)."""
    prices_file: str | None = None
    """The price table (``TOOLPLAN_PRICES``); ``None``: planning calls are not priced."""
    concurrency: int = 10
    """Steps running at once (``TOOLPLAN_CONCURRENCY``, ``--concurrency``)."""


_Limit = Annotated[int, Field(ge=1)]


class _LimitVariables(Variables):
    """The variables of :class:`~toolplan.plan_format.limits.InputLimits`: ``TOOLPLAN_`` and the
    field's name (``TOOLPLAN_MAX_PLAN_BYTES``, ...)."""

    max_plan_bytes: _Limit | None = None
    max_string_chars: _Limit | None = None
    max_depth: _Limit | None = None
    max_number_digits: _Limit | None = None


class _StoreVariables(Variables):
    """The variables of :class:`~toolplan.store.StoreOptions`: how long a store waits."""

    busy_timeout: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, validation_alias="TOOLPLAN_STORE_BUSY_TIMEOUT"
    )
    mongo_timeout_ms: Annotated[int, Field(ge=1)] | None = None


def store_options_from_env(env: Mapping[str, str] | None = None) -> StoreOptions:
    """How long the stores wait (a lock, a server), with overrides from ``env`` (default
    ``os.environ``): read here, once, and passed to the store, which never reads them itself."""
    return StoreOptions(**_StoreVariables.read(env).given())


def limits_from_env(env: Mapping[str, str] | None = None) -> InputLimits:
    """The input limits with overrides from ``env`` (default ``os.environ``)."""
    return InputLimits(**_LimitVariables.read(env).given())


class _PlannerVariables(Variables):
    """The variables of :class:`PlannerSettings`: ``TOOLPLAN_`` and the field's name, and
    OpenAI's own two."""

    model: str | None = None
    max_repairs: int | None = None
    confidence_threshold: float | None = None
    structured_method: StructuredMethod | None = None
    llm_timeout: float | None = None
    planning_deadline: float | None = None
    llm_retries: int | None = None
    openai_api_key: str | None = Field(None, validation_alias="OPENAI_API_KEY", repr=False)
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    prompts_dir: str | None = None
    llm_max_tokens: int | None = None
    typed_schema_max_tools: int | None = None
    plan_format: PlanFormat | None = None
    rewrites: PlannerRewritesGiven | None = Field(
        None, validation_alias="TOOLPLAN_PLANNER_REWRITES"
    )
    stream_execution: bool | None = Field(None, validation_alias="TOOLPLAN_STREAM_EXECUTION")


REMOTE_LLM_TIMEOUT = 60.0
"""Default seconds a hosted model may stay silent (OpenAI and the other providers' APIs)."""
LOCAL_LLM_TIMEOUT = 300.0
"""Default seconds a local model (``OPENAI_BASE_URL`` on a loopback, private or ``.local``
address) may stay silent. A first planning call on a CPU measured 70 s before its first token
(loading the model, reading the prompt); once tokens stream, each one restarts the wait."""


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` names a server on this machine or a private network (``localhost``,
    ``*.local``, ``host.docker.internal``, a loopback, private or link-local IP)."""
    if not url:
        return False
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url if "://" in url else f"//{url}").hostname or "").lower()
    except ValueError:
        return False
    if host in ("localhost", "host.docker.internal") or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


@dataclass(frozen=True)
class PlannerSettings:
    """How plans are requested from the LLM (``toolplan plan``, ``run "QUERY"``, the API)."""

    model: str = DEFAULT_MODEL
    """``provider:model`` for ``init_chat_model`` (``TOOLPLAN_MODEL``, ``--model``)."""
    max_repairs: int = 3
    """Invalid plans sent back to the model at most this often (``TOOLPLAN_MAX_REPAIRS``). In
    the Python format the attempts are Python, its repair, JSON asked afresh, and that JSON
    plan's repair (:func:`toolplan.planning.graph.attempt_format`)."""
    confidence_threshold: float = 0.5
    """Plans less confident than this are stored as ``needs_review``
    (``TOOLPLAN_CONFIDENCE_THRESHOLD``)."""
    structured_method: StructuredMethod = "function_calling"
    """``TOOLPLAN_STRUCTURED_METHOD``."""
    llm_timeout: float | None = None
    """Seconds the model may stay silent: before its first token, and between two tokens of a
    streamed answer (``TOOLPLAN_LLM_TIMEOUT``). ``None``: :data:`REMOTE_LLM_TIMEOUT`, or
    :data:`LOCAL_LLM_TIMEOUT` when ``openai_base_url`` is a local address (a model on this
    machine or network reads a long prompt on a CPU first). See :attr:`llm_timeout_seconds`."""
    planning_deadline: float | None = None
    """Seconds one planning may take in all, every call, repair and retry included
    (``TOOLPLAN_PLANNING_DEADLINE``): beside ``llm_timeout``, which only bounds silence, it stops
    a model that writes a character every few seconds. ``None``: four times the LLM timeout, and
    at least 600 (:attr:`planning_deadline_seconds`)."""
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
    plan_format: PlanFormat = "python"
    """What the model writes the plan in (``TOOLPLAN_PLAN_FORMAT``): ``json`` (schema-constrained
    output) or ``python`` (statements, read and never run)."""
    rewrites: PlannerRewrites = "format"
    """Which rules may change the model's plan after it is written: ``format`` or ``none``
    (``TOOLPLAN_PLANNER_REWRITES``; :mod:`toolplan.planning.rewrites`). ``all`` is read as
    ``format``, with a warning (:data:`PlannerRewritesGiven`)."""
    stream_execution: bool = False
    """Start the read-only steps of a Python plan while the model still writes it
    (``TOOLPLAN_STREAM_EXECUTION``, ``--stream``; :mod:`toolplan.pipeline.early_start`)."""

    def __post_init__(self) -> None:
        if self.plan_format not in ("json", "python"):
            raise InvalidInput(f"TOOLPLAN_PLAN_FORMAT={self.plan_format!r}; use json or python")
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
        if self.planning_deadline is not None and not self.planning_deadline > 0:
            raise InvalidInput(
                f"TOOLPLAN_PLANNING_DEADLINE={self.planning_deadline} must be a number of "
                "seconds above 0"
            )
        # given directly (``PlannerSettings(rewrites="all")``, ``replace``): said where it is
        object.__setattr__(self, "rewrites", rewrites_mode(self.rewrites, "rewrites", stacklevel=3))
        if self.rewrites not in ("format", "none"):
            raise InvalidInput(
                f"TOOLPLAN_PLANNER_REWRITES={self.rewrites!r}; use format (the default: only "
                "rewrites that change no meaning) or none"
            )

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, tuning: Tuning | None = None
    ) -> PlannerSettings:
        """The planner's settings from environment variables (default ``os.environ``), over the
        project config's ``tuning``."""
        fallback = (tuning or Tuning()).values(
            typed_schema_max_tools="typed_schema_max_tools",
            prompts_dir="prompts_dir",
            llm_retries="llm_retries",
        )
        given = _PlannerVariables.read(env, fallback=fallback).given()
        if "rewrites" in given:
            given["rewrites"] = rewrites_mode(
                given["rewrites"], "TOOLPLAN_PLANNER_REWRITES", stacklevel=2
            )
        return cls(**given)

    @property
    def llm_timeout_seconds(self) -> float:
        """The LLM timeout in effect: ``llm_timeout``, else the default for where the model is."""
        if self.llm_timeout is not None:
            return self.llm_timeout
        return LOCAL_LLM_TIMEOUT if is_local_url(self.openai_base_url) else REMOTE_LLM_TIMEOUT

    @property
    def planning_deadline_seconds(self) -> float:
        """The planning deadline in effect: ``planning_deadline``, else four times the LLM
        timeout and at least 600 s."""
        if self.planning_deadline is not None:
            return self.planning_deadline
        return max(600.0, 4 * self.llm_timeout_seconds)


class _TemporalVariables(Variables):
    """The variables of :class:`TemporalSettings`: ``TOOLPLAN_TEMPORAL_`` and the field's name."""

    model_config = SettingsConfigDict(env_prefix="TOOLPLAN_TEMPORAL_")

    address: str | None = None
    namespace: str | None = None
    task_queue: str | None = None
    heartbeat_seconds: float | None = Field(None, validation_alias="TOOLPLAN_TEMPORAL_HEARTBEAT")


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
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, tuning: Tuning | None = None
    ) -> TemporalSettings:
        """The Temporal settings from environment variables (default ``os.environ``), over the
        project config's ``tuning``."""
        knobs = (tuning or Tuning()).values(heartbeat_seconds="temporal_heartbeat")
        return cls(**{**knobs, **_TemporalVariables.read(env).given()})


class _SettingsVariables(Variables):
    """The variables :class:`Settings` reads itself: ``TOOLPLAN_`` and the field's name."""

    store: str | None = None
    tools: Annotated[tuple[str, ...] | None, NoDecode] = None  # comma-separated, not JSON
    mcp: str | None = None
    max_steps: int | None = None
    max_items: int | None = None
    concurrency: int | None = None
    timeout: float | None = None
    backoff: float | None = None
    lease_seconds: float | None = None
    cancel_poll: float | None = None
    cache_ttl: float | None = None
    output_limit_bytes: int | None = None
    graph_checkpoints: bool | None = None
    adaptive_timeouts: bool | None = None
    timeout_min_observations: int | None = None
    timeout_factor: float | None = None
    timeout_history: int | None = None
    estimate_default_ms: Annotated[float, Field(ge=0)] | None = None
    prices: str | None = None
    plan_reuse: ReuseMode | None = None

    @field_validator("tools", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(module.strip() for module in value.split(",") if module.strip())
        return value

    @field_validator("plan_reuse", mode="before")
    @classmethod
    def _reuse_mode(cls, value: Any) -> Any:
        # The one parser of the mode (batch files use it too): any case, its own message.
        return reuse_mode(value) if isinstance(value, str) else value

    def execution(self) -> ExecutionOptions:
        """The execution options, retries and adaptive timeouts these variables set."""
        try:
            return ExecutionOptions(
                retry=RetryPolicy(**self.given(initial_backoff="backoff")),
                timeouts=TimeoutPolicy(
                    **self.given(
                        enabled="adaptive_timeouts",
                        min_observations="timeout_min_observations",
                        factor="timeout_factor",
                        history="timeout_history",
                    )
                ),
                **self.given(
                    concurrency="concurrency",
                    max_items="max_items",
                    default_timeout="timeout",
                    lease_seconds="lease_seconds",
                    cancel_poll="cancel_poll",
                    cache_ttl="cache_ttl",
                    output_limit_bytes="output_limit_bytes",
                    graph_checkpoints="graph_checkpoints",
                ),
            )
        except ValueError as error:
            raise InvalidInput(str(error)) from None


_SETTINGS_KNOBS = tuple(key for key in TUNING_KEYS if key in _SettingsVariables.model_fields)
"""The tuning knobs :class:`_SettingsVariables` has a field of the same name for."""


def _from_project(config: ProjectConfig | None) -> dict[str, Any]:
    """What the project config sets, as the fields of :class:`_SettingsVariables` it fills
    when no variable does."""
    if config is None:
        return {}
    values = {"tools": config.tools, "mcp": config.mcp, "store": config.store}
    return {key: value for key, value in values.items() if value}


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about where things are and how to run them.

    Read once per command by :meth:`from_env`: the variables users set (docs/operations.md,
    "The variables you set": where the store, tools and MCP servers are, the model and its
    endpoint, planning, running and input limits, Temporal, the store's waits), over the
    project config (:mod:`toolplan.project`: tools, MCP servers, store, and the tuning knobs of
    :mod:`toolplan.config.tuning`), over the defaults; flags win over all
    (:meth:`with_overrides`). Frozen and hashable: caches keyed by settings see a changed
    environment as new settings.
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
    (:mod:`toolplan.planning.reuse`)."""
    estimates: EstimateSettings = field(default_factory=EstimateSettings)
    """How plan estimates are made: ``estimate_default_ms``, ``prices`` (project config)."""
    store_options: StoreOptions = field(default_factory=StoreOptions)
    """How long the store waits for a lock or a server (``TOOLPLAN_STORE_BUSY_TIMEOUT``,
    ``TOOLPLAN_MONGO_TIMEOUT_MS``), passed to it when it is opened."""

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, project: bool | None = None
    ) -> Settings:
        """Settings from ``env`` (default: ``os.environ``), over the project config of the
        current folder (:mod:`toolplan.project`; by default read only with ``os.environ``)."""
        from toolplan.project import default_store_uri, find_project, make_importable

        use_project = env is None if project is None else project
        config = find_project() if use_project else None
        make_importable(config)
        tuning = Tuning.of(config)
        warn_moved(os.environ if env is None else env)
        read = _SettingsVariables.read(
            env,
            fallback={
                **_from_project(config),
                **tuning.values(**{key: key for key in _SETTINGS_KNOBS}),
            },
        )
        store = read.store or (default_store_uri(config) if use_project else DEFAULT_STORE_URI)
        execution = read.execution()
        return cls(
            store_uri=store,
            tool_modules=read.tools or DEFAULT_TOOL_MODULES,
            max_steps=read.max_steps or DEFAULT_MAX_STEPS,
            execution=execution,
            mcp_config=read.mcp,
            planner=PlannerSettings.from_env(env, tuning=tuning),
            limits=limits_from_env(env),
            store_options=store_options_from_env(env),
            tool_sources_given=bool(read.tools or read.mcp),
            project_file=str(config.path) if config else None,
            temporal=TemporalSettings.from_env(env, tuning=tuning),
            estimates=EstimateSettings(
                concurrency=execution.concurrency,
                **read.given(default_ms="estimate_default_ms", prices_file="prices"),
            ),
            **read.given(plan_reuse="plan_reuse"),
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
        approve_all: bool = False,
        stream_execution: bool | None = None,
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
            if approve_all:
                execution = replace(execution, approve_all=True)
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
            planner=self.planner
            if stream_execution is None
            else replace(self.planner, stream_execution=stream_execution),
        )
