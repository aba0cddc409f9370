"""Outputs and text conditions through the CLI, on SQLite and MongoDB (issue 42, items 5 and 6,
and ``when`` failing closed): ``run --json`` and ``show --json`` print strict JSON with NaN as
``null``; an output the store cannot hold fails its step once (exit 1); a ``when`` on text skips
its step and dependents (``condition-not-boolean``, exit 1), and on a declared string is refused
before anything runs (exit 2).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli

pytestmark = pytest.mark.e2e

BOTH = pytest.mark.parametrize(
    "cli", ["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)], indirect=True
)


@pytest.fixture
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    store = (
        request.getfixturevalue("mongodb_uri")
        if getattr(request, "param", "sqlite") == "mongodb"
        else None
    )
    made = Cli(tmp_path, store_uri=store)
    made.env["TOOLPLAN_TOOLS"] += ",tests.support.odd_outputs"
    return made


def strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in what the CLI printed: {text[:300]}")

    return json.loads(text, parse_constant=refuse)


READING = {"ratio": None, "high": None, "low": None, "ok": 1.5}


@BOTH
def test_nan_is_printed_and_shown_as_null(cli: Cli) -> None:
    plan = {"steps": [{"id": "n", "tool": "not_a_number", "parameters": {}}]}
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 0, done.stderr
    result = strict(done.stdout)
    assert result["outputs"] == {"n": READING}
    shown = cli("show", result["planId"], "--json")
    assert shown.code == 0 and strict(shown.stdout)["execution"]["steps"][0]["output"] == READING


@BOTH
def test_a_nan_an_older_version_stored_is_shown_as_null(cli: Cli) -> None:
    plan = {"steps": [{"id": "n", "tool": "echo", "parameters": {"value": 1}}]}
    plan_id = cli("run", "--file", cli.write_plan(plan), "--json").json()["planId"]
    text = '{"ratio": NaN, "high": Infinity, "low": -Infinity, "ok": 1.5}'
    uri = cli.env["TOOLPLAN_STORE"]
    if uri.startswith("sqlite"):
        with sqlite3.connect(uri.removeprefix("sqlite:///")) as db:
            db.execute("UPDATE tp_steps SET output = ? WHERE plan_id = ?", (text, plan_id))
    else:
        from pymongo import MongoClient

        with MongoClient(uri) as mongo:
            steps = mongo.get_default_database()["steps"]
            steps.update_one({"planId": plan_id}, {"$set": {"output": text}})
    shown = cli("show", plan_id, "--json")
    assert shown.code == 0 and strict(shown.stdout)["execution"]["steps"][0]["output"] == READING


@BOTH
@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("raw_bytes", "bytes that are not UTF-8 text"),
        ("huge_integer", "an integer of 5001 digits at output.total"),
        ("deeply_nested", "nesting deeper than 255 levels"),
    ],
)
def test_an_output_the_store_cannot_hold_fails_its_step_once(cli: Cli, tool: str, why: str) -> None:
    plan = {"steps": [{"id": "odd", "tool": tool, "parameters": {}, "maxAttempts": 3}]}
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 1, done.stderr
    [step] = strict(done.stdout)["steps"]
    assert (step["status"], step["attempts"]) == ("failed", 1)
    assert f"tool {tool!r} returned an output the record cannot hold: {why}" in step["error"]
    assert [c["step"] for c in cli.calls()] == ["odd"]


@BOTH
def test_a_text_condition_skips_the_guarded_step_and_its_dependents(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "ask", "tool": "says", "parameters": {"answer": "false"}},
            {
                "id": "wire",
                "tool": "wire_money",
                "when": "{{ask}}",
                "parameters": {"to": "ACME", "amount": 100},
            },
            {"id": "receipt", "tool": "echo", "parameters": {"value": "{{wire}}"}},
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan), "--json", "--approve-all")
    assert done.code == 1, done.stderr
    result = strict(done.stdout)
    assert result["status"] == "partial"
    steps = {s["id"]: s for s in result["steps"]}
    assert [(steps[s]["status"], steps[s]["reason"]) for s in ("wire", "receipt")] == [
        ("skipped", "condition-not-boolean")
    ] * 2
    assert '{{ask}} is the text "false"' in steps["wire"]["error"]
    assert [c["step"] for c in cli.calls()] == ["ask"]  # no money moved
    table = cli("show", result["planId"])
    assert "not a yes/no value" in table.stdout


@BOTH
def test_a_when_on_a_declared_string_is_refused_before_anything_runs(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "v", "tool": "verdict", "parameters": {"answer": "no"}},
            {
                "id": "wire",
                "tool": "wire_money",
                "when": "{{v.answer}}",
                "parameters": {"to": "ACME", "amount": 100},
            },
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 2
    assert "step 'wire': when '{{v.answer}}' is text, not a yes/no value" in (
        done.stdout + done.stderr
    )
    assert cli.calls() == []
