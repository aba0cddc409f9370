"""A small stand-in for the NESTFUL data copy (``nestful-wrapper==0.1.7``'s layout), for tests
of ``bench.nestful`` that must not need the real data: an ``sgd``-like split (untyped specs,
dotted names) and an ``executable``-like one (typed specs, a name with ``-``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["BUS", "RESTAURANT", "write_copy"]


def _parameter(description: str, *, required: bool = True, **more: Any) -> dict[str, Any]:
    return {"description": description, "required": required, "allowed_values": [], **more}


def _sgd_spec(name: str, inputs: list[str], outputs: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name.split('.')[1]} (a test service)",
        "query_parameters": {arg: _parameter(arg.replace("_", " ")) for arg in inputs},
        "output_parameters": {
            field: {"description": field.replace("_", " "), "allowed_values": []}
            for field in outputs
        },
    }


SGD_SPECS: list[dict[str, Any]] = [
    _sgd_spec(
        "Buses.FindBus",
        ["origin", "destination", "departure_date"],
        ["origin", "destination", "departure_time", "price"],
    ),
    _sgd_spec(
        "Buses.BuyBusTicket",
        ["origin", "destination", "departure_date", "departure_time", "group_size"],
        ["ticket_id"],
    ),
    _sgd_spec("Restaurants.FindRestaurants", ["city", "cuisine"], ["restaurant_name", "city"]),
    _sgd_spec(
        "Restaurants.ReserveRestaurant",
        ["restaurant_name", "city", "time", "party_size"],
        ["reservation_id"],
    ),
    *(
        _sgd_spec(f"Other.Service{n}", ["city"], [f"result{n}"])
        for n in range(1, 9)  # distractors
    ),
]
SGD_SPECS[0]["query_parameters"]["fare_type"] = _parameter(
    "Type of fare", required=False, default_value="Economy", allowed_values=["Economy", "Flexible"]
)

BUS: dict[str, Any] = {
    "input": "Find a bus from Boston to New York on 2024-05-01 and buy 2 tickets on it.",
    "output": [
        {
            "name": "Buses.FindBus",
            "arguments": {
                "origin": "Boston",
                "destination": "New York",
                "departure_date": "2024-05-01",
            },
            "label": "var1",
        },
        {
            "name": "Buses.BuyBusTicket",
            "arguments": {
                "origin": "$var1.origin$",
                "destination": "$var1.destination$",
                "departure_date": "2024-05-01",
                "departure_time": "$var1.departure_time$",
                "group_size": "2",
            },
            "label": "var2",
        },
        {"name": "var_result", "arguments": {"ticket": "$var2$"}},
    ],
}
"""``sgd-0``: a call whose output three arguments of the next one read."""

RESTAURANT: dict[str, Any] = {
    "input": "Find a sushi restaurant in Paris and reserve a table for 2 there at 19:00.",
    "output": [
        {
            "name": "Restaurants.FindRestaurants",
            "arguments": {"city": "Paris", "cuisine": "sushi"},
            "label": "var1",
        },
        {
            "name": "Restaurants.ReserveRestaurant",
            "arguments": {
                "restaurant_name": "$var1.restaurant_name$",
                "city": "Paris",
                "time": "19:00",
                "party_size": "2",
            },
            "label": "var2",
        },
        {"name": "var_result", "arguments": {"reservation": "$var2$"}},
    ],
}
"""``sgd-1``."""

EXECUTABLE_SPECS: list[dict[str, Any]] = [
    {
        "name": "Real-Time_Product_Search",
        "description": "Search products",
        "method": "GET",
        "host": "example.invalid",
        "query_parameters": {
            "q": {"type": "string", "description": "Query", "required": True},
            "min_rating": {"type": "string", "description": "Rating", "enum": ["1", "2"]},
            "max_price": {"type": "float", "description": "Price cap", "optional": True},
            "day": {"type": "Date (yyyy-mm-dd)", "description": "Day", "required": False},
        },
        "output_parameters": {
            "products": {
                "type": "array",
                "items": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        },
    },
    {
        "name": "WeatherAPI.com_Forecast",
        "description": "Forecast",
        "query_parameters": {"q": {"type": "string", "description": "Place", "required": True}},
        "output_parameters": {"forecast": {"type": "object", "description": "The forecast"}},
    },
]

EXECUTABLE_SAMPLE: dict[str, Any] = {
    "input": "Look up the forecast for Paris and search products for it.",
    "output": [
        {"name": "WeatherAPI.com_Forecast", "arguments": {"q": "Paris"}, "label": "var1"},
        {
            "name": "Real-Time_Product_Search",
            "arguments": {"q": "umbrella for $var1.forecast$", "max_price": 20},
            "label": "var2",
        },
        {"name": "var_result", "arguments": {"products": "$var2.products$"}},
    ],
}


def write_copy(root: Path) -> Path:
    """Write the stand-in copy under ``root`` (the directory ``NESTFUL_DATA`` names)."""
    files = {
        "data_v1/non-executable/non-executable-sgd-data.json": [BUS, RESTAURANT],
        "data_v1/non-executable/non-executable-sgd-spec.json": SGD_SPECS,
        "data_v1/non-executable/non-executable-glaive-data.json": [],
        "data_v1/non-executable/non-executable-glaive-spec.json": [],
        "data_v1/executable/executable-data.json": [EXECUTABLE_SAMPLE],
        "data_v1/executable/executable-spec.json": EXECUTABLE_SPECS,
    }
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=1))
    return root
