"""``python -m bench.nestful`` end to end, in its own process, on two samples of a stand-in data
copy, against a scripted OpenAI-compatible server: every contestant asked in its own request
shape, in chunks whose order rotates, every answer scored and summarized."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench.nestful.prompting import SYSTEM

from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.nestful_copy import BUS, RESTAURANT, write_copy

pytestmark = [pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]

PYTHON_PLANS = {
    BUS["input"]: (
        'bus = Buses_FindBus(origin="Boston", destination="New York", departure_date="2024-05-01")\n'
        'ticket = Buses_BuyBusTicket(origin=bus["origin"], destination=bus["destination"], '
        'departure_date="2024-05-01", departure_time=bus["departure_time"], group_size="2")\n'
    ),
    RESTAURANT["input"]: (
        'place = Restaurants_FindRestaurants(city="Paris", cuisine="sushi")\n'
        'Restaurants_ReserveRestaurant(restaurant_name=place["restaurant_name"], city="Paris", '
        'time="19:00", party_size="2")\n'
    ),
}

JSON_BUS_PLAN = {
    "reasoning": "find, then buy",
    "steps": [
        {
            "id": "find",
            "tool": "Buses_FindBus",
            "parameters": BUS["output"][0]["arguments"],
            "dependsOn": [],
            "confidence": 0.9,
        },
        {
            "id": "buy",
            "tool": "Buses_BuyBusTicket",
            "parameters": {
                "origin": "{{find.origin}}",
                "destination": "{{find.destination}}",
                "departure_date": "2024-05-01",
                "departure_time": "{{find.departure_time}}",
                "group_size": "2",
            },
            "dependsOn": [],
            "confidence": 0.9,
        },
    ],
    "outputSteps": ["buy"],
}


def _as_offered(gold: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gold in the form NESTFUL's prompt asks for: offered names, ``$var_N`` labels."""
    calls = []
    for call in gold[:-1]:
        text = json.dumps(call["arguments"]).replace("$var", "$var_")
        calls.append(
            {
                "name": call["name"].replace(".", "_"),
                "arguments": json.loads(text),
                "label": "$" + call["label"].replace("var", "var_"),
            }
        )
    return calls


def _bench_env(server: FakeOpenAIServer, tmp_path: Path) -> dict[str, str]:
    """``bench.nestful``'s environment against ``server``, on the stand-in data copy, with no
    retries or repairs and the default plan format."""
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "unused",
        "TOOLPLAN_MODEL": "openai:gpt-4o-mini",
        "TOOLPLAN_STRUCTURED_METHOD": "json_schema",
        "TOOLPLAN_LLM_RETRIES": "0",
        "TOOLPLAN_MAX_REPAIRS": "0",
        "NESTFUL_DATA": str(write_copy(tmp_path / "copy")),
    }
    env.pop("TOOLPLAN_PLAN_FORMAT", None)
    return env


def test_a_run_on_two_samples(tmp_path: Path) -> None:
    asked: list[str] = []

    def answer(request: dict[str, Any]) -> Reply:
        messages = request["messages"]
        user = next(str(m["content"]) for m in messages if m["role"] == "user")
        sample = BUS if BUS["input"] in user else RESTAURANT
        if "response_format" in request:
            asked.append("json")
            if sample is RESTAURANT:  # declines: no answer
                return Reply.structured({"reasoning": "no tool", "steps": [], "outputSteps": []})
            return Reply.structured(JSON_BUS_PLAN)
        if request.get("tools"):
            asked.append("native")
            first = sample["output"][0]
            return Reply.tool_call(first["name"].replace(".", "_"), first["arguments"])
        if messages[0]["content"] == SYSTEM:
            asked.append("nestful")
            return Reply.content(f"```json\n{json.dumps(_as_offered(sample['output']))}\n```")
        asked.append("python")
        return Reply.content(f"```python\n{PYTHON_PLANS[sample['input']]}```")

    out = tmp_path / "out"
    argv = [sys.executable, "-m", "bench.nestful", "--splits", "sgd", "--chunk", "1"]
    with FakeOpenAIServer(api_key="unused") as server:
        server.script([answer] * 12)
        env = _bench_env(server, tmp_path)
        done = subprocess.run(
            [*argv, "--out", out], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        # an interrupted run, its last request never answered, goes on where it stopped
        whole = (out / "rows.jsonl").read_text().splitlines()
        (out / "rows.jsonl").write_text("\n".join(whole[:-1]) + "\n")
        again = subprocess.run(
            [*argv, "--out", out, "--resume"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert again.returncode == 0, again.stderr
    resumed = (out / "rows.jsonl").read_text().splitlines()
    assert resumed[:-1] == whole[:-1] and len(resumed) == len(whole)
    last, lost = json.loads(resumed[-1]), json.loads(whole[-1])
    assert (last["id"], last["contestant"], last["answer"]) == (
        lost["id"],
        lost["contestant"],
        lost["answer"],
    )
    # chunks of one sample; the second chunk starts where the first one's order went on
    first_run = ["python", "json", "nestful", "native", "json", "nestful", "native", "python"]
    assert asked == [*first_run, "python"]  # the resumed run asked only what was missing

    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    samples = [r for r in rows if r["type"] == "sample"]
    assert [(s["id"], s["validGold"]) for s in samples] == [("sgd-0", True), ("sgd-1", True)]
    marks = {
        (r["id"], r["contestant"]): (r["score"]["full"], r["score"]["partial"], r["answer"] is None)
        for r in rows
        if r["type"] == "answer"
    }
    for sample in ("sgd-0", "sgd-1"):
        assert marks[sample, "python"] == (True, 1.0, False)
        assert marks[sample, "nestful"] == (False, 0.0, True)  # a fence: NESTFUL's parse error
        assert marks[sample, "nestful-lenient"] == (True, 1.0, False)
        assert marks[sample, "native"] == (False, 0.5, False)
    assert marks["sgd-0", "json"] == (True, 1.0, False)
    assert marks["sgd-1", "json"] == (False, 0.0, True)
    declined = next(r for r in rows if r.get("contestant") == "json" and r["id"] == "sgd-1")
    assert declined["errorKind"] == "PlanDeclined"
    planned = next(r for r in rows if r.get("contestant") == "python" and r["id"] == "sgd-0")
    # what the model wrote, as it wrote it (the planner's listener)
    assert planned["trace"] == [{"steps": ["Buses_FindBus", "Buses_BuyBusTicket"], "read": 2}]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["meta"]["data"] == "nestful-wrapper==0.1.7"
    table = summary["splits"]["sgd"]["all"]
    assert table["python"]["full"] == 2 and table["json"]["noAnswer"] == 1
    assert table["nestful"]["nestfulScorer"]["parseErrors"] == 2
    assert table["nestful-lenient"]["nestfulScorer"]["full"] == 1.0
    assert table["python"]["nestfulScorer"]["full"] == 1.0  # relabelled for NESTFUL's scorer
    text = (out / "summary.md").read_text()
    assert "| toolplan, Python plan (default) | 2/2 (100.0%) | 1.000 |" in text
    assert "**sgd**, gold valid for toolplan (2):" in text
    assert again.stdout == text + "\n"  # the summary of the whole run, resumed part included


def test_a_prompt_the_server_refuses_is_no_answer_and_the_run_goes_on(tmp_path: Path) -> None:
    """NESTFUL's prompt, with its three examples and eight tools, exceeded the 1.5B model's
    8,192-token context on one sample; the server's 400 ended the whole run."""
    too_long = "request (8200 tokens) exceeds the available context size (8192 tokens)"

    def answer(request: dict[str, Any]) -> Reply:
        messages = request["messages"]
        user = next(str(m["content"]) for m in messages if m["role"] == "user")
        sample = BUS if BUS["input"] in user else RESTAURANT
        if messages[0]["content"] == SYSTEM:
            if sample is BUS:
                return Reply.error(400, too_long, type="exceed_context_size_error")
            return Reply.content(json.dumps(_as_offered(sample["output"])))
        return Reply.content(f"```python\n{PYTHON_PLANS[sample['input']]}```")

    out = tmp_path / "out"
    argv = [sys.executable, "-m", "bench.nestful", "--splits", "sgd", "--chunk", "1"]
    with FakeOpenAIServer(api_key="unused") as server:
        server.script([answer] * 4)
        done = subprocess.run(
            [*argv, "--only", "python,nestful", "--out", out],
            cwd=REPO,
            env=_bench_env(server, tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    answers = {(r["id"], r["contestant"]): r for r in rows if r["type"] == "answer"}
    assert len(answers) == 6  # both samples, every contestant: the run went on
    refused = [r for r in answers.values() if r.get("errorKind") == "RequestRefused"]
    assert {r["contestant"] for r in refused} == {"nestful", "nestful-lenient"}
    assert all(r["answer"] is None and "8192 tokens" in r["error"] for r in refused)
    assert "no answer (RequestRefused)" in done.stderr
    table = json.loads((out / "summary.json").read_text())["splits"]["sgd"]["all"]
    assert table["nestful-lenient"]["noAnswer"] == 1 and table["python"]["full"] == 2
