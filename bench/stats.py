"""Small statistics helpers: medians and percentiles of timing samples."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["median", "percentile", "summary"]


def median(values: Sequence[float]) -> float:
    """The median (``nan`` for no values)."""
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation (``nan`` for no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float], digits: int = 3) -> dict[str, float]:
    """Median, p95, min and max, rounded."""
    return {
        "median": round(median(values), digits),
        "p95": round(percentile(values, 95), digits),
        "min": round(min(values), digits) if values else math.nan,
        "max": round(max(values), digits) if values else math.nan,
        "n": len(values),
    }
