"""Strict schemas make the model write every optional argument (issue 28): a ``null`` where the
typed schema made an optional property nullable, at any depth, and the fillers ``""`` and
``"null"``, are dropped before validation, so a correct plan validates and the tool's default
applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from tests.support.fake_models import ToolCallingFake
from toolplan.pipeline.planning import create_plan
from toolplan.plan_format.plan import parse_plan
from toolplan.planning.fillers import drop_fillers
from toolplan.planning.graph import PlannerContext
from toolplan.planning.parsing import read_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation import analyze


class Address(BaseModel):
    city: str
    zip: str | None = None
    country: str = "DE"


class Parcel(BaseModel):
    weight: float
    label: str = "parcel"


def ship(
    to: Address,
    parcels: list[Parcel] | None = None,
    express: bool = False,
    note: str = "",
    speed: Literal["", "fast", "slow"] = "fast",
) -> dict[str, Any]:
    """Ship parcels to an address."""
    return {"to": to.city}


CATALOG = ToolCatalog([ship])


def step(parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "send",
        "tool": "ship",
        "parameters": parameters,
        "dependsOn": [],
        "confidence": 1,
    }


def read(parameters: dict[str, Any]) -> dict[str, Any]:
    reading = read_plan({"steps": [step(parameters)], "outputSteps": ["send"]}, CATALOG)
    assert reading.issues == [] and reading.data is not None
    return dict(reading.data["steps"][0]["parameters"])


def valid(parameters: dict[str, Any]) -> bool:
    plan = parse_plan({"steps": [step(parameters)], "outputSteps": ["send"]})
    try:
        analyze(plan, CATALOG)
    except Exception:
        return False
    return True


def test_a_nested_optional_null_is_dropped_so_the_correct_plan_validates() -> None:
    # what strict json_schema makes the model write for "ship to Berlin"
    written = {
        "to": {"city": "Berlin", "zip": None, "country": None},
        "parcels": [{"weight": 2.5, "label": None}],
        "express": None,
        "note": None,
        "speed": None,
    }
    assert not valid(written)
    parameters = read(written)
    # optional: dropped at every depth, their defaults apply (zip's is None anyway)
    assert parameters == {"to": {"city": "Berlin"}, "parcels": [{"weight": 2.5}]}
    assert valid(parameters)


def test_fillers_of_optional_arguments_are_dropped_at_every_depth() -> None:
    written = {
        "to": {"city": "Berlin", "zip": "", "country": "null"},
        "parcels": [{"weight": 1, "label": ""}],
        "express": "null",
        "note": "",
    }
    assert not valid(written)
    parameters = read(written)
    assert parameters == {"to": {"city": "Berlin"}, "parcels": [{"weight": 1}]}
    assert valid(parameters)


def test_required_arguments_and_meaningful_values_are_kept() -> None:
    # a required argument is never dropped: its filler is an error the validator reports
    assert read({"to": {"city": ""}}) == {"to": {"city": ""}}
    assert read({"to": {"city": None}}) == {"to": {"city": None}}
    # "" is one of speed's values: a choice, not a filler
    assert read({"to": {"city": "Oslo"}, "speed": ""})["speed"] == ""
    # real values, templates and unknown arguments stay for the validator
    kept = {"to": "{{lookup.address}}", "note": "fragile", "express": False, "colour": ""}
    assert read(kept) == kept


def test_the_rule_reads_refs_and_leaves_free_form_objects_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "point": {"$ref": "#/$defs/Point"},
            "extra": {"type": "object"},
        },
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "tag": {"type": "string"}},
                "required": ["x"],
            }
        },
    }
    assert drop_fillers({"point": {"x": 1, "tag": "null"}, "extra": {"k": ""}}, schema) == {
        "point": {"x": 1},
        "extra": {"k": ""},
    }


async def test_the_planner_stores_the_plan_strict_mode_made_the_model_write(tmp_path: Path) -> None:
    answer = {
        "reasoning": "one call",
        "steps": [
            step(
                {
                    "to": {"city": "Berlin", "zip": None, "country": None},
                    "parcels": [{"weight": 2.5, "label": ""}],
                    "express": None,
                    "note": "null",
                    "speed": None,
                }
            )
        ],
        "outputSteps": ["send"],
    }
    message = AIMessage(content="", tool_calls=[{"name": "LLMPlan", "args": answer, "id": "c1"}])
    ToolCallingFake.seen = []
    ctx = PlannerContext(
        store=SqliteStore(tmp_path / "t.db"),
        catalog=CATALOG,
        model=ToolCallingFake(messages=iter([message])),
        model_name="fake:model",
        max_repairs=0,
    )
    outcome = await create_plan("ship 2.5 kg to Berlin", ctx)
    assert outcome.llm_calls == 1
    assert outcome.plan["steps"][0]["parameters"] == {
        "to": {"city": "Berlin"},
        "parcels": [{"weight": 2.5}],
    }


@pytest.mark.parametrize("filler", ["", "null", None])
def test_a_top_level_optional_filler_is_dropped(filler: Any) -> None:
    assert read({"to": {"city": "Rome"}, "note": filler}) == {"to": {"city": "Rome"}}
