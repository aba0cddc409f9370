"""Tools for the plans in which every step was asked for (issue 43): the planner must store and
run each as the model wrote it (``tests/e2e/test_asked_steps.py``). Importable as
``tests.support.asked_tools``; each tool answers at once, offline.

Their descriptions are written so that the old word-matching rules (removed in issue 53) would
fire: ``get_conditions`` shares no word with "is it sunny", ``get_weather`` none with "Wetter",
and ``units`` says it has a default.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOOLS", "convert_currency", "get_conditions", "get_weather", "roll_die", "send_sms"]


def get_conditions(city: str) -> dict[str, Any]:
    """Current sky conditions (clear, cloudy, rain) for a city."""
    return {"city": city, "sky": "clear"}


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
    """Convert an amount of money from one currency to another."""
    return {"amount": amount * 160.0, "currency": to_currency}


def roll_die(sides: int = 6) -> int:
    """Roll one die with the given number of sides."""
    return min(4, sides)


def send_sms(to: list[str] | str, message: str) -> dict[str, Any]:
    """Send a text message to one or more phone numbers."""
    return {"sent": [to] if isinstance(to, str) else list(to), "message": message}


def get_weather(city: str, units: str = "metric") -> dict[str, Any]:
    """Current weather for a city (units: optional, default metric; imperial gives °F)."""
    return {"city": city, "temperature": 71.6 if units == "imperial" else 22.0, "units": units}


TOOLS = [get_conditions, convert_currency, roll_die, send_sms, get_weather]
