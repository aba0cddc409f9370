"""The BFCL bench at its smallest size, against a scripted OpenAI-compatible server.

Every answer goes through the official checker from ``bfcl-eval`` (installed by
``scripts/setup.sh``), so these tests fail if a right plan is scored wrong, a wrong one right,
or dotted names are not mapped back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.bfcl.__main__ import main
from bench.bfcl.checker import check, reference_answer
from bench.bfcl.data import CATEGORIES, load_category, sample
from bench.bfcl.functions import Toolbox, to_json_schema
from bench.bfcl.lenient import read_calls

from tests.support.fake_openai import FakeOpenAIServer, Reply


def _entry(category: str, entry_id: str) -> Any:
    return next(e for e in load_category(category) if e.id == entry_id)


def test_the_official_checker_tells_right_from_wrong() -> None:
    factorial = _entry("simple_python", "simple_python_1")  # math.factorial(number=5)
    assert check(factorial, [{"math.factorial": {"number": 5}}]).valid
    wrong = check(factorial, [{"math.factorial": {"number": 6}}])
    assert not wrong.valid and wrong.error_type == "value_error:others"
    # the API-safe name is not BFCL's: unmapped, it is wrong
    assert not check(factorial, [{"math_factorial": {"number": 5}}]).valid
    assert not check(factorial, None).valid and not check(factorial, []).valid

    spotify = _entry("parallel", "parallel_0")  # two spotify.play calls, any order
    both = reference_answer(spotify)
    assert len(both) == 2 and check(spotify, both[::-1]).valid
    assert not check(spotify, both[:1]).valid

    irrelevant = load_category("irrelevance")[0]
    assert check(irrelevant, []).valid and check(irrelevant, None).valid
    assert not check(irrelevant, [{"determine_body_mass_index": {"weight": 1, "height": 2}}]).valid


def test_samples_are_seeded_per_category() -> None:
    assert set(CATEGORIES) >= {"simple_python", "multiple", "parallel", "live_simple"}
    multiple = sample(load_category("multiple"), 5, seed=3)
    assert [e.id for e in multiple] == [e.id for e in sample(load_category("multiple"), 5, seed=3)]
    assert [e.id for e in multiple] != [e.id for e in sample(load_category("multiple"), 5, seed=4)]
    parallel = sample(load_category("parallel"), 5, seed=3)
    assert [e.id.split("_")[-1] for e in multiple] != [e.id.split("_")[-1] for e in parallel]


def test_function_docs_become_json_schema_under_api_names() -> None:
    schema = to_json_schema(
        {
            "type": "dict",
            "properties": {
                "point": {"type": "tuple", "items": {"type": "float"}},
                "opts": {"type": "dict", "properties": {"x": {"type": "any"}}, "optional": True},
            },
        }
    )
    assert schema["type"] == "object"
    assert schema["properties"]["point"] == {
        "type": "array",
        "items": {"type": "number", "description": " This is a float type value."},
    }
    assert schema["properties"]["opts"] == {
        "type": "object",
        "properties": {"x": {"type": "string"}},
    }
    box = Toolbox.of([{"name": "a.b", "parameters": {}}, {"name": "a_b", "parameters": {}}])
    assert box.api_names == ("a_b", "a_b_2")
    assert [box.bfcl_name(n) for n in ("a_b", "a_b_2", "a.b", "zzz")] == [
        "a.b",
        "a_b",
        "a.b",
        "zzz",
    ]
    assert box.catalog().names == ["a_b", "a_b_2"]


def test_text_replies_are_read_leniently() -> None:
    box = Toolbox.of(_entry("simple_python", "simple_python_1").functions)
    want = [{"math.factorial": {"number": 5}}]
    for text in (
        '```json\n{"name": "math_factorial", "arguments": {"number": 5}}\n```',
        '<tool_call>\n{"name": "math_factorial", "arguments": "{\\"number\\": 5}"}\n</tool_call>',
        "[math.factorial(number=5)]",
        "Here you go:\nmath.factorial(5)",
        '[{"math.factorial": {"number": 5}}]',
    ):
        assert read_calls(text, box) == want, text
    assert read_calls("The factorial of 5 is 120.", box) == []


def _server_for(plan_params: dict[str, Any], native: Reply) -> Any:
    """Planning requests (json_schema) get a plan calling math_factorial; the rest ``native``."""

    def answer(request: dict[str, Any]) -> Reply:
        if "response_format" in request:
            step = {
                "id": "fact",
                "tool": "math_factorial",
                "parameters": plan_params,
                "dependsOn": [],
                "confidence": 0.9,
            }
            return Reply.structured({"reasoning": "r", "steps": [step], "outputSteps": ["fact"]})
        return native

    return answer


def _run_one(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str
) -> int:
    """``python -m bench.bfcl`` on ``simple_python_1`` against ``server``, writing to
    ``tmp_path``, with ``env`` on top of the model settings."""
    settings = {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "unused",
        "TOOLPLAN_MODEL": "openai:gpt-4o-mini",
        "TOOLPLAN_STRUCTURED_METHOD": "json_schema",
        "TOOLPLAN_LLM_RETRIES": "0",
    }
    for name, value in {**settings, **env}.items():
        monkeypatch.setenv(name, value)
    return main(
        [
            "--categories",
            "simple_python",
            "--ids",
            "simple_python_1",
            "--only",
            "toolplan,native,text",
            "--out",
            str(tmp_path),
        ]
    )


@pytest.mark.parametrize(
    ("plan_number", "native", "expected"),
    [
        # right plan; the native reply is a fenced JSON text: no tool call, readable text
        (
            5,
            Reply.content('```json\n{"name": "math_factorial", "arguments": {"number": 5}}\n```'),
            {"toolplan": True, "native": False, "text": True},
        ),
        # wrong plan; a real tool call, with the API-safe name mapped back
        (
            6,
            Reply.tool_call("math_factorial", {"number": 5}),
            dict.fromkeys(("toolplan", "native", "text"), True) | {"toolplan": False},
        ),
    ],
)
@pytest.mark.usefixtures("json_plans")  # a model scripted to answer JSON
def test_a_run_at_the_smallest_size(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    plan_number: int,
    native: Reply,
    expected: dict[str, bool],
) -> None:
    with FakeOpenAIServer(api_key="unused") as server:
        server.script([_server_for({"number": plan_number}, native)] * 2)
        # the "toolplan" contestant is the JSON planner whatever the default format is
        code = _run_one(
            server, monkeypatch, tmp_path, TOOLPLAN_MAX_REPAIRS="0", TOOLPLAN_PLAN_FORMAT="python"
        )
        requests = server.requests
    assert code == 0
    planning, asked = requests
    assert planning["response_format"]["type"] == "json_schema"
    assert [t["function"]["name"] for t in asked["tools"]] == ["math_factorial"]

    (row,) = [json.loads(line) for line in (tmp_path / "entries.jsonl").read_text().splitlines()]
    assert {name: row[name]["valid"] for name in expected} == expected
    assert row["toolplan"]["calls"] == [{"math.factorial": {"number": plan_number}}]
    summary = json.loads((tmp_path / "summary.json").read_text())
    counts = summary["categories"]["simple_python"]
    assert {name: counts[name]["correct"] for name in expected} == {
        name: int(ok) for name, ok in expected.items()
    }
    assert counts["set"] == "tuning"
    assert "| simple_python | tuning | 1 |" in (tmp_path / "summary.md").read_text()


def test_a_runaway_answer_is_a_wrong_entry_not_the_end_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that loops is stopped while it streams; the bench scores that entry wrong, with
    what it spent, and goes on (only an unreachable server ends a run)."""
    step = {
        "tool": "math_factorial",
        "parameters": {"number": 5},
        "dependsOn": [],
        "confidence": 0.9,
    }
    looping = {  # a model looping inside a string: no step ever ends
        "reasoning": "r" + ' /FI "IMAGENAME ne opera-stable-dev"' * 80,
        "steps": [{**step, "id": "f0"}],
        "outputSteps": ["f0"],
    }
    with FakeOpenAIServer(api_key="unused") as server:
        server.script(
            [
                Reply.structured(looping).with_(pieces=200, finish_reason="length"),
                Reply.structured(looping).with_(pieces=200, finish_reason="length"),
                Reply.tool_call("math_factorial", {"number": 5}),
            ]
        )
        code = _run_one(server, monkeypatch, tmp_path)
        asked = len(server.requests)
    assert code == 0 and asked == 3  # two planning calls, each stopped; then the native
    (row,) = [json.loads(line) for line in (tmp_path / "entries.jsonl").read_text().splitlines()]
    plan = row["toolplan"]
    assert plan["valid"] is False and plan["calls"] is None
    assert plan["errorKind"] == "LLMOutputRepeating" and "times in a row" in plan["error"]
    assert 0 < plan["stoppedAfterTokens"] < 60 and plan["llmCalls"] == 2
    assert row["native"]["valid"] is True
    answers = json.loads((tmp_path / "summary.json").read_text())["categories"]["simple_python"][
        "toolplan"
    ]["answers"]
    assert answers["cutOff"] == 1


def test_a_declined_request_is_counted_and_wrong_where_a_call_was_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declined = {"reasoning": "no tool computes factorials", "steps": [], "outputSteps": []}
    with FakeOpenAIServer(api_key="unused") as server:
        server.script(
            [Reply.structured(declined), Reply.tool_call("math_factorial", {"number": 5})]
        )
        code = _run_one(server, monkeypatch, tmp_path)
        asked = len(server.requests)
    assert code == 0 and asked == 2  # declined at once: no repair round
    (row,) = [json.loads(line) for line in (tmp_path / "entries.jsonl").read_text().splitlines()]
    assert row["toolplan"]["valid"] is False and row["toolplan"]["errorKind"] == "PlanDeclined"
    counts = json.loads((tmp_path / "summary.json").read_text())["categories"]["simple_python"]
    assert counts["toolplan"]["declined"] == 1
    assert (
        "| simple_python | toolplan (JSON plan) | 1 | 0 |" in (tmp_path / "summary.md").read_text()
    )


def test_summarize_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``--summarize rows.jsonl | head``: the reader is gone before the table is written."""
    import os
    import subprocess
    import sys

    rows = tmp_path / "entries.jsonl"
    rows.write_text("")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the first write
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.bfcl", "--summarize", str(rows)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_a_row_keeps_a_call_the_model_wrote_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planner merges no repeated step (issue 53 removed its heuristic rules): the row has
    both calls, scored as written, and no key of a change the planner made on its own."""
    step = {"tool": "math_factorial", "parameters": {"number": 5}, "dependsOn": []}
    twice = {
        "reasoning": "r",
        "steps": [{"id": "a", **step}, {"id": "b", **step}],  # the same call written twice
        "outputSteps": ["b"],
    }
    with FakeOpenAIServer(api_key="unused") as server:
        server.script([Reply.structured(twice), Reply.content("5! = 120")])
        assert _run_one(server, monkeypatch, tmp_path) == 0
    (row,) = [json.loads(line) for line in (tmp_path / "entries.jsonl").read_text().splitlines()]
    assert row["toolplan"]["calls"] == [{"math.factorial": {"number": 5}}] * 2
    assert row["toolplan"]["valid"] is False
    assert "mergedSteps" not in row["toolplan"]


def test_the_python_planner_and_bfcls_prompting_mode_are_contestants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--only python,prompting``: toolplan's planner writing Python, and BFCL's own prompting
    mode (its system prompt, its decoder), scored by the same checker, with their costs."""

    def answer(request: dict[str, Any]) -> Reply:
        system = request["messages"][0]["content"]
        if "list of functions in json format" in system:  # BFCL's prompt
            return Reply.content("[math.factorial(number=5)]", usage=(300, 9))
        assert "tools" not in request and "response_format" not in request
        assert "def math_factorial(number: int)" in system  # the catalog as Python
        return Reply.content("fact = math_factorial(number=6)", usage=(200, 8))

    with FakeOpenAIServer(api_key="unused") as server:
        server.script([answer, answer])
        for name, value in {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "unused",
            "TOOLPLAN_MODEL": "openai:gpt-4o-mini",
            "TOOLPLAN_LLM_RETRIES": "0",
            "TOOLPLAN_MAX_REPAIRS": "0",
        }.items():
            monkeypatch.setenv(name, value)
        code = main(
            [
                "--categories",
                "simple_python",
                "--ids",
                "simple_python_1",
                "--only",
                "python,prompting",
                "--out",
                str(tmp_path),
            ]
        )
    assert code == 0
    (row,) = [json.loads(line) for line in (tmp_path / "entries.jsonl").read_text().splitlines()]
    assert row["python"]["calls"] == [{"math.factorial": {"number": 6}}]
    assert row["python"]["valid"] is False  # 6! is not what was asked
    assert row["prompting"]["calls"] == [{"math.factorial": {"number": 5}}]
    assert row["prompting"]["valid"] is True
    table = (tmp_path / "summary.md").read_text()
    assert "| category | set | n | toolplan (Python plan) | BFCL prompting mode |" in table
    assert "| simple_python | 8 / 200 / " in table and " | 9 / 300 / " in table
