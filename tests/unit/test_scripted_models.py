"""Models that plan and answer without a server (``toolplan.planning.scripted``, ``.offline``):
``TestModel`` (``TOOLPLAN_MODEL=test``) writes a valid plan from the catalog and the request, and
``FunctionModel`` answers with a function of the user's; both through the real planning and
agent graphs, streamed as a model server streams."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from typing_extensions import TypedDict

from toolplan import AsyncToolplan, FunctionModel, ModelRequest, PlanDeclined, TestModel, Toolplan
from toolplan.config import Settings
from toolplan.plan_format.plan import parse_plan
from toolplan.planning.offline import offline_plan
from toolplan.planning.progress import PlanningEvent
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

BLOG = "Create author Alice with email alice@test.com, then a blog by Alice titled Hello"


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"TOOLPLAN_STORE": f"sqlite:///{tmp_path / 'tp.db'}", **env})


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            BLOG,
            [
                ("author", "createAuthor", {"name": "Alice", "email": "alice@test.com"}),
                (
                    "blog",
                    "createBlog",
                    {"authorId": "{{author._id}}", "title": "Hello", "content": "content"},
                ),
            ],
        ),
        ("What is the weather in Paris?", [("weather", "get_weather", {"location": "Paris"})]),
        ("Draft 'Tips for tests'", [("draft", "createDraft", {"title": "Tips for tests"})]),
        (
            "Check the threshold 80 of cpu_usage",
            [("threshold", "check_threshold", {"metric_name": "cpu_usage", "threshold": 80})],
        ),
        ("Make me a sandwich", []),
    ],
)
def test_the_test_models_plan_is_valid_and_deterministic(
    query: str, expected: list[tuple[str, str, dict[str, Any]]]
) -> None:
    catalog = load_tool_modules(["blog", "metrics", "weather"])
    plan = offline_plan(query, catalog)
    assert plan == offline_plan(query, catalog)
    assert [(s["id"], s["tool"], s["parameters"]) for s in plan["steps"]] == expected
    if expected:
        analyze(parse_plan(plan), catalog)  # raises PlanInvalid on any problem


@pytest.mark.parametrize("plan_format", ["python", "json"])
def test_the_test_model_plans_runs_and_answers(tmp_path: Path, plan_format: str) -> None:
    # `model="test"` is TOOLPLAN_MODEL=test; the planner's setup gives it the catalog.
    with Toolplan(
        settings=settings(tmp_path, TOOLPLAN_PLAN_FORMAT=plan_format), model="test", tools=["blog"]
    ) as tp:
        planner = tp.planner_context()
        assert isinstance(planner.model, TestModel) and planner.model.catalog is tp.catalog
        outcome = tp.answer(BLOG)
    assert outcome.status == "succeeded" and outcome.llm_calls == 2
    assert [(step.id, step.tool) for step in outcome.steps] == [
        ("author", "createAuthor"),
        ("blog", "createBlog"),
    ]
    assert outcome.answer.startswith("The plan succeeded.")
    assert '"title": "Hello"' in outcome.answer
    assert outcome.usage["inputTokens"] > 0 and outcome.usage["outputTokens"] > 0


def test_a_request_no_tool_fits_is_declined(tmp_path: Path) -> None:
    with (
        Toolplan(settings=settings(tmp_path), model="test", tools=["blog"]) as tp,
        pytest.raises(PlanDeclined),
    ):
        tp.plan("Make me a sandwich")


async def test_a_function_model_is_told_what_is_asked(tmp_path: Path) -> None:
    asked: list[ModelRequest] = []

    async def answer(messages: list[BaseMessage], request: ModelRequest) -> Any:
        asked.append(request)
        assert messages == request.messages and messages[0].type == "system"
        if request.kind == "plan":
            return 'w = get_weather(location="Paris")\n'
        return f"It is {request.outputs['w']['temp']} °C in {request.outputs['w']['city']}."

    async with AsyncToolplan(
        settings=settings(tmp_path), model=FunctionModel(answer), tools=["weather"]
    ) as tp:
        outcome = await tp.answer("Weather in Paris?")
    plan, respond = asked
    assert (plan.kind, plan.request, plan.plan_format, plan.schema) == (
        "plan",
        "Weather in Paris?",
        "python",
        None,
    )
    assert plan.catalog is not None and "get_weather" in plan.catalog
    assert (respond.kind, respond.status, list(respond.outputs)) == ("respond", "succeeded", ["w"])
    assert respond.schema is not None and respond.schema["title"] == "Respond"
    assert outcome.answer == f"It is {outcome.outputs['w']['temp']} °C in Paris."


def test_a_function_models_json_plan_and_a_repair(tmp_path: Path) -> None:
    asked: list[ModelRequest] = []
    wrong = {"steps": [{"id": "w", "tool": "get_wether", "parameters": {"location": "Oslo"}}]}
    right = {"steps": [{"id": "w", "tool": "get_weather", "parameters": {"location": "Oslo"}}]}

    def answer(messages: list[BaseMessage], request: ModelRequest) -> Any:
        asked.append(request)
        return right if request.problems else wrong

    with Toolplan(
        settings=settings(tmp_path, TOOLPLAN_PLAN_FORMAT="json"),
        model=FunctionModel(answer),
        tools=["weather"],
    ) as tp:
        outcome = tp.plan("Weather in Oslo")
    assert outcome.status == "planned" and outcome.llm_calls == 2
    first, repair = asked
    assert first.plan_format == "json" and first.schema is not None and not first.problems
    assert "get_wether" in repair.problems[0]


def test_a_function_model_is_asked_afresh_for_json_on_a_python_plannings_last_attempt(
    tmp_path: Path,
) -> None:
    asked: list[ModelRequest] = []
    right = {"steps": [{"id": "w", "tool": "get_weather", "parameters": {"location": "Oslo"}}]}

    def answer(messages: list[BaseMessage], request: ModelRequest) -> Any:
        asked.append(request)
        return right if request.plan_format == "json" else 'w = get_wether(location="Oslo")\n'

    with Toolplan(
        settings=settings(tmp_path), model=FunctionModel(answer), tools=["weather"]
    ) as tp:
        outcome = tp.plan("Weather in Oslo")
    assert outcome.status == "planned" and outcome.llm_calls == 3
    assert [(r.plan_format, r.schema is None, bool(r.problems)) for r in asked] == [
        ("python", True, False),
        ("python", True, True),
        ("json", False, False),  # afresh: no Python answer or problems to repair
    ]


class _Bmi(TypedDict):
    BMI: float


@tool
def calculate_BMI(weight: float, height: float) -> _Bmi:  # NESTFUL's spelling
    """Body mass index of a weight in kg and a height in m."""
    return {"BMI": round(weight / height**2, 1)}


@tool
def generate_barcode(data: str) -> str:
    """A barcode of the text."""
    return f"|{data}|"


def test_a_nested_calls_problem_names_it_as_written_and_its_fix_reads(tmp_path: Path) -> None:
    """NESTFUL glaive-42: the repair told the model to write ``calculate_BMI_2["BMI"]``, the id
    the reader gave a call nested in an argument, which the text never says; the model wrote it
    and was told the name is not defined. The problem now says the call as written and how
    Python makes a value text; the model that writes the fix given gets a plan."""
    first = "calculate_BMI(80, 1.8)\ngenerate_barcode(str(calculate_BMI(70, 1.75)))\n"
    repairs: list[str] = []

    def answer(messages: list[BaseMessage], request: ModelRequest) -> Any:
        if not request.problems:
            return first
        said = str(messages[-1].content)
        repairs.append(said)
        fix = re.search(r"as text: (str\(.+\))$", said, re.MULTILINE)
        assert fix is not None, said
        return f"calculate_BMI(80, 1.8)\ngenerate_barcode({fix.group(1)})\n"

    with Toolplan(
        settings=settings(tmp_path),
        model=FunctionModel(answer),
        tools=[calculate_BMI, generate_barcode],
    ) as tp:
        outcome = tp.plan("Barcode the BMI of 70 kg at 1.75 m")
    (said,) = repairs
    assert "calculate_BMI_2" not in said
    assert "line 2, column 1 (generate_barcode(str(calculate_BMI(70, 1.75)))): argument" in said
    assert 'as text: str(calculate_BMI(70, 1.75)["BMI"])' in said
    assert outcome.status == "planned" and outcome.llm_calls == 2
    steps = [(s["id"], s["tool"], s["parameters"]) for s in outcome.plan["steps"]]
    assert steps[1:] == [
        ("calculate_BMI_2", "calculate_BMI", {"weight": 70, "height": 1.75}),
        ("generate_barcode", "generate_barcode", {"data": "{{calculate_BMI_2.BMI}}"}),
    ]


def test_the_answer_streams_step_by_step(tmp_path: Path) -> None:
    # The planner tells each statement as soon as it is written, before the whole answer.
    heard: list[PlanningEvent] = []
    with Toolplan(settings=settings(tmp_path), model="test", tools=["blog"]) as tp:
        tp.plan(BLOG, on_planning=heard.append)
    kinds = [event.kind for event in heard]
    assert kinds == ["planning", "step", "step", "answered", "rewritten"]
    assert [event.step["tool"] for event in heard if event.kind == "step"] == [
        "createAuthor",
        "createBlog",
    ]
