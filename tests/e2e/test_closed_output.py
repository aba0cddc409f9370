"""Output is never part of a run: a reader that goes away (``toolplan run | head -2``, or
``2>&1 | head``) changes neither what the run does nor what it records, and the CLI exits quietly
with the run's own exit code, as ``git log | head`` does.

Every case is ordered by events, never by timing. A pipe whose read end is closed before the CLI
starts fails every write. A reader that leaves after some lines must leave while the CLI still
has something to write: on stdout, the pipe holds less than the result table (its capacity is set
to one page), so the CLI is blocked writing when the reader closes; on stderr, the plan's first
step waits for a gate file that the test creates only after closing the pipe.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli_cases import BLOG_PLAN
from tests.e2e.conftest import Cli

pytestmark = [pytest.mark.e2e]

PLAN_ID = re.compile(r"plan_\d{9,11}_[a-z0-9]+")
NOISE = ("Traceback", "Exception ignored", "BrokenPipeError", "Broken pipe", "error:")
"""What a reader that went away must never make the CLI print: a traceback, the interpreter's
complaint at shutdown, or an error message (nothing went wrong with the run)."""
BLOG_STEPS = ["author", "blog", "comment"]


def _spawn(cli: Cli, *args: str, stdout: int, stderr: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        cli.argv(*args), env=cli.env, cwd=cli.tmp, stdout=stdout, stderr=stderr
    )
    for fd in (stdout, stderr):
        if fd >= 0:  # our copy of a pipe end given to the child: only the child may hold it
            os.close(fd)
    return process


def _reader_gone() -> int:
    """The write end of a pipe whose reader has already left: every write to it fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


def _read_lines(fd: int, count: int) -> bytes:
    """Exactly ``count`` lines, a byte at a time (no read-ahead past them)."""
    data = b""
    while data.count(b"\n") < count:
        chunk = os.read(fd, 1)
        assert chunk, f"the CLI closed its output after {data!r}"
        data += chunk
    return data


def _finish(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    """Wait for the CLI to exit; its exit code and what it wrote on the one pipe still read."""
    try:
        out, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # it hung (as it could before this fix): leave nothing behind
        process.kill()
        process.communicate()
        raise
    return process.returncode, (out or err or b"").decode()


def _quiet(text: str) -> None:
    for noise in NOISE:
        assert noise not in text, f"{noise!r} in the CLI's output:\n{text}"


def _stored(cli: Cli, plan_id: str) -> tuple[str, dict[str, str]]:
    """The execution's status and each step's, as ``toolplan show --json`` reads them."""
    shown = cli("show", plan_id, "--json")
    assert shown.code == 0, shown.stderr
    execution: dict[str, Any] = shown.json()["execution"]
    return execution["status"], {step["id"]: step["status"] for step in execution["steps"]}


def _only_plan_id(text: str) -> str:
    found = set(PLAN_ID.findall(text))
    assert len(found) == 1, text
    return found.pop()


def test_stdout_closed_before_the_run_the_plan_still_runs_and_exits_0(cli: Cli) -> None:
    process = _spawn(cli, "run", "--file", BLOG_PLAN, stdout=_reader_gone(), stderr=subprocess.PIPE)
    code, stderr = _finish(process)

    assert code == 0, stderr
    _quiet(stderr)
    assert "✓ comment (createComment) succeeded" in stderr  # progress still reaches stderr
    assert _stored(cli, _only_plan_id(stderr)) == (
        "succeeded",
        dict.fromkeys(BLOG_STEPS, "succeeded"),
    )


def test_json_on_a_closed_stdout_exits_with_the_runs_code(cli: Cli) -> None:
    submitted = cli("submit", "--file", BLOG_PLAN, "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    process = _spawn(
        cli, "execute", plan_id, "--json", stdout=_reader_gone(), stderr=subprocess.PIPE
    )
    code, stderr = _finish(process)

    assert (code, stderr) == (0, "")
    assert _stored(cli, plan_id) == ("succeeded", dict.fromkeys(BLOG_STEPS, "succeeded"))


def test_stdout_reader_that_leaves_after_two_lines_like_head_2(cli: Cli) -> None:
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:  # pragma: no cover - Linux has it
        pytest.skip("needs F_SETPIPE_SZ (Linux) to make the pipe smaller than the output")
    # 50 steps whose outputs fill their column: a result table of several KiB, more than the
    # one-page pipe holds, so the CLI is still writing it when the reader leaves.
    steps = [
        {"id": f"s{i:02}", "tool": "echo", "parameters": {"value": f"{i:02}" + "x" * 76}}
        for i in range(50)
    ]
    plan = cli.write_plan({"steps": steps})
    read_end, write_end = os.pipe()
    capacity = fcntl.fcntl(write_end, set_size, 4096)
    assert capacity <= 4096
    process = _spawn(cli, "run", "--file", plan, stdout=write_end, stderr=subprocess.PIPE)
    try:
        head = _read_lines(read_end, 2)
    finally:
        os.close(read_end)
    code, stderr = _finish(process)

    plan_id = _only_plan_id(head.decode())  # the table's title line names the plan
    assert code == 0, stderr
    _quiet(stderr)
    assert _stored(cli, plan_id) == ("succeeded", {s["id"]: "succeeded" for s in steps})


def test_stderr_closed_before_the_run_the_plan_still_runs_and_exits_0(cli: Cli) -> None:
    process = _spawn(cli, "run", "--file", BLOG_PLAN, stdout=subprocess.PIPE, stderr=_reader_gone())
    code, stdout = _finish(process)

    assert code == 0, stdout
    _quiet(stdout)
    assert "execution status: succeeded" in stdout  # the result still reaches stdout
    assert _stored(cli, _only_plan_id(stdout)) == (
        "succeeded",
        dict.fromkeys(BLOG_STEPS, "succeeded"),
    )


def test_stderr_reader_that_leaves_mid_run_like_2_to_1_head(cli: Cli) -> None:
    # blog_chain behind a gate: the reader leaves while the first step runs, so every later
    # progress line (author, blog and comment included) is written to a pipe nobody reads.
    blog = json.loads(Path(BLOG_PLAN).read_text())
    blog["steps"][0]["dependsOn"] = ["wait"]
    blog["steps"].insert(0, {"id": "wait", "tool": "gate", "parameters": {"label": "go"}})
    plan = cli.write_plan(blog)
    process = subprocess.Popen(
        cli.argv("run", "--file", plan),
        env=cli.env,
        cwd=cli.tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    seen = b""
    while b"wait (gate) started" not in seen:
        line = process.stderr.readline()
        assert line, f"the CLI ended before the gate step started: {seen!r}"
        seen += line
    process.stderr.close()
    cli.gate.touch()
    code, stdout = _finish(process)

    assert code == 0, stdout
    _quiet(stdout)
    assert "execution status: succeeded" in stdout
    assert _stored(cli, _only_plan_id(seen.decode())) == (
        "succeeded",
        dict.fromkeys(["wait", *BLOG_STEPS], "succeeded"),
    )
