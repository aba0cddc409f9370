"""Settings from environment variables, the project config and flags (:mod:`.settings`), read
through pydantic-settings models (:mod:`.environment`); the project config's tuning knobs
(:mod:`.tuning`); the frozen policies a run is given (:mod:`.policies`, :mod:`.retry`). Only entry
points read settings: each builds its :class:`~toolplan.client.Toolplan` from
:meth:`Settings.from_env`."""

from toolplan.config.settings import (
    DEFAULT_MODEL,
    DEFAULT_TOOL_MODULES,
    DEFAULT_TYPED_SCHEMA_MAX_TOOLS,
    PlanFormat,
    PlannerSettings,
    PlanReuse,
    Settings,
    StructuredMethod,
    TemporalSettings,
    clear_caches,
    limits_from_env,
    register_cache,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_TOOL_MODULES",
    "DEFAULT_TYPED_SCHEMA_MAX_TOOLS",
    "PlanFormat",
    "PlanReuse",
    "PlannerSettings",
    "Settings",
    "StructuredMethod",
    "TemporalSettings",
    "clear_caches",
    "limits_from_env",
    "register_cache",
]
