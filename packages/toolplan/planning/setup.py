"""Build a :class:`~toolplan.planning.graph.PlannerContext` from settings and the environment."""

from __future__ import annotations

import os

from toolplan.config import Settings
from toolplan.errors import InvalidInput
from toolplan.planning.graph import PlannerContext, StructuredMethod
from toolplan.planning.model import create_chat_model, model_spec
from toolplan.store import Store, open_store
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.loading import load_catalog

__all__ = ["planner_context_from_env", "planner_options_from_env"]


def planner_options_from_env() -> dict[str, object]:
    """``TOOLPLAN_MAX_REPAIRS``, ``TOOLPLAN_CONFIDENCE_THRESHOLD``, ``TOOLPLAN_STRUCTURED_METHOD``,
    ``TOOLPLAN_LLM_TIMEOUT``, ``TOOLPLAN_LLM_RETRIES``."""
    options: dict[str, object] = {}
    try:
        if os.environ.get("TOOLPLAN_MAX_REPAIRS"):
            options["max_repairs"] = int(os.environ["TOOLPLAN_MAX_REPAIRS"])
        if os.environ.get("TOOLPLAN_CONFIDENCE_THRESHOLD"):
            options["confidence_threshold"] = float(os.environ["TOOLPLAN_CONFIDENCE_THRESHOLD"])
        if os.environ.get("TOOLPLAN_LLM_TIMEOUT"):
            options["timeout"] = float(os.environ["TOOLPLAN_LLM_TIMEOUT"])
        if os.environ.get("TOOLPLAN_LLM_RETRIES"):
            options["max_retries"] = int(os.environ["TOOLPLAN_LLM_RETRIES"])
    except ValueError as error:
        raise InvalidInput(f"invalid planner setting: {error}") from None
    method = os.environ.get("TOOLPLAN_STRUCTURED_METHOD", "function_calling")
    if method not in ("function_calling", "json_schema"):
        raise InvalidInput(
            f"TOOLPLAN_STRUCTURED_METHOD={method!r}; use function_calling or json_schema"
        )
    options["method"] = method
    return options


def planner_context_from_env(
    *,
    settings: Settings | None = None,
    store: Store | None = None,
    catalog: ToolCatalog | None = None,
    model: str | None = None,
    max_repairs: int | None = None,
    confidence_threshold: float | None = None,
) -> PlannerContext:
    """A planner context: flags given here win over environment variables."""
    settings = settings or Settings.from_env()
    options = planner_options_from_env()
    store = store or open_store(settings.store_uri)
    catalog = catalog or load_catalog(settings)
    spec = model_spec(model)
    chat = create_chat_model(
        spec,
        timeout=float(options.pop("timeout", 60.0)),  # type: ignore[arg-type]
        max_retries=int(options.pop("max_retries", 3)),  # type: ignore[call-overload]
    )
    method: StructuredMethod = options.pop("method")  # type: ignore[assignment]
    return PlannerContext(
        store=store,
        catalog=catalog,
        model=chat,
        model_name=spec,
        method=method,
        max_repairs=max_repairs if max_repairs is not None else int(options.get("max_repairs", 2)),  # type: ignore[call-overload]
        confidence_threshold=(
            confidence_threshold
            if confidence_threshold is not None
            else float(options.get("confidence_threshold", 0.5))  # type: ignore[arg-type]
        ),
        max_steps=settings.max_steps,
        tool_stats=dict(store.tool_stats()),
    )
