"""The one JSON-schema walker the planner's rules share (plan_format.json_schema): a union is
``anyOf`` or ``oneOf`` (and ``allOf`` for the values a schema lists), nested at any depth, and a
``type`` may be a list; every rule reads a schema the same way."""

from __future__ import annotations

from typing import Any

import pytest

from toolplan.plan_format.json_schema import (
    declared_types,
    is_list,
    items_schema,
    listed_values,
    object_branch,
)

POST = {"type": "object", "properties": {"_id": {"type": "string"}}}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array"},
        {"type": ["array", "null"]},  # the two rules that had their own walker differed here:
        {"oneOf": [{"type": "array"}, {"type": "null"}]},  # batches saw a list, grounding not
        {"anyOf": [{"anyOf": [{"type": "array"}]}, {"type": "null"}]},
    ],
)
def test_a_list_in_any_form_of_union_is_a_list(schema: dict[str, Any]) -> None:
    assert is_list(schema)


@pytest.mark.parametrize("schema", [{}, {"type": "object"}, {"anyOf": [{"type": "string"}]}, None])
def test_anything_else_is_not_a_list(schema: Any) -> None:
    assert not is_list(schema)


def test_declared_types_collects_every_branch() -> None:
    schema = {"anyOf": [{"type": ["integer", "null"]}, {"oneOf": [{"type": "number"}]}]}
    assert declared_types(schema) == {"integer", "null", "number"}


def test_listed_values_are_enum_and_const_in_any_branch() -> None:
    schema = {"anyOf": [{"enum": ["a", "b"]}, {"allOf": [{"const": "c"}]}, {"type": "null"}]}
    assert listed_values(schema) == ["a", "b", "c"]
    assert listed_values({"type": "string"}) is None  # open: no list at all
    assert listed_values({"enum": []}) == []  # closed, and empty


def test_object_branch_is_the_schema_or_its_one_object_branch() -> None:
    assert object_branch(POST) is POST
    assert object_branch({"anyOf": [POST, {"type": "null"}]}) is POST
    assert object_branch({"oneOf": [{"anyOf": [POST]}, {"type": "null"}]}) is POST
    other = {"type": "object", "properties": {"name": {"type": "string"}}}
    two = {"anyOf": [POST, other]}
    assert object_branch(two) is None  # which one? unknown without a value
    assert object_branch(two, {"name": "x"}) is other  # the one that declares its keys


def test_items_schema_is_found_through_branches() -> None:
    assert items_schema({"anyOf": [{"type": "array", "items": POST}, {"type": "null"}]}) is POST
    assert items_schema({"type": "string"}) is None
