"""Tools for the plan reader's tests (importable as ``tests.support.reader_tools``): reads and

from __future__ import annotations
writes of the kinds NESTFUL's nested calls use, and two tools whose names are not Python names."""

from typing import Any

from langchain_core.tools import StructuredTool, tool
from typing_extensions import TypedDict

from toolplan.tools import tagged


class Route(TypedDict):
    distance: float
    time: float


@tool
def calculate_route(start: str, end: str) -> Route:
    """The route between two places: its distance (km) and time (hours)."""
    return {"distance": 300.0, "time": 4.0}


@tool
def calculate_pace(distance: float, time: float) -> dict[str, Any]:
    """The pace over a distance covered in a time."""
    return {"pace": distance / time}


@tool
def roll_die(sides: int) -> dict[str, Any]:
    """Roll a die with this many sides (a side effect: each roll is new)."""
    return {"value": sides}


@tool
def encrypt_data(data: str) -> dict[str, Any]:
    """Encrypt a text."""
    return {"cipher": data[::-1]}


@tool
def calculate_bmi(weight: float, height: float) -> dict[str, Any]:
    """Body mass index from weight (kg) and height (m)."""
    return {"BMI": round(weight / height**2, 1)}


def _search(q: str) -> dict[str, Any]:
    return {"results": [q]}


def _current(city: str) -> dict[str, Any]:
    return {"city": city, "temp": 12}


search = StructuredTool.from_function(
    _search, name="Real-Time_Search", description="Search the web now."
)
current = StructuredTool.from_function(
    _current, name="weather.current", description="The weather in a city now."
)

tagged(calculate_route, "read-only", resource="maps")
tagged(calculate_bmi, "read-only")
tagged(search, "read-only", resource="web")
tagged(current, "read-only", resource="weather")

TOOLS = [calculate_route, calculate_pace, roll_die, encrypt_data, calculate_bmi, search, current]
