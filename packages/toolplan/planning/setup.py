"""Build a :class:`~toolplan.planning.context.PlannerContext` from :class:`~toolplan.config.Settings`
and the parts an entry point already holds (its store and tools)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolplan.config import Settings
from toolplan.planning.context import PlannerContext
from toolplan.planning.model import create_chat_model, default_max_tokens
from toolplan.planning.scripted import ScriptedModel
from toolplan.store import Store
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["build_planner_context"]


def build_planner_context(
    settings: Settings,
    *,
    store: Store,
    catalog: ToolCatalog,
    model: str | BaseChatModel | None = None,
    max_repairs: int | None = None,
    confidence_threshold: float | None = None,
) -> PlannerContext:
    """The planner's context over ``store`` and ``catalog``: ``model`` is a ``provider:model``
    string or a LangChain chat model (default ``settings.planner.model``); the overrides given
    here (``--model``, ``--max-repairs``, ``--confidence-threshold``) win over the settings."""
    planner = settings.planner
    if settings.estimates.prices_file:
        # A broken price table is found before the model is paid for a plan.
        from toolplan.service.estimates import load_prices

        load_prices(settings.estimates.prices_file)
    max_tokens = planner.llm_max_tokens or default_max_tokens(settings.max_steps)
    if model is None or isinstance(model, str):
        spec = model or planner.model
        chat_model = create_chat_model(planner, spec, max_tokens=max_tokens)
    else:
        spec, chat_model = type(model).__name__, model
    if isinstance(chat_model, ScriptedModel) and chat_model.catalog is None:
        chat_model = chat_model.with_catalog(catalog)  # it plans over the planner's tools
    return PlannerContext(
        store=store,
        catalog=catalog,
        model=chat_model,
        model_name=spec,
        method=planner.structured_method,
        plan_format=planner.plan_format,
        max_repairs=max_repairs if max_repairs is not None else planner.max_repairs,
        confidence_threshold=(
            confidence_threshold
            if confidence_threshold is not None
            else planner.confidence_threshold
        ),
        max_steps=settings.max_steps,
        tool_stats=dict(store.tool_stats()),
        endpoint=planner.openai_base_url,
        max_tokens=max_tokens,
        deadline=settings.planner.planning_deadline_seconds,
        typed_schema_max_tools=planner.typed_schema_max_tools,
        limits=settings.limits,
        estimates=settings.estimates,
        prompts_dir=planner.prompts_dir,
        max_items=settings.execution.max_items,
        rewrites=planner.rewrites,
        stream_execution=planner.stream_execution,
    )
