"""What the planning nodes need: store, catalog, model and planning options
(:class:`PlannerContext`), built from settings by :mod:`toolplan.planning.setup` or by a caller."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel

from toolplan._caches import register_cache
from toolplan.config import PlanFormat, StructuredMethod
from toolplan.config.settings import EstimateSettings, PlannerRewrites, PlannerSettings
from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.plan import DEFAULT_MAX_ITEMS, Plan
from toolplan.planning.call import ModelCall
from toolplan.planning.model import retry_max_tokens, with_max_tokens
from toolplan.planning.progress import PlanningEvent, PlanningListener, notify
from toolplan.planning.schema import (
    DEFAULT_TYPED_SCHEMA_MAX_TOOLS,
    PlanSchema,
    generic_plan_schema,
    plan_schema,
)
from toolplan.store.protocol import Store
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation import DEFAULT_MAX_STEPS

__all__ = ["EarlyStarter", "PlannerContext"]


@runtime_checkable
class EarlyStarter(Protocol):
    """What starts read-only statements of a Python answer while the model still writes
    (streamed execution: :class:`toolplan.pipeline.early_start.EarlyStarts`, which runs tools
    and so lives above the planner, which never imports the engine)."""

    plan_id: str
    """The plan ID chosen before planning; the final plan is stored under it."""
    saved_ms: float
    """About how much sooner the plan ends than plan-then-execute, once settled."""

    def offer(self, step: Mapping[str, Any]) -> bool:
        """A complete statement's step: started at once if it may start early."""
        ...

    def new_answer(self) -> None:
        """A new answer (a repair) begins: later statements are offered afresh."""
        ...

    def settle(self, plan: Plan | None) -> list[dict[str, Any]]:
        """The final plan (``None``: planning failed): each early call adopted, cancelled or
        unused, as the plan's ``meta`` lists them."""
        ...


@dataclass
class PlannerContext:
    """What the planning nodes need."""

    store: Store
    catalog: ToolCatalog
    model: BaseChatModel
    model_name: str
    method: StructuredMethod = "function_calling"
    plan_format: PlanFormat = "python"
    """What the model writes the plan in: JSON in a schema, or Python statements."""
    max_repairs: int = PlannerSettings.max_repairs
    confidence_threshold: float = 0.5
    max_steps: int = DEFAULT_MAX_STEPS
    tool_stats: dict[str, Any] = field(default_factory=dict)
    endpoint: str | None = None
    """The model's endpoint, named in error messages (``OPENAI_BASE_URL``)."""
    max_tokens: int | None = None
    """The model's output-token limit per call, named when an answer is cut off; an answer cut
    off is asked for once more with twice the limit (:meth:`larger_model_call`)."""
    deadline: float | None = None
    """Seconds one planning may take in all (``TOOLPLAN_PLANNING_DEADLINE``); ``None``: any."""
    typed_schema_max_tools: int = DEFAULT_TYPED_SCHEMA_MAX_TOOLS
    """Catalogs with more tools (or 0) are planned with the generic schema."""
    schema_fallback: bool = False
    """Set when the endpoint rejected the schema it was sent: later calls use the generic one
    without a ``pattern``, which fits any server."""
    json_refused: bool = False
    """Set when the endpoint refused the schema that a Python planning's JSON attempt asks a
    plan in: later plannings repair in Python to the end
    (:func:`toolplan.planning.graph.attempt_format`)."""
    limits: InputLimits = field(default_factory=InputLimits)
    """The input limits the model's plan must meet, like any other plan."""
    estimates: EstimateSettings | None = None
    """How the stored plan is estimated (``None``: the defaults)."""
    max_items: int = DEFAULT_MAX_ITEMS
    """The longest literal ``forEach`` list of a step without ``maxItems`` (``TOOLPLAN_MAX_ITEMS``)."""
    prompts_dir: str | None = None
    """Prompt files to use instead of the shipped ones (``TOOLPLAN_PROMPTS_DIR``)."""
    listener: PlanningListener | None = None
    """Told what planning is doing while the model works (:mod:`toolplan.planning.progress`);
    the CLI prints it on stderr."""
    rewrites: PlannerRewrites = "format"
    """Which rules may change the model's plan after it is written
    (:mod:`toolplan.planning.rewrites`): ``format`` (those that change no meaning) or ``none``
    (``TOOLPLAN_PLANNER_REWRITES``, ``Toolplan(rewrites=...)``)."""
    stream: bool = True
    """Stream the model's answers, so each step is told as soon as it is written
    (:mod:`toolplan.planning.streaming`); turned off when the endpoint could not stream."""
    stream_execution: bool = False
    """Start read-only steps of a Python answer while the model still writes it
    (``TOOLPLAN_STREAM_EXECUTION``, ``--stream``, ``Toolplan(stream_execution=...)``;
    :mod:`toolplan.pipeline.early_start`)."""
    early: EarlyStarter | None = None
    """One planning run's early calls (set on a copy for that run by
    :func:`toolplan.pipeline.flow.obtain_plan`); ``None``: nothing starts early."""

    def telling(self, listener: PlanningListener) -> PlannerContext:
        """A copy for one planning run that also tells ``listener`` (after this context's own
        listener): a server's subscribers, a graph's stream. What the copy learns of the
        endpoint is not shared: hand it back with :meth:`learn_from`."""
        own = self.listener

        def both(event: PlanningEvent) -> None:
            notify(event, own)
            notify(event, listener)

        return replace(self, listener=both)

    def learn_from(self, other: PlannerContext) -> None:
        """Keep what ``other`` (a copy: :meth:`telling`) learned of the endpoint: that it
        rejected the schema (or the one a Python planning's JSON attempt asks in), or could not
        stream."""
        self.schema_fallback = self.schema_fallback or other.schema_fallback
        self.json_refused = self.json_refused or other.json_refused
        self.stream = self.stream and other.stream

    def model_call(self) -> ModelCall:
        """How this planner calls its model (for :func:`~toolplan.planning.call.call_model`)."""
        return ModelCall(self.model, self.model_name, self.method, self.endpoint, self.max_tokens)

    def larger_model_call(self) -> ModelCall | None:
        """How to ask again after an answer cut off at the output limit: the same model with
        twice the limit (:func:`~toolplan.planning.model.retry_max_tokens`); ``None`` when the
        limit is unknown, at its cap, or not one the model lets change."""
        limit = retry_max_tokens(self.max_tokens) if self.max_tokens else None
        model = with_max_tokens(self.model, limit) if limit else None
        if model is None:
            return None
        return ModelCall(model, self.model_name, self.method, self.endpoint, limit)

    def plan_schema(self) -> PlanSchema:
        """The schema the model answers in (typed, unless too large or rejected)."""
        if self.schema_fallback:
            return generic_plan_schema(step_id_pattern=False)
        return _schema_for(self.catalog, self.typed_schema_max_tools, self.method)


@functools.lru_cache(maxsize=16)
def _schema_cached(catalog_id: int, catalog: ToolCatalog, limit: int, strict: bool) -> PlanSchema:
    return plan_schema(catalog, max_typed_tools=limit, strict=strict)


def _schema_for(catalog: ToolCatalog, limit: int, method: StructuredMethod) -> PlanSchema:
    # keyed by the catalog object: a catalog is built once per process and not changed after
    return _schema_cached(id(catalog), catalog, limit, method == "json_schema")


register_cache(_schema_cached.cache_clear)
