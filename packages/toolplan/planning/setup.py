"""Build a :class:`~toolplan.planning.context.PlannerContext` from :class:`~toolplan.config.Settings`."""

from __future__ import annotations

from toolplan.config import Settings
from toolplan.planning.context import PlannerContext
from toolplan.planning.model import create_chat_model, default_max_tokens
from toolplan.store import Store, open_store
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.loading import load_catalog

__all__ = ["planner_context_from_env"]


def planner_context_from_env(
    *,
    settings: Settings | None = None,
    store: Store | None = None,
    catalog: ToolCatalog | None = None,
    model: str | None = None,
    max_repairs: int | None = None,
    confidence_threshold: float | None = None,
) -> PlannerContext:
    """A planner context from ``settings`` (default :meth:`Settings.from_env`); the flags given
    here (``--model``, ``--max-repairs``, ``--confidence-threshold``) win over the settings."""
    settings = settings or Settings.from_env()
    planner = settings.planner
    store = store or open_store(settings.store_uri)
    catalog = catalog or load_catalog(settings)
    if settings.estimates.prices_file:
        # A broken price table is found before the model is paid for a plan.
        from toolplan.analysis.estimates import load_prices

        load_prices(settings.estimates.prices_file)
    spec = model or planner.model
    max_tokens = planner.llm_max_tokens or default_max_tokens(settings.max_steps)
    return PlannerContext(
        store=store,
        catalog=catalog,
        model=create_chat_model(planner, spec, max_tokens=max_tokens),
        model_name=spec,
        method=planner.structured_method,
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
        typed_schema_max_tools=planner.typed_schema_max_tools,
        limits=settings.limits,
        estimates=settings.estimates,
    )
