"""CLI end-to-end cases, shared by every store backend (SQLite here, MongoDB in its own module)."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

from tests.e2e.conftest import REPO, Cli

ID = {"req": re.compile(r"^req_\d{10}_[a-z0-9]+$"), "plan": re.compile(r"^plan_\d{10}_[a-z0-9]+$")}
BLOG_PLAN = str(REPO / "examples" / "blog_chain.json")


def check_run_blog_chain(cli: Cli) -> None:
    done = cli("run", "--file", BLOG_PLAN, "--json")
    assert done.code == 0, done.stderr
    result = done.json()
    assert ID["req"].match(result["requestId"]) and ID["plan"].match(result["planId"])
    assert result["status"] == "succeeded"
    assert [s["id"] for s in result["steps"]] == ["author", "blog", "comment"]
    first = result["steps"][0]
    assert set(first) >= {
        "id",
        "tool",
        "status",
        "attempts",
        "output",
        "error",
        "resolvedParameters",
        "startedAt",
        "finishedAt",
        "durationMs",
    }
    assert result["steps"][1]["resolvedParameters"]["authorId"] == first["output"]["_id"]
    assert set(result["outputs"]) == {"blog", "comment"}


def check_fail_forward(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "s1", "tool": "business_error", "parameters": {"message": "flaky api"}},
            {"id": "s2", "tool": "echo", "parameters": {"value": "ok"}},
            {"id": "s3", "tool": "echo", "parameters": {"value": "{{s1}}"}},
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 1
    result = done.json()
    assert result["status"] == "partial"
    assert [s["status"] for s in result["steps"]] == ["failed", "succeeded", "skipped"]
    assert result["steps"][2]["error"] == "skipped because dependency 's1' failed"


def check_kill_and_resume(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "first", "tool": "sleepy", "parameters": {"label": "first"}},
            {"id": "side", "tool": "sleepy", "parameters": {"label": "side"}},
            {"id": "blocked", "tool": "gate", "parameters": {"label": "{{first.label}}"}},
            {"id": "last", "tool": "echo", "parameters": {"value": "{{blocked.label}}"}},
        ]
    }
    submitted = cli("submit", "--file", cli.write_plan(plan), "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    assert submitted.json()["status"] == "planned"

    process = cli.popen("execute", plan_id, "--json")
    deadline = time.monotonic() + 30
    while not any(c["step"] == "blocked" for c in cli.calls()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the gate step never started"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)

    shown = cli("show", plan_id, "--json").json()
    status = {s["id"]: s["status"] for s in shown["execution"]["steps"]}
    assert status["first"] == "succeeded" and status["blocked"] == "running"

    cli.gate.touch()
    resumed = cli("execute", plan_id, "--json")
    assert resumed.code == 0, resumed.stderr
    result = resumed.json()
    assert result["status"] == "succeeded"
    assert result["outputs"]["last"] == "first"

    starts = [c["step"] for c in cli.calls() if c["event"] in ("start", "call")]
    assert starts.count("first") == 1 and starts.count("side") == 1  # finished: never called again
    assert starts.count("blocked") == 2  # the interrupted step runs again, at least once...
    keys = {c["key"] for c in cli.calls() if c["step"] == "blocked"}
    assert keys == {f"{plan_id}:blocked"}  # ...with the same idempotency key

    before = len(cli.calls())
    again = cli("execute", plan_id, "--json")
    assert again.code == 0 and again.json() == result
    assert len(cli.calls()) == before  # a finished plan calls no tool


def read_json_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]
