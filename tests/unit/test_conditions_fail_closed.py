"""``when`` fails closed (issue 42): a condition that resolves to text is not a yes/no value.

MCP tools answer in text, and ``"false"``, ``"0"`` or ``"no"`` used to count as true, so a guard
meant to stop a side effect let it through. Now a ``when`` on a declared string is a validation
error for every plan, and one that resolves to text at run time skips its step with reason
``condition-not-boolean``, its dependents with it, naming the value. Lists, objects, numbers,
booleans and null keep their meaning. The engine paths run on SQLite and MongoDB.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.items import ConditionNotBoolean, condition_holds
from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import Step, parse_plan
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store import Store, open_store
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

CATALOG = load_tool_modules(["metrics", "tests.support.tools", "tests.support.odd_outputs"])


def step(**fields: Any) -> Step:
    return Step.model_validate({"id": "s", "tool": "echo", "parameters": {}, **fields})


# -- at run time: the pure piece -------------------------------------------------------------------


@pytest.mark.parametrize("text", ["false", "0", "no", "", "true", "yes"])
def test_text_is_never_read_as_yes_or_no(text: str) -> None:
    for when in ("{{a.v}}", {"not": "{{a.v}}"}):
        with pytest.raises(ConditionNotBoolean) as raised:
            condition_holds(step(when=when), {"a": {"v": text}})
        message = str(raised.value)
        assert "is not a yes/no value" in message
        assert f"{{{{a.v}}}} is the text {json.dumps(text)} (text is never read" in message


@pytest.mark.parametrize("value", [True, 1, -1, 0.5, [0], {"a": None}])
def test_other_values_keep_their_meaning_truthy(value: Any) -> None:
    assert condition_holds(step(when="{{a.v}}"), {"a": {"v": value}})[0]
    assert not condition_holds(step(when={"not": "{{a.v}}"}), {"a": {"v": value}})[0]


@pytest.mark.parametrize("value", [False, None, 0, 0.0, [], {}])
def test_other_values_keep_their_meaning_falsy(value: Any) -> None:
    assert not condition_holds(step(when="{{a.v}}"), {"a": {"v": value}})[0]
    assert condition_holds(step(when={"not": "{{a.v}}"}), {"a": {"v": value}})[0]


# -- before anything runs: a declared string -------------------------------------------------------


def test_a_when_on_a_declared_string_is_a_validation_error_for_every_plan() -> None:
    verdict = {"id": "v", "tool": "verdict", "parameters": {"answer": "no"}}
    wire = {"id": "wire", "tool": "wire_money", "parameters": {"to": "x", "amount": 1}}
    for when in ("{{v.answer}}", {"not": "{{v.answer}}"}):
        with pytest.raises(PlanInvalid) as caught:
            analyze(parse_plan({"steps": [verdict, {**wire, "when": when}]}), CATALOG)
        [issue] = caught.value.issues
        assert (issue.code, issue.step) == ("condition", "wire")
        assert "step 'wire': when '{{v.answer}}' is text, not a yes/no value" in issue.message
        assert "return a boolean" in issue.message
    metric = {"id": "cpu", "tool": "query_metric", "parameters": {"name": "cpu_usage"}}
    with pytest.raises(PlanInvalid) as caught:
        analyze(parse_plan({"steps": [metric, {**wire, "when": "{{cpu.unit}}"}]}), CATALOG)
    assert "when '{{cpu.unit}}' is text" in str(caught.value)


def test_a_when_on_a_declared_boolean_number_list_or_unknown_passes() -> None:
    verdict = {"id": "v", "tool": "verdict", "parameters": {"answer": "no"}}
    metric = {"id": "cpu", "tool": "query_metric", "parameters": {"name": "cpu_usage"}}
    text = {"id": "t", "tool": "says", "parameters": {"answer": "no"}}  # -> str: may hold JSON
    wire = {"id": "wire", "tool": "wire_money", "parameters": {"to": "x", "amount": 1}}
    for when in ("{{v.ok}}", "{{v}}", "{{cpu.current}}", "{{cpu.series}}", "{{t}}"):
        analyze(parse_plan({"steps": [verdict, metric, text, {**wire, "when": when}]}), CATALOG)


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


GUARDED = {
    "steps": [
        {"id": "ask", "tool": "says", "parameters": {"answer": "false"}},
        {
            "id": "wire",
            "tool": "echo",
            "when": "{{ask}}",
            "parameters": {"value": {"to": "ACME", "amount": 100}},
        },
        {"id": "receipt", "tool": "echo", "parameters": {"value": "{{wire}}"}},
        {"id": "other", "tool": "echo", "parameters": {"value": 1}},
    ]
}


async def test_a_text_condition_skips_its_step_and_dependents_naming_the_value(
    store: Store, log: Path
) -> None:
    ref = submit_plan(GUARDED, store=store, catalog=CATALOG, max_steps=50)
    ctx = ExecutionContext(store=store, catalog=CATALOG, options=FAST)
    result = await execute_stored_plan(ref.plan_id, ctx)
    stored = store.get_execution(ref.plan_id)
    assert stored is not None
    wire, receipt = stored.step("wire"), stored.step("receipt")
    assert (wire.status, wire.reason) == ("skipped", "condition-not-boolean")
    assert wire.error is not None and wire.error.startswith(
        "skipped: condition '{{ask}}' is not a yes/no value: {{ask}} is the text \"false\""
    )
    assert (receipt.status, receipt.reason) == ("skipped", "condition-not-boolean")
    assert receipt.error == "skipped because the condition of 'wire' is not a yes/no value"
    assert stored.step("other").status == "succeeded"
    called = [json.loads(line)["step"] for line in log.read_text().splitlines()]
    assert sorted(called) == ["ask", "other"]  # the guarded side effect never ran
    # Not a decision the plan made: the run is partial (exit 1), so someone looks at it.
    assert (result.status, result.exit_code) == ("partial", 1)
