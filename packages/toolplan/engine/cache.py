"""Tool-result caching: which calls may be answered from the store's shared cache, and under
which key.

A tool opts in with the tag ``read-only`` (``toolplan.tagged(tool, "read-only", cache_ttl=60)``)
or, for an MCP tool, the annotation ``readOnlyHint: true``. A call is looked up by the tool's name
and its resolved arguments; only successful outputs of the tool itself (never of a fallback) are
stored. The cache lives in the store (:class:`~toolplan.store.protocol.ResultCache`), so it is
shared by every process and plan using that store.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from langchain_core.tools import BaseTool

from toolplan.tools.catalog import is_read_only

__all__ = ["CACHE_TTL_KEY", "cache_key", "cache_ttl_of"]

CACHE_TTL_KEY = "cache_ttl"
"""Key in a tool's ``metadata`` holding its own TTL in seconds (set by ``tagged(cache_ttl=)``)."""


def cache_ttl_of(tool: BaseTool, default_ttl: float) -> float | None:
    """Seconds a result of ``tool`` may be reused, or ``None`` when the tool is not read-only."""
    if not is_read_only(tool):
        return None
    metadata = tool.metadata or {}
    ttl = metadata.get(CACHE_TTL_KEY)
    if isinstance(ttl, int | float) and not isinstance(ttl, bool):
        return float(ttl) if ttl > 0 else None
    return default_ttl if default_ttl > 0 else None


def cache_key(tool: str, arguments: Any) -> str:
    """The cache key of a call: the tool's name and its resolved arguments as canonical JSON."""
    canonical = json.dumps(
        arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return f"{tool}:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
