"""Streamed execution keeps the order a plan reads in (``--stream``, through the real CLI and the
scripted model, on both stores): a read written after a side effect never starts early; an
early call is adopted only when its arguments are the final step's, as the tool's schema reads
them; an early call the final plan dropped is cancelled at once; ``--no-cache`` holds; a planning
killed with ``kill -9`` has its early calls settled by the next one, and a finished early output
is adopted once at most.

``put``/``get`` are a key-value store on the resource ``kv`` (``get`` read-only, cached);
``lookup`` and ``held_read`` are read-only reads of another resource; ``echo`` a side effect."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.e2e.conftest import HUNG_AFTER, ON_BOTH_STORES, Cli, wait_for
from tests.e2e.test_stream_execution import (
    QUERY,
    early_records,
    event_of,
    held_at,
    looked_up,
    stream_cli,
    streamed,
)
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.e2e]


def _gets(cli: Cli) -> list[dict[str, Any]]:
    return [c for c in cli.calls() if c["event"] == "start" and c["step"] in ("r", "a")]


def _last_status(cli: Cli) -> dict[tuple[str, str], str]:
    """(plan, step) → the status of its last early record."""
    last: dict[tuple[str, str], str] = {}
    for record in early_records(cli):
        last[(record["planId"], record["step"])] = record["status"]
    return last


def _repaired_run(
    cli: Cli, llm: FakeOpenAIServer, first: str, repaired: str, started: Any
) -> dict[str, Any]:
    """Plan streamed: ``first`` (its last line refused, so the model is asked again), held
    until ``started()`` (what it started early has started), then ``repaired``; the run's
    JSON result."""
    stream_cli(cli)
    broken = first + "z = no_such_tool(q=1)\n"
    seen: dict[str, Any] = {}
    llm.script(
        [
            streamed(broken, held_at(event_of(broken, "z = ") + 1, started, seen, cli)),
            streamed(repaired),
        ]
    )
    done = cli("run", QUERY, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    assert seen["held"] is True
    result: dict[str, Any] = done.json()
    return result


@ON_BOTH_STORES
def test_a_read_written_after_a_side_effect_never_starts_early(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    stream_cli(cli_llm)
    plan = (
        'w = put(key="k", value="new")\nr = get(key="k")\nx = lookup(key="x")\ne = echo(value=1)\n'
    )
    seen: dict[str, Any] = {}
    # Hold the answer's end until the read of another resource started early: early starts
    # work, and the read of kv, written after the write, still has not started.
    hold = held_at(len(plan) + 1, lambda: "x" in looked_up(cli_llm), seen, cli_llm)
    llm.script([streamed(plan, hold)])
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    assert seen["held"] is True
    assert [c["step"] for c in seen["before_end"] if c["event"] in ("start", "call")] == ["x"]
    result = done.json()
    steps = {step["id"]: step for step in result["steps"]}
    assert steps["r"]["output"] == {"key": "k", "value": "new"}
    assert [(e["step"], e["status"]) for e in result["earlyStarts"]] == [("x", "adopted")]


@ON_BOTH_STORES
def test_stream_honours_no_cache(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    stream_cli(cli_llm)
    plan = 'a = lookup(key="x")\ne = echo(value=a["value"])\n'
    llm.script([streamed(plan)])
    first = cli_llm("run", QUERY, "--no-answer", "--json")
    assert first.code == 0, first.stderr
    assert looked_up(cli_llm) == ["x"]
    llm.script([streamed(plan)])
    second = cli_llm("run", QUERY, "--no-answer", "--no-cache", "--json")
    assert second.code == 0, second.stderr
    steps = {step["id"]: step for step in second.json()["steps"]}
    assert "cached" not in steps["a"]
    assert looked_up(cli_llm) == ["x", "x"]  # called again: nothing from the cache


@ON_BOTH_STORES
@pytest.mark.parametrize(
    ("first", "final"),
    [
        ('a = get(key="k", seconds=0)\n', 'a = get(key="k", seconds=0)\n'),  # 0 read as 0.0
        ('a = get(key="k")\n', 'a = get(key="k", seconds=0.0)\n'),  # the default, written out
    ],
    ids=["int-for-float", "defaulted"],
)
def test_an_early_call_is_adopted_when_the_schema_reads_the_same_arguments(
    cli_llm: Cli, llm: FakeOpenAIServer, first: str, final: str
) -> None:
    repaired = final + 'e = echo(value=a["value"])\n'
    result = _repaired_run(cli_llm, llm, first, repaired, lambda: len(_gets(cli_llm)) == 1)
    assert [(e["step"], e["status"]) for e in result["earlyStarts"]] == [("a", "adopted")]
    assert len(_gets(cli_llm)) == 1  # the step took the early call's output: one call in all


@ON_BOTH_STORES
def test_an_early_call_the_final_plan_orders_after_a_write_is_unused(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """The first answer reads kv early; the repaired one writes kv before that same read: the
    early output is from before the write, so the step reads again, after it."""
    repaired = 'w = put(key="k", value="new")\na = get(key="k")\n'
    first = 'a = get(key="k")\n'
    result = _repaired_run(cli_llm, llm, first, repaired, lambda: len(_gets(cli_llm)) == 1)
    steps = {step["id"]: step for step in result["steps"]}
    assert steps["a"]["output"] == {"key": "k", "value": "new"}
    assert [(e["step"], e["status"], e["savedMs"]) for e in result["earlyStarts"]] == [
        ("a", "unused", 0.0)
    ]
    assert result["savedMs"] == 0
    assert len(_gets(cli_llm)) == 2  # the early read, then the step's own, after the write
    assert _last_status(cli_llm)[(result["planId"], "a")] == "unused"


@ON_BOTH_STORES
def test_an_early_call_whose_final_step_has_other_arguments_is_unused(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """The repaired answer keeps the step but reads another key, after a write (so it cannot
    start early itself): the early output is unused, saves nothing, and the step's own call is
    the only one that follows."""
    repaired = 'w = put(key="x", value=1)\na = get(key="j")\n'
    result = _repaired_run(
        cli_llm, llm, 'a = get(key="k")\n', repaired, lambda: len(_gets(cli_llm)) == 1
    )
    assert [(e["step"], e["status"], e["savedMs"]) for e in result["earlyStarts"]] == [
        ("a", "unused", 0.0)
    ]
    assert result["savedMs"] == 0
    assert [c["key_arg"] for c in _gets(cli_llm)] == ["k", "j"]
    assert _last_status(cli_llm)[(result["planId"], "a")] == "unused"


@ON_BOTH_STORES
def test_an_early_call_the_final_plan_dropped_is_cancelled_at_once(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    started = lambda: any(c["event"] == "start" for c in cli_llm.calls())  # noqa: E731
    first, repaired = 'h = held_read(label="h")\n', "e = echo(value=1)\n"
    result = _repaired_run(cli_llm, llm, first, repaired, started)
    # The held read was released (cancelled) before the plan's own call ran.
    assert [(c["event"], c["step"]) for c in cli_llm.calls()] == [
        ("start", "h"),
        ("released", "h"),
        ("call", "e"),
    ]
    assert [(e["step"], e["status"]) for e in result["earlyStarts"]] == [("h", "cancelled")]
    assert _last_status(cli_llm)[(result["planId"], "h")] == "cancelled"


KILLED_PLAN = 'a = lookup(key="x")\nh = held_read(label="h")\ne = echo(value=a["value"])\n'


def _killed_mid_planning(cli: Cli, llm: FakeOpenAIServer) -> str:
    """Run :data:`KILLED_PLAN` streamed in a process killed with ``kill -9`` once ``a`` finished
    early and ``h`` runs early; the dead planning's plan ID."""
    stream_cli(cli)
    cli.in_process = False
    released = threading.Event()
    at = event_of(KILLED_PLAN, "e = ") + 1  # `h` is complete once `e` begins

    def hold(index: int) -> None:  # until the process is gone
        if index == at:
            released.wait(HUNG_AFTER)  # not a pace: it ends when the test kills the process

    llm.script([streamed(KILLED_PLAN, hold)])
    process = cli.popen("run", QUERY, "--no-answer", "--json")

    def both_early() -> bool:
        statuses = {(r["step"], r["status"]) for r in early_records(cli)}
        return {("a", "succeeded"), ("h", "running")} <= statuses

    try:
        wait_for(both_early, "a finished and a running early call", process)
    finally:
        process.kill()  # SIGKILL: no cleanup, mid-planning
        process.communicate()
        released.set()
    killed = {r["planId"] for r in early_records(cli)}
    assert len(killed) == 1
    (dead,) = killed
    assert _last_status(cli)[(dead, "h")] == "running"  # nobody settled it yet
    cli.gate.touch()  # the next planning's own held_read returns
    return dead


@ON_BOTH_STORES
def test_kill_9_leaves_early_calls_that_the_next_planning_settles_and_adopts_once(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    dead = _killed_mid_planning(cli_llm, llm)
    llm.script([streamed(KILLED_PLAN)])
    again = cli_llm("run", QUERY, "--no-answer", "--json")
    assert again.code == 0, again.stderr
    assert looked_up(cli_llm) == ["x"]  # adopted from the dead planning, not called again
    last = _last_status(cli_llm)
    assert last[(dead, "a")] == "adopted" and last[(dead, "h")] == "cancelled"

    llm.script([streamed(KILLED_PLAN)])
    third = cli_llm("run", QUERY, "--no-answer", "--json")
    assert third.code == 0, third.stderr
    assert looked_up(cli_llm) == ["x", "x"]  # adopted once: the third planning calls it


@ON_BOTH_STORES
def test_no_cache_reads_again_what_a_killed_planning_read(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    dead = _killed_mid_planning(cli_llm, llm)
    llm.script([streamed(KILLED_PLAN)])
    again = cli_llm("run", QUERY, "--no-answer", "--no-cache", "--json")
    assert again.code == 0, again.stderr
    assert looked_up(cli_llm) == ["x", "x"]  # --no-cache: the tool is called again
    last = _last_status(cli_llm)
    assert last[(dead, "a")] == "unused" and last[(dead, "h")] == "cancelled"
