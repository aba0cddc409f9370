"""The plan reader keeps what the model wrote, through the real ChatOpenAI client and the scripted
server, streamed and not (issue 50): nested calls, conversions, asked repeats, every fenced
block, tool names that are not Python names; and through the CLI: problems said in Python, and
hostile plan files refused with a line and a column (exit 2), never an internal error."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import ATTEMPTS
from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.pipeline.planning import create_plan
from toolplan.planning.context import PlannerContext
from toolplan.planning.planner import PlanningFailed

pytestmark = [pytest.mark.e2e]

TOOLS = "tests.support.reader_tools"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.setenv("TOOLPLAN_TOOLS", TOOLS)
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "python")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    monkeypatch.delenv("TOOLPLAN_STRUCTURED_METHOD", raising=False)
    with FakeOpenAIServer(api_key="sk-test") as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        yield llm


def planner(tmp_path: Path, streamed: bool) -> PlannerContext:
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    ctx = Toolplan(settings=settings).planner_context()
    ctx.stream = streamed
    return ctx


def answered(text: str, streamed: bool) -> Reply:
    reply = Reply.content(text)
    return reply.with_(pieces=max(1, len(text) // 4)) if streamed else reply


STREAMED = pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])


@STREAMED
async def test_a_nested_read_written_twice_is_one_step(
    server: FakeOpenAIServer, tmp_path: Path, streamed: bool
) -> None:
    text = (
        '```python\npace = calculate_pace(calculate_route(start="NY", end="Boston")'
        '["distance"], calculate_route(start="NY", end="Boston")["time"])\n```'
    )
    server.script([answered(text, streamed)])
    outcome = await create_plan(
        "The pace of the route from NY to Boston", planner(tmp_path, streamed)
    )
    assert [s["tool"] for s in outcome.plan["steps"]] == ["calculate_route", "calculate_pace"]
    assert outcome.llm_calls == 1


@STREAMED
async def test_asked_repeats_and_conversions_are_planned_as_written(
    server: FakeOpenAIServer, tmp_path: Path, streamed: bool
) -> None:
    text = (
        "roll_die(sides=20)\nroll_die(sides=20)\nroll_die(sides=20)\n"
        'bmi = calculate_bmi(weight=70, height=1.75)\nencrypt_data(data=str(bmi["BMI"]))\n'
    )
    server.script([answered(text, streamed)])
    outcome = await create_plan(
        "Roll a twenty-sided die three times, and encrypt my BMI (70 kg, 1.75 m)",
        planner(tmp_path, streamed),
    )
    tools = [s["tool"] for s in outcome.plan["steps"]]
    assert tools == ["roll_die"] * 3 + ["calculate_bmi", "encrypt_data"]
    assert outcome.plan["steps"][4]["parameters"] == {"data": "{{bmi.BMI}}"}


@STREAMED
async def test_every_fenced_block_is_planned(
    server: FakeOpenAIServer, tmp_path: Path, streamed: bool
) -> None:
    text = (
        "First:\n```python\nroll_die(sides=4)\n```\nThen:\n```python\nroll_die(sides=6)\n```\n"
        "And:\n```python\nroll_die(sides=8)\n```\nThat is all."
    )
    server.script([answered(text, streamed)])
    outcome = await create_plan("Roll a d4, a d6 and a d8", planner(tmp_path, streamed))
    assert [s["parameters"]["sides"] for s in outcome.plan["steps"]] == [4, 6, 8]


@STREAMED
async def test_conflicting_blocks_go_back_to_the_model_saying_so(
    server: FakeOpenAIServer, tmp_path: Path, streamed: bool
) -> None:
    twice = "```python\nr = roll_die(sides=4)\n```\nor:\n```python\nr = roll_die(sides=6)\n```"
    server.script([answered(twice, streamed), answered("r = roll_die(sides=6)\n", streamed)])
    outcome = await create_plan("Roll a d6", planner(tmp_path, streamed))
    assert outcome.llm_calls == 2 and outcome.plan["steps"][0]["parameters"] == {"sides": 6}
    repair = server.requests[1]["messages"][-1]["content"]
    assert "its blocks conflict" in repair


@STREAMED
async def test_tools_whose_names_are_not_python_are_called_by_alias(
    server: FakeOpenAIServer, tmp_path: Path, streamed: bool
) -> None:
    server.script(
        [answered('Real_Time_Search(q="laptops")\nweather_current(city="Oslo")\n', streamed)]
    )
    outcome = await create_plan("Search laptops; the weather in Oslo", planner(tmp_path, streamed))
    assert [s["tool"] for s in outcome.plan["steps"]] == ["Real-Time_Search", "weather.current"]
    system = next(m["content"] for m in server.requests[0]["messages"] if m["role"] == "system")
    assert "def Real_Time_Search(" in system and "def weather_current(" in system


async def test_a_refused_statement_goes_back_once_with_no_follow_on_problem(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    bad = 'r = calculate_route(start="a", end="b")\nd = r["distance"] * 2\ncalculate_pace(distance=d, time=1)\n'
    server.script([answered(bad, True)] * ATTEMPTS)
    with pytest.raises(PlanningFailed) as failed:
        await create_plan("Twice the distance", planner(tmp_path, True))
    repair = server.requests[1]["messages"][-1]["content"]
    assert "line 2, column 5: arithmetic" in repair and "not defined" not in repair
    assert failed.value.llm_calls == ATTEMPTS


# -- through the CLI --------------------------------------------------------------------------


def _file(cli: Cli, text: str, name: str = "plan.py") -> str:
    path = Path(cli.tmp) / name
    path.write_text(text)
    return str(path)


def test_problems_found_after_reading_are_said_in_python(cli: Cli) -> None:
    cli.env["TOOLPLAN_TOOLS"] = f"{TOOLS},blog"
    text = (
        'bolt = calculate_route(start="a", end="b")\n'
        'encrypt_data(data=bolt["stock"])\n'
        'roll_die(sides="six")\n'
    )
    done = cli("run", "--file", _file(cli, text), "--json")
    assert done.code == 2, done.stderr
    error = done.json()["error"]
    assert "line 2, column 1 (encrypt_data(data=bolt['stock'])): " in error
    assert 'bolt["stock"]' in error and "{{bolt.stock}}" not in error
    assert "line 3, column 1 (roll_die(sides='six')): argument 'sides'" in error
    assert "steps[" not in error


HOSTILE = {
    "squares": "a0 = 7\n"
    + "".join(f"a{i + 1} = a{i} * a{i}\n" for i in range(23))
    + "roll_die(sides=a23)\n",
    "doubling": 's0 = "xxxxxxxxxx"\n'
    + "".join(f"s{i + 1} = s{i} + s{i}\n" for i in range(27))
    + "encrypt_data(data=s27)\n",
    "calls": "roll_die(sides=6)\n" * 16_000,
    "overflow": "calculate_pace(distance=" + "9" * 400 + " * 1.5, time=1)\n",
    "nul": "roll_die(sides=\x001)\n",
    "minus": "roll_die(sides=" + "-" * 100_000 + "1)\n",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_plan_file_is_refused_with_its_place(cli: Cli, case: str) -> None:
    cli.env["TOOLPLAN_TOOLS"] = TOOLS
    started = time.monotonic()
    done = cli("run", "--file", _file(cli, HOSTILE[case]), "--json")
    assert done.code == 2, done.stdout + done.stderr
    error = done.json()["error"]
    assert "line " in error and "internal error" not in error, error
    assert cli.calls() == []
    assert time.monotonic() - started < 120  # a hang guard, not a pace (bench measures it)


def test_reading_cost_is_bounded_in_a_process_of_its_own(cli: Cli) -> None:
    """CPU and memory of refusing the hostile files, above the CLI refusing a one-line plan,
    measured in the child processes themselves."""
    import resource

    cli.env["TOOLPLAN_TOOLS"] = TOOLS

    def cost(text: str) -> tuple[float, int]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = cli.subprocess("run", "--file", _file(cli, text, "cost.py"), "--json")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert done.code == 2
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return cpu, after.ru_maxrss

    base_cpu, _ = cost("roll_die(sides=nope)\n")
    for case in ("squares", "doubling", "calls"):
        cpu, peak_kb = cost(HOSTILE[case])
        assert cpu - base_cpu < 1.0, (case, cpu, base_cpu)
        assert peak_kb < 600 * 1024, (case, peak_kb)  # the CLI's own footprint is ~150-250 MB


def test_json_plans_are_not_read_as_python(cli: Cli) -> None:
    plan = {"steps": [{"id": "r", "tool": "roll_die", "parameters": {"sides": 6}}]}
    cli.env["TOOLPLAN_TOOLS"] = TOOLS
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "succeeded"


def test_a_model_that_never_stops_writing_meets_the_planning_deadline(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """A character every 0.2 s never trips the silence timeout; the overall deadline stops it."""
    import threading

    cli_llm.env.update(
        {
            "TOOLPLAN_PLAN_FORMAT": "python",
            "TOOLPLAN_TOOLS": TOOLS,
            "TOOLPLAN_LLM_TIMEOUT": "60",
            "TOOLPLAN_PLANNING_DEADLINE": "2",
        }
    )
    text = "# " + "thinking " * 400 + "\nroll_die(sides=6)\n"

    def slowly(index: int) -> None:
        threading.Event().wait(0.2)  # the model's pace: what the deadline is about

    llm.script([Reply.content(text).with_(pieces=len(text), hold=slowly)])
    started = time.monotonic()
    done = cli_llm("plan", "Roll a d6", "--json")
    assert done.code == 3, done.stdout + done.stderr
    assert "planning deadline (TOOLPLAN_PLANNING_DEADLINE)" in done.json()["error"]
    assert time.monotonic() - started < 60  # well before the answer's 600 s
    assert cli_llm("list", "--json").json()["plans"] == []


def test_other_requests_answer_while_the_api_refuses_a_hostile_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's answer is read off the API's event loop: a client asking for the tools is
    answered in under a second while another's runQuery is being refused."""
    import threading

    from tests.e2e.api_support import server_factory

    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "python")
    monkeypatch.setenv("TOOLPLAN_MAX_REPAIRS", "0")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    hostile = HOSTILE["squares"] * 40 + HOSTILE["calls"]
    with FakeOpenAIServer(api_key="sk-test") as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        llm.script([Reply.content(hostile).with_(pieces=400)])
        factory = server_factory(tmp_path)
        server = next(factory)()
        planner, prober = server.client(), server.client()
        outcome: dict[str, Any] = {}

        def plan() -> None:
            outcome["body"] = planner.gql(
                "mutation($q: String!) { runQuery(query: $q) { requestId } }",
                {"q": "Roll a die"},
                timeout=300,  # the refusal reads 16,000 calls: slow on a busy machine, not stuck
            )

        running = threading.Thread(target=plan)
        running.start()
        latencies = []
        try:
            while running.is_alive():
                began = time.monotonic()
                prober.data("{ tools { name } }")
                latencies.append(time.monotonic() - began)
        finally:
            running.join()
            planner.close()
            prober.close()
            factory.close()
        assert outcome["body"]["errors"], outcome["body"]
        assert latencies and max(latencies) < 1.0, latencies


def test_toolplan_tools_shows_each_alias(cli: Cli) -> None:
    cli.env["TOOLPLAN_TOOLS"] = TOOLS
    listed = cli("tools")
    assert listed.code == 0, listed.stderr
    assert "Real-Time_Search (Python: Real_Time_Search)" in " ".join(listed.stdout.split())
    as_json = {t["name"]: t for t in cli("tools", "--json").json()["tools"]}
    assert as_json["weather.current"]["pythonName"] == "weather_current"
    assert as_json["roll_die"]["pythonName"] == "roll_die"
    one = cli("tools", "Real-Time_Search")
    assert "in a Python plan: Real_Time_Search" in one.stdout
