"""What a stored plan's ``meta`` may hold, and who may set it.

A plan record's ``meta`` mixes two kinds of keys:

- **toolplan's own record** of how the plan was made: where its tools came from
  (``toolSources``, which a later ``toolplan execute``, a worker or a Temporal activity loads),
  its estimate, the planning call (model, tokens, prompt version), plan reuse. Some of these
  change what a worker does, so only toolplan writes them (:data:`RESERVED_META_KEYS`).
- **a caller's labels**: anything else, such as ``{"source": "execute_plan"}`` or a replan's
  ``replanOf``. They are shown, never acted on.

Every entry point that takes ``meta`` from a caller (the planner and agent graphs, the Python
API's :class:`~toolplan.pipeline.flow.FromQuery` / :class:`~toolplan.pipeline.flow.FromDocument`) passes it
through :func:`caller_meta`, and :func:`toolplan.service.operations.store_plan`, the one place a plan is
stored, does so again: a reserved key from a caller is an error, never stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolplan.errors import InvalidInput

__all__ = [
    "ESTIMATE_KEY",
    "RESERVED_META_KEYS",
    "TOOL_SOURCES_KEY",
    "VERSION_KEY",
    "caller_meta",
    "version_of",
]

TOOL_SOURCES_KEY = "toolSources"
"""The tool modules and MCP config a plan's catalog was loaded from (``tools.sources``)."""
ESTIMATE_KEY = "estimate"
"""The plan's estimate, computed when it is stored."""
VERSION_KEY = "version"
"""Which version of its request a plan is (1, 2, ...), set when it is stored."""

RESERVED_META_KEYS: frozenset[str] = frozenset(
    {
        TOOL_SOURCES_KEY,
        ESTIMATE_KEY,
        # the planning record (planning/result.py `PlanningRecord`); model and usage price the estimate
        "model",
        "llmCalls",
        "usage",
        "planningMs",
        "promptVersion",
        "planSchema",
        "confidence",
        "repairs",
        "reasoning",
        "changes",  # what the rewrite rules changed in the model's answer (planning/rewrites.py)
        "earlyStarts",  # steps started while the model wrote (pipeline/early_start.py)
        "earlySavedMs",
        # plan reuse (pipeline/flow.py)
        "reusedFrom",
        "reuse",
        "reuseValues",
        # a request's versions (service/operations.py `store_plan`): a later one reuses the
        # succeeded side effects of the earlier ones
        VERSION_KEY,
    }
)
"""Keys of a plan's ``meta`` that only toolplan sets."""


def caller_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of a caller's ``meta``, refused (:class:`~toolplan.errors.InvalidInput`, exit 2)
    when it names a key toolplan sets itself: a stored record is data, and a caller must not
    choose, say, the tool modules a worker imports to run the plan."""
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise InvalidInput(f"meta must be a JSON object, got {type(meta).__name__}")
    reserved = sorted(str(key) for key in meta if key in RESERVED_META_KEYS)
    if reserved:
        raise InvalidInput(
            f"meta key(s) {', '.join(repr(key) for key in reserved)} are set by toolplan itself "
            "and cannot come from a caller; remove them (labels under any other key are kept)"
        )
    return dict(meta)


def version_of(meta: Mapping[str, Any]) -> int:
    """Which version of its request a stored plan is (1 when it does not say: the first)."""
    version = meta.get(VERSION_KEY)
    return version if isinstance(version, int) and not isinstance(version, bool) else 1
