"""The research toolset of seed 000: weather per city, comparisons and summaries."""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.tools import tool
from typing_extensions import TypedDict

from toolplan.tools.catalog import tagged

__all__ = ["TOOLS"]


class WeatherReport(TypedDict):
    city: str
    temp: float
    condition: str
    humidity: int


class Comparison(TypedDict):
    warmer: str | None
    difference: float
    a: str | None
    b: str | None


class Summary(TypedDict):
    count: int
    warmest: str | None
    coldest: str | None
    averageTemp: float | None


_CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "foggy", "snowy"]


@tool
def get_weather(location: str) -> WeatherReport:
    """Current weather in a city (`temp` in °C, `humidity` in %)."""
    digest = hashlib.sha256(location.strip().lower().encode()).digest()
    return {
        "city": location,
        "temp": round(-5 + digest[0] / 255 * 40, 1),
        "condition": _CONDITIONS[digest[1] % len(_CONDITIONS)],
        "humidity": 20 + digest[2] % 75,
    }


@tool
def compare_data(data_a: dict[str, Any], data_b: dict[str, Any]) -> Comparison:
    """Compare two weather reports. `warmer` is the warmer city, `difference` in °C."""
    temp_a, temp_b = float(data_a.get("temp", 0)), float(data_b.get("temp", 0))
    return {
        "warmer": data_a.get("city") if temp_a >= temp_b else data_b.get("city"),
        "difference": round(abs(temp_a - temp_b), 1),
        "a": data_a.get("city"),
        "b": data_b.get("city"),
    }


@tool
def summarize(data: list[dict[str, Any]]) -> Summary:
    """Summarize several weather reports."""
    if not data:
        return {"count": 0, "warmest": None, "coldest": None, "averageTemp": None}
    ranked = sorted(data, key=lambda item: float(item.get("temp", 0)))
    return {
        "count": len(data),
        "warmest": ranked[-1].get("city"),
        "coldest": ranked[0].get("city"),
        "averageTemp": round(sum(float(i.get("temp", 0)) for i in data) / len(data), 1),
    }


tagged(get_weather, "weather", "read", "read-only", resource="weather")
tagged(compare_data, "weather", "analysis", "read-only", resource="weather")
tagged(summarize, "weather", "analysis", "read-only", resource="weather")

TOOLS = [get_weather, compare_data, summarize]
