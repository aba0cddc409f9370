"""Plans as Temporal workflows: the Temporal execution backend and its worker.

Needs the ``temporal`` extra (``pip install 'toolplan[temporal]'``, the Temporal Python SDK).
Nothing here is imported unless ``TOOLPLAN_TEMPORAL_ADDRESS`` / ``--temporal-address`` is set or
``toolplan worker --temporal`` runs.
"""

from __future__ import annotations

import functools

from toolplan._caches import register_cache
from toolplan.config import TemporalSettings
from toolplan.temporal.backend import TemporalBackend
from toolplan.temporal.messages import workflow_id

__all__ = ["TemporalBackend", "temporal_backend", "workflow_id"]


@functools.lru_cache(maxsize=8)
def temporal_backend(settings: TemporalSettings) -> TemporalBackend:
    """One backend per distinct Temporal settings (its clients are kept per event loop)."""
    return TemporalBackend(settings)


register_cache(temporal_backend.cache_clear)
