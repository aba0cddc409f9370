"""Plans in which every step was asked for are stored and run as the model wrote them (issue 43).

Each case is a plan a model writes correctly, through the real CLI and a scripted
OpenAI-compatible server, that one of the heuristic rewrite rules used to change or refuse. Issue
43 turned those rules off by default and issue 53 removed them (:mod:`toolplan.planning.rewrites`):
nothing is dropped, merged, batched or changed, the planning record's ``changes`` is empty, and
the run calls the tools with the model's own arguments. ``TOOLPLAN_PLANNER_REWRITES=all``, which
turned them on, now warns and means ``format``: the plans stay as written there too.

The tests take the plan format as a parameter (``TOOLPLAN_PLAN_FORMAT``): the model answers with
the JSON plan, or with the same plan as Python statements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.conftest import ON_BOTH_STORES, Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from toolplan.plan_format.plan import parse_plan
from toolplan.plan_format.python_print import render_python_plan

PLAN_FORMATS = ["json", "python"]
"""The plan formats a model may answer in (``TOOLPLAN_PLAN_FORMAT``)."""


def step(sid: str, tool: str, **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": [], "confidence": 0.9}


@dataclass(frozen=True)
class Case:
    """A request, the plan the model writes for it, and the heuristic rule that changed it."""

    name: str
    query: str
    steps: list[dict[str, Any]]
    rule: str
    """The heuristic rule that changed (or refused) it before issue 43 (removed in issue 53)."""

    def plan(self) -> dict[str, Any]:
        return {
            "reasoning": "as asked",
            "steps": self.steps,
            "outputSteps": [s["id"] for s in self.steps],
        }


CASES = [
    Case(
        "capital_and_currency",
        "Is it sunny in the capital of Japan? Also convert 5 EUR to JPY",
        [
            step("sky", "get_conditions", city="Tokyo"),
            step("yen", "convert_currency", amount=5, from_currency="EUR", to_currency="JPY"),
        ],
        "unasked",
    ),
    Case(
        "german",
        "Wie ist das Wetter in der Hauptstadt von Deutschland?",
        [step("wetter", "get_weather", city="Berlin")],
        "unasked",
    ),
    Case(
        "two_rolls",
        "Roll a six-sided die twice",
        [step("first", "roll_die", sides=6), step("second", "roll_die", sides=6)],
        "duplicates",
    ),
    Case(
        "two_texts",
        "Text +15550001 'Running late' and, separately, text +15550002 'Running late'",
        [
            step("ann", "send_sms", to=["+15550001"], message="Running late"),
            step("bob", "send_sms", to=["+15550002"], message="Running late"),
        ],
        "batches",
    ),
    Case(
        "fahrenheit",
        "What's the weather in Boston in Fahrenheit?",
        [step("w", "get_weather", city="Boston", units="imperial")],
        "unstated",
    ),
]


def reply(plan_format: str, plan: dict[str, Any]) -> Reply:
    """The model's answer in ``plan_format``."""
    if plan_format == "python":
        return Reply.content(render_python_plan(parse_plan(plan)))
    return Reply.structured(plan)


@pytest.fixture
def asked(cli_llm: Cli) -> Cli:
    cli_llm.env["TOOLPLAN_TOOLS"] = "tests.support.asked_tools"
    cli_llm.env.pop("TOOLPLAN_PLANNER_REWRITES", None)
    return cli_llm


def calls(steps: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(s["id"], s["tool"], s["parameters"]) for s in steps]


@ON_BOTH_STORES
@pytest.mark.parametrize("plan_format", PLAN_FORMATS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_by_default_the_plan_is_stored_and_run_as_the_model_wrote_it(
    asked: Cli, llm: FakeOpenAIServer, case: Case, plan_format: str
) -> None:
    asked.env["TOOLPLAN_PLAN_FORMAT"] = plan_format
    llm.script([reply(plan_format, case.plan())])
    done = asked("run", case.query, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert calls(data["plan"]["steps"]) == calls(case.steps)
    ran = [(s["id"], s["resolvedParameters"]) for s in data["steps"]]
    assert ran == [(s["id"], s["parameters"]) for s in case.steps]
    assert data["llmCalls"] == 1 and data["status"] == "succeeded"
    assert data["changes"] == []
    meta = asked("show", data["requestId"], "--json").json()["plans"][0]["meta"]
    assert meta["changes"] == []
    assert not {"mergedSteps", "batchedSteps", "unaskedSteps", "unstatedArguments"} & set(meta)


@pytest.mark.parametrize("plan_format", PLAN_FORMATS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_plan_prints_no_change_by_default_nor_with_all_which_warns(
    asked: Cli, llm: FakeOpenAIServer, case: Case, plan_format: str
) -> None:
    asked.env["TOOLPLAN_PLAN_FORMAT"] = plan_format
    llm.script([reply(plan_format, case.plan())])
    plain = asked("plan", case.query)
    assert plain.code == 0, plain.stderr
    assert "rewrite " not in plain.stderr and "warning:" not in plain.stderr

    asked.env["TOOLPLAN_PLANNER_REWRITES"] = "all"  # turned the heuristic rules on, once
    llm.script([reply(plan_format, case.plan())])
    kept = asked("plan", case.query, "--json")
    assert kept.code == 0, kept.stderr
    assert kept.json()["changes"] == [] and kept.json()["llmCalls"] == 1
    assert calls(kept.json()["plan"]["steps"]) == calls(case.steps)
    (said,) = [line for line in kept.stderr.splitlines() if line.startswith("warning:")]
    assert said.startswith("warning: TOOLPLAN_PLANNER_REWRITES='all': the heuristic rewrite")
    assert said.endswith("; 'all' now means 'format'"), kept.stderr


def test_none_reads_the_answer_as_written_and_format_records_what_it_changed(
    asked: Cli, llm: FakeOpenAIServer
) -> None:
    """``format`` (the default) takes ``null`` for an optional argument as "use the default" and
    says so; ``none`` validates the plan as written, so the model is asked to fix it."""
    written = {
        "reasoning": "as asked",
        "steps": [
            {
                **step("w", "get_weather", city="Boston"),
                "parameters": {"city": "Boston", "units": None},
            }
        ],
    }
    llm.script([Reply.structured(written)])
    done = asked("plan", "Weather in Boston", "--json")
    assert done.code == 0, done.stderr
    assert done.json()["changes"] == [
        {"rule": "nulls", "step": "w", "before": "argument units null", "after": "dropped"}
    ]

    asked.env["TOOLPLAN_PLANNER_REWRITES"] = "none"
    fixed = {"reasoning": "as asked", "steps": [step("w", "get_weather", city="Boston")]}
    llm.script([Reply.structured(written), Reply.structured(fixed)])
    strict = asked("plan", "Weather in Boston", "--json")
    assert strict.code == 0, strict.stderr
    assert strict.json()["llmCalls"] == 2 and strict.json()["changes"] == []
    assert "units" in str(llm.requests[-1]["messages"][-1]["content"])


@pytest.mark.parametrize("plan_format", PLAN_FORMATS)
def test_the_agent_run_carries_and_prints_the_changes(
    asked: Cli, llm: FakeOpenAIServer, plan_format: str
) -> None:
    """``toolplan run "QUERY"`` (the agent graph): each plan version carries what the format
    rules changed, and it is printed as the plan is made; nothing for a plan as written."""
    asked.env["TOOLPLAN_PLAN_FORMAT"] = plan_format
    fahrenheit = CASES[-1]
    answer = Reply.structured({"action": "answer", "answer": "71.6 °F in Boston."})
    llm.script([reply(plan_format, fahrenheit.plan()), answer])
    plain = asked("run", fahrenheit.query, "--json")
    assert plain.code == 0, plain.stderr
    assert [p["changes"] for p in plain.json()["plans"]] == [[]]

    # the same plan written loosely: "forEach": null (JSON), the tool's name respelled (Python)
    if plan_format == "json":
        loose = Reply.structured(
            {**fahrenheit.plan(), "steps": [{**fahrenheit.steps[0], "forEach": None}]}
        )
        rule, line = "nulls", "rewrite nulls: step 'w' forEach null → dropped"
    else:
        loose = Reply.content('w = getWeather(city="Boston", units="imperial")')
        rule, line = "tool_names", "rewrite tool_names: "
    llm.script([loose, answer])
    changed = asked("run", fahrenheit.query, "--json", "--no-reuse")
    assert changed.code == 0, changed.stderr
    (version,) = changed.json()["plans"]
    assert [c["rule"] for c in version["changes"]] == [rule]
    llm.script([loose, answer])
    printed = asked("run", fahrenheit.query, "--no-reuse")
    assert printed.code == 0 and line in printed.stderr, printed.stderr
