"""Outputs are data the record can hold (issue 42, items 5 and 6).

NaN and the infinities become ``null`` wherever an output is normalized, so the store, GraphQL,
``show --json`` and the plan page all see strict JSON; a NaN an older version stored is read back
as ``null``. An output the store cannot hold (bytes that are not text, an integer beyond the
digits JSON readers take, nesting deeper than 255 levels) fails its step once with the reason:
never retried, because the tool already ran. Engine paths run on SQLite and MongoDB.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.odd_outputs import NESTING
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.toolcall import normalize_output
from toolplan.errors import ToolFailure, ToolOutputInvalid
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store import Store, codec, open_store
from toolplan.tools import load_tool_modules


def _strict(text: str) -> Any:
    """``text`` parsed as strict JSON: NaN and Infinity are refused."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in what should be strict JSON: {text[:200]}")

    return json.loads(text, parse_constant=refuse)


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


# -- normalize_output: the one place outputs become JSON ------------------------------------------


def test_nan_and_infinities_become_null_everywhere_in_an_output() -> None:
    assert normalize_output(float("nan")) is None
    assert normalize_output({"a": [1.5, float("inf")], "b": -math.inf}) == {
        "a": [1.5, None],
        "b": None,
    }
    # A JSON text is parsed by Python's json, which reads NaN: the same rule applies.
    assert normalize_output('{"x": NaN, "y": [Infinity, -Infinity, 2]}') == {
        "x": None,
        "y": [None, None, 2],
    }


def test_an_output_without_nan_is_kept_as_it_was() -> None:
    value = {"a": [1, 2.5, "x", None, True], "b": {"c": 10**300}}
    assert normalize_output(value) == value
    assert normalize_output(b"plain text") == "plain text"  # UTF-8 bytes stay text, as before


@pytest.mark.parametrize(
    ("output", "why"),
    [
        (b"\x89PNG\xff", "bytes that are not UTF-8 text"),
        ({"data": [b"\xff\xfe"]}, "bytes that are not UTF-8 text at output.data[0]"),
        ({"total": 10**5000}, "an integer of 5001 digits at output.total"),
        (-(10**4300), "an integer of 4301 digits"),
        (_nested(NESTING), "nesting deeper than 255 levels"),
        ("[" * NESTING + "]" * NESTING, "nesting deeper than 255 levels"),
    ],
    ids=["bytes", "bytes-inside", "integer", "negative-integer", "nesting", "nesting-in-text"],
)
def test_an_output_the_store_cannot_hold_is_refused_naming_why(output: Any, why: str) -> None:
    with pytest.raises(ToolOutputInvalid) as raised:
        normalize_output(output)
    assert why in str(raised.value)
    assert isinstance(raised.value, ToolFailure)  # recorded on the step, never fatal to a run


def test_the_limits_themselves_are_held() -> None:
    assert normalize_output(_nested(255)) == _nested(255)
    assert normalize_output("[" * 255 + "]" * 255) == _nested(255)
    assert normalize_output(10**4299) == 10**4299  # 4,300 digits
    for deeper in (_nested(256), "[" * 256 + "]" * 256):
        with pytest.raises(ToolOutputInvalid, match="nesting deeper than 255 levels"):
            normalize_output(deeper)


# -- the codec: strict JSON written and read ------------------------------------------------------


def test_the_codec_writes_and_reads_strict_json() -> None:
    assert _strict(codec.dumps({"a": float("nan"), "b": [math.inf]})) == {"a": None, "b": [None]}
    # What an older version wrote is read back as null.
    assert codec.loads('{"a": NaN, "b": [Infinity, -Infinity]}') == {"a": None, "b": [None, None]}


# -- through the engine, on both stores ------------------------------------------------------------

FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001, jitter=0), default_timeout=10)


@pytest.fixture(params=["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    uri = (
        f"sqlite:///{tmp_path / 'toolplan.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("mongodb_uri")
    )
    opened = open_store(uri)
    yield opened
    opened.close()


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def run(store: Store, plan: dict[str, Any]) -> Any:
    catalog = load_tool_modules(["tests.support.tools", "tests.support.odd_outputs"])
    ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
    ctx = ExecutionContext(store=store, catalog=catalog, options=FAST)
    result = await execute_stored_plan(ref.plan_id, ctx)
    return result, store.get_execution(ref.plan_id)


async def test_nan_is_stored_and_read_back_as_null(store: Store) -> None:
    plan = {
        "steps": [
            {"id": "n", "tool": "not_a_number", "parameters": {}},
            {"id": "copy", "tool": "echo", "parameters": {"value": "{{n}}"}},
        ]
    }
    result, stored = await run(store, plan)
    expected = {"ratio": None, "high": None, "low": None, "ok": 1.5}
    assert result.status == "succeeded"
    assert stored.step("n").output == expected and stored.step("copy").output == expected
    assert _strict(json.dumps(result.to_json()))["outputs"]["copy"] == expected


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("raw_bytes", "bytes that are not UTF-8 text"),
        ("huge_integer", "an integer of 5001 digits at output.total"),
        ("deeply_nested", "nesting deeper than 255 levels"),
        ("nested_text", "nesting deeper than 255 levels"),
    ],
)
async def test_an_output_the_store_cannot_hold_fails_its_step_once(
    store: Store, log: Path, tool: str, why: str
) -> None:
    plan = {
        "steps": [
            {"id": "odd", "tool": tool, "parameters": {}, "maxAttempts": 3},
            {"id": "after", "tool": "echo", "parameters": {"value": "{{odd}}"}},
        ]
    }
    result, stored = await run(store, plan)
    step = stored.step("odd")
    assert (step.status, step.attempts, step.output) == ("failed", 1, None)
    assert step.error.startswith(f"tool {tool!r} returned an output the record cannot hold: ")
    assert why in step.error and "after 3 attempts" not in step.error
    assert stored.step("after").status == "skipped"
    assert [c["step"] for c in calls(log)] == ["odd"]  # the tool, and its effect, ran once
    assert result.status == "failed"


async def test_a_forEach_item_and_a_fallback_are_checked_the_same_way(
    store: Store, log: Path
) -> None:
    plan = {
        "steps": [
            {
                "id": "each",
                "tool": "echo",
                "forEach": [1, 2],
                "parameters": {"value": "{{$item}}"},
                "fallback": {"tool": "huge_integer", "parameters": {}},
            },
            {
                "id": "mapped",
                "tool": "raw_bytes",
                "forEach": [1, 2],
                "parameters": {},
                "maxAttempts": 3,
            },
            {
                "id": "fell",
                "tool": "fails",
                "parameters": {},
                "fallback": {"tool": "deeply_nested", "parameters": {}},
            },
        ]
    }
    _, stored = await run(store, plan)
    assert stored.step("each").status == "succeeded"
    mapped = stored.step("mapped")
    assert mapped.status == "failed"
    assert [(i.status, i.attempts) for i in mapped.items] == [("failed", 1), ("failed", 1)]
    assert all("bytes that are not UTF-8 text" in (i.error or "") for i in mapped.items)
    fell = stored.step("fell")
    assert fell.status == "failed" and "nesting deeper than 255 levels" in fell.error
    assert "fallback 'deeply_nested' failed too" in fell.error
    counted = [c["step"] for c in calls(log)]
    assert counted.count("mapped") == 2 and counted.count("fell") == 2  # primary + fallback once
