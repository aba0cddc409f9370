"""Step ids (issue 28): the schema the model answers in constrains them as the validator does, and
the validator's step-id errors say how to fix them, in the repair round too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from tests.support.fake_models import ToolCallingFake
from tests.support.plans import llm_step
from toolplan.errors import PlanInvalid
from toolplan.pipeline.planning import create_plan
from toolplan.plan_format.plan import parse_plan
from toolplan.planning.context import PlannerContext
from toolplan.planning.schema import generic_plan_schema, typed_plan_schema
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze
from toolplan.validation.dag import STEP_ID_PATTERN

CATALOG = load_tool_modules(["blog"])

ACCEPTED = ["a", "_a", "A-1", "author_2", "x-y_z"]
REJECTED = ["2d_releases", "-a", "a b", "a.b", "", "é", "a\n"]


def step_id_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Every schema of a step id in a plan schema: a step's ``id``, ``dependsOn`` items and
    ``outputSteps`` items, with ``$ref``s followed."""
    defs = schema.get("$defs", {})

    def deref(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        return deref(defs[ref.rsplit("/", 1)[-1]]) if ref else node

    steps = deref(schema["properties"]["steps"]["items"])
    branches = steps.get("anyOf") or [steps]
    found = [deref(schema["properties"]["outputSteps"]["items"])]
    for branch in branches:
        found.append(deref(branch["properties"]["id"]))
        found.append(deref(deref(branch["properties"]["dependsOn"])["items"]))
    return found


@pytest.mark.parametrize(
    "schema",
    [typed_plan_schema(CATALOG).schema, generic_plan_schema().schema],
    ids=["typed", "generic"],
)
def test_the_plan_schema_constrains_step_ids_as_the_validator_does(schema: dict[str, Any]) -> None:
    for id_schema in step_id_schemas(schema):
        assert id_schema == {**id_schema, "type": "string", "pattern": STEP_ID_PATTERN}


def test_the_fallback_schema_has_no_pattern_for_servers_that_reject_one() -> None:
    plain = generic_plan_schema(step_id_pattern=False).schema
    assert all("pattern" not in s for s in step_id_schemas(plain))


def test_the_step_id_pattern_is_the_validators_and_compiles_in_grammar_engines() -> None:
    # anchored, and no escapes at all: llama.cpp's converters need ^...$, and llama-cpp-python's
    # GBNF parser dies on an unknown escape
    assert STEP_ID_PATTERN.startswith("^") and STEP_ID_PATTERN.endswith("$")
    assert "\\" not in STEP_ID_PATTERN
    for step_id in ACCEPTED:
        assert re.fullmatch(STEP_ID_PATTERN, step_id)
        analyze(parse_plan({"steps": [step(step_id)]}), CATALOG)
    for step_id in REJECTED:
        assert not re.fullmatch(STEP_ID_PATTERN, step_id)
        with pytest.raises(PlanInvalid, match="id"):  # "" already fails to parse
            analyze(parse_plan({"steps": [step(step_id)]}), CATALOG)


def step(step_id: str, *, name: str = "Ann") -> dict[str, Any]:
    return {"id": step_id, "tool": "createAuthor", "parameters": author(name)}


def author(name: str) -> dict[str, str]:
    return {"name": name, "email": f"{name.lower()}@example.org"}


def messages(steps: list[dict[str, Any]]) -> list[str]:
    with pytest.raises(PlanInvalid) as caught:
        analyze(parse_plan({"steps": steps}), CATALOG)
    return [issue.message for issue in caught.value.issues]


def test_a_duplicate_step_id_says_how_to_rename_it() -> None:
    (message,) = messages([step("output"), step("output", name="Bo")])
    assert message.startswith("step id 'output' is used more than once (steps 1 and 2)")
    assert "give step 2 its own id, e.g. 'output_2'" in message
    assert "templates, dependsOn and outputSteps" in message


def test_the_suggested_ids_are_free() -> None:
    found = messages([step("output"), step("output_2"), step("output"), step("output")])
    assert "e.g. 'output_3'" in found[0] and "(steps 1 and 3)" in found[0]
    assert "e.g. 'output_4'" in found[1] and "(steps 1 and 4)" in found[1]


def test_an_unusable_step_id_gets_a_usable_one_suggested() -> None:
    (message,) = messages([step("2d_releases")])
    assert "step id '2d_releases' is not usable in templates" in message
    assert "e.g. 'step_2d_releases'" in message
    (spaced,) = messages([step("fetch author")])
    assert "e.g. 'fetch_author'" in spaced


async def test_the_repair_round_sends_the_duplicate_ids_hint(tmp_path: Path) -> None:
    duplicate = {
        "reasoning": "two authors",
        "steps": [
            llm_step("output", "createAuthor", author("Ann")),
            llm_step("output", "createAuthor", author("Bo")),
        ],
        "outputSteps": ["output"],
    }
    fixed = {
        **duplicate,
        "steps": [duplicate["steps"][0], {**duplicate["steps"][1], "id": "output_2"}],
        "outputSteps": ["output", "output_2"],
    }
    replies = [
        AIMessage(content="", tool_calls=[{"name": "LLMPlan", "args": a, "id": "c"}])
        for a in (duplicate, fixed)
    ]
    ToolCallingFake.seen = []
    ctx = PlannerContext(
        store=SqliteStore(tmp_path / "t.db"),
        catalog=CATALOG,
        model=ToolCallingFake(messages=iter(replies)),
        model_name="fake:model",
    )
    outcome = await create_plan("create authors Ann and Bo", ctx)
    assert outcome.llm_calls == 2
    feedback = ToolCallingFake.seen[1][-1].content
    assert "step id 'output' is used more than once" in feedback
    assert "give step 2 its own id, e.g. 'output_2'" in feedback
