"""The monitoring toolset of seed 001: list metrics, query one, check a threshold."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.tools import ToolException, tool
from typing_extensions import TypedDict

from toolplan.tools.catalog import tagged

__all__ = ["TOOLS"]

MetricName = Literal["cpu_usage", "memory_usage", "disk_io", "error_rate", "latency_p95"]
"""A closed set declared as ``Literal``: the typed plan schema then only lets a model write one of
these names, instead of inventing ``cpu`` or ``p95_latency``."""
Category = Literal["compute", "storage", "application"]


class MetricInfo(TypedDict):
    name: MetricName
    category: Category
    unit: str


class MetricList(TypedDict):
    metrics: list[MetricInfo]


class MetricReading(TypedDict):
    name: MetricName
    current: float
    unit: str
    series: list[float]


class ThresholdCheck(TypedDict):
    metric: str
    value: float
    threshold: float
    operator: str
    exceeded: bool


_METRICS: dict[MetricName, dict[str, Any]] = {
    "cpu_usage": {
        "category": "compute",
        "unit": "%",
        "current": 72.5,
        "series": [65.0, 70.2, 72.5],
    },
    "memory_usage": {
        "category": "compute",
        "unit": "%",
        "current": 58.1,
        "series": [55.4, 57.0, 58.1],
    },
    "disk_io": {
        "category": "storage",
        "unit": "MB/s",
        "current": 120.0,
        "series": [98.0, 110.0, 120.0],
    },
    "error_rate": {
        "category": "application",
        "unit": "%",
        "current": 1.2,
        "series": [0.8, 1.0, 1.2],
    },
    "latency_p95": {
        "category": "application",
        "unit": "ms",
        "current": 240.0,
        "series": [210.0, 230.0, 240.0],
    },
}

_OPERATORS = {
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


@tool
def list_metrics(category: Category | None = None) -> MetricList:
    """List the monitoring metrics (name, category, unit), optionally of one category (compute,
    storage, application)."""
    names = [n for n, m in _METRICS.items() if category in (None, m["category"])]
    if category is not None and not names:
        known = sorted({m["category"] for m in _METRICS.values()})
        raise ToolException(f"unknown category {category!r}; known: {', '.join(known)}")
    return {
        "metrics": [
            {"name": n, "category": _METRICS[n]["category"], "unit": _METRICS[n]["unit"]}
            for n in names
        ]
    }


@tool
def query_metric(name: MetricName) -> MetricReading:
    """Query a metric's current value and recent series. To ask whether it is above or below a
    number, use check_threshold instead."""
    metric = _METRICS.get(name)
    if metric is None:
        raise ToolException(f"unknown metric {name!r}; known: {', '.join(_METRICS)}")
    return {
        "name": name,
        "current": metric["current"],
        "unit": metric["unit"],
        "series": list(metric["series"]),
    }


@tool
def check_threshold(
    metric_name: MetricName,
    threshold: float,
    operator: Literal["gt", "gte", "lt", "lte"] = "gt",
    value: float | None = None,
) -> ThresholdCheck:
    """Check whether a metric's value (given, or its current value) crosses a threshold: the
    answer to "is X above N?". It reads the current value itself: no query_metric step first."""
    if value is None:
        metric = _METRICS.get(metric_name)
        if metric is None:
            raise ToolException(f"unknown metric {metric_name!r}")
        value = float(metric["current"])
    return {
        "metric": metric_name,
        "value": value,
        "threshold": threshold,
        "operator": operator,
        "exceeded": _OPERATORS[operator](value, threshold),
    }


tagged(list_metrics, "metrics", "read", "read-only", resource="metrics")
tagged(query_metric, "metrics", "read", "read-only", resource="metrics")
tagged(check_threshold, "metrics", "check", "read-only", resource="metrics")

# check_threshold before query_metric: a small planner model reads the catalog in order and,
# asked "is X above N?", took the first tool that reads the metric (Qwen2.5-Coder-1.5B planned
# query_metric plus a condition on the raw number until check_threshold came first).
TOOLS = [list_metrics, check_threshold, query_metric]
