"""Scale-out workers end to end: ``toolplan execute --enqueue`` and ``toolplan worker`` processes
sharing one queue in MongoDB (and, once, in SQLite).

Exactly-once is checked through the idempotency keys the test tools log to ``$TOOLPLAN_TEST_LOG``
and through the records the blog toolset writes to the store.
"""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli
from toolplan.adapters.queue_worker import enqueue_plan
from toolplan.service import operations
from toolplan.store import Store, open_store
from toolplan.tools.catalog import ToolCatalog, load_tool_modules

pytestmark = [pytest.mark.e2e]
mongodb = pytest.mark.mongodb

GATED_PLAN = {
    "steps": [
        {"id": "first", "tool": "sleepy", "parameters": {"label": "first"}},
        {"id": "side", "tool": "sleepy", "parameters": {"label": "side"}},
        {"id": "blocked", "tool": "gate", "parameters": {"label": "{{first.label}}"}},
        {"id": "last", "tool": "echo", "parameters": {"value": "{{blocked.label}}"}},
    ]
}


def author_plan(i: int) -> dict[str, Any]:
    """Three steps with side effects: a stored author record and two logged tool calls."""
    return {
        "steps": [
            {
                "id": "author",
                "tool": "createAuthor",
                "parameters": {"name": f"author {i}", "email": f"a{i}@test.com"},
            },
            {
                "id": "note",
                "tool": "sleepy",
                "parameters": {"label": "{{author._id}}", "seconds": 0.1},
            },
            {"id": "done", "tool": "echo", "parameters": {"value": "{{note.label}}"}},
        ]
    }


@pytest.fixture
def cli(tmp_path: Path, mongodb_uri: str) -> Cli:
    return Cli(tmp_path, store_uri=mongodb_uri)


@pytest.fixture
def catalog() -> ToolCatalog:
    return load_tool_modules(["blog", "metrics", "weather", "tests.support.tools"])


@pytest.fixture
def store(cli: Cli) -> Iterator[Store]:
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as opened:
        yield opened


class WorkerProcess:
    """A ``toolplan worker`` subprocess whose log goes to a file the test can watch."""

    def __init__(self, cli: Cli, name: str, *args: str) -> None:
        self.log = cli.tmp / f"{name}.log"
        self._log_file = self.log.open("w")
        self.process = subprocess.Popen(
            cli.argv("worker", "--json", *args),
            env=cli.env,
            cwd=cli.tmp,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
        )

    def logged(self, text: str) -> bool:
        return text in self.log.read_text()

    def finish(self, timeout: float = 120) -> dict[str, Any]:
        """Wait for the exit; return the JSON report (exit code 0 required)."""
        out, _ = self.process.communicate(timeout=timeout)
        self._log_file.close()
        assert self.process.returncode == 0, self.log.read_text()
        report: dict[str, Any] = json.loads(out)
        return report

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)
        self._log_file.close()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.02)


def step_started(cli: Cli, step: str) -> bool:
    return any(c["step"] == step for c in cli.calls())


def queue(store: Store, catalog: ToolCatalog, plan: dict[str, Any]) -> str:
    """Store and queue a plan in-process (the CLI contract of both is tested once, below)."""
    plan_id = operations.submit_plan(plan, store=store, catalog=catalog, max_steps=50).plan_id
    assert enqueue_plan(store, plan_id).status == "queued"
    return plan_id


def enqueue_with_cli(cli: Cli, plan_id: str) -> None:
    queued = cli("execute", plan_id, "--enqueue", "--json")
    assert queued.code == 0, queued.stderr
    assert queued.json() == {"planId": plan_id, "status": "queued"}


def step_status(store: Store, plan_id: str) -> dict[str, str]:
    execution = store.get_execution(plan_id)
    assert execution is not None
    return {s.step_id: s.status for s in execution.steps}


# -- many workers, one queue ----------------------------------------------------------------------


@mongodb
def test_three_workers_drain_30_plans_each_exactly_once(
    cli: Cli, store: Store, catalog: ToolCatalog
) -> None:
    plan_ids = [
        operations.submit_plan(author_plan(i), store=store, catalog=catalog, max_steps=50).plan_id
        for i in range(30)
    ]
    enqueue_with_cli(cli, plan_ids[0])  # the CLI contract; the rest in-process, to keep it quick
    workers = [
        WorkerProcess(
            cli, f"w{n}", "--concurrency", "2", "--poll-interval", "0.05", "--idle-exit", "2"
        )
        for n in range(3)
    ]
    # Every worker is polling before most of the work exists, so all three take part.
    wait_until(lambda: all(w.logged(": started:") for w in workers), "all workers started")
    for plan_id in plan_ids[1:]:
        enqueue_plan(store, plan_id)
    reports = [w.finish() for w in workers]

    finished = [plan_id for r in reports for plan_id in r["finished"]]
    assert sorted(finished) == sorted(plan_ids)  # every plan once, by exactly one worker
    assert all(r["finished"] for r in reports), [len(r["finished"]) for r in reports]
    assert all(r["stoppedBy"] == "idle" and not r["failed"] for r in reports)
    assert len({r["workerId"] for r in reports}) == 3

    for plan_id in plan_ids:
        execution = store.get_execution(plan_id)
        assert execution is not None and execution.status == "succeeded"
        assert [s.attempts for s in execution.steps] == [1, 1, 1]
    calls = collections.Counter(
        (c["key"], c["event"]) for c in cli.calls() if c["event"] in ("start", "call")
    )
    for plan_id in plan_ids:  # each side-effecting step called once, through its idempotency key
        assert calls[(f"{plan_id}:note", "start")] == 1
        assert calls[(f"{plan_id}:done", "call")] == 1
    assert sum(calls.values()) == 60
    authors = store.find_records("authors", {})
    assert sorted(a["name"] for a in authors) == sorted(f"author {i}" for i in range(30))


@mongodb
def test_killed_worker_loses_its_lease_and_another_finishes_the_plan(
    cli: Cli, store: Store, catalog: ToolCatalog
) -> None:
    cli.env["TOOLPLAN_LEASE_SECONDS"] = "1"  # a dead worker's lease expires quickly
    plan_id = queue(store, catalog, GATED_PLAN)
    first = WorkerProcess(cli, "first", "--poll-interval", "0.05")
    wait_until(lambda: step_started(cli, "blocked"), "the gate step started")
    first.kill()  # SIGKILL: no chance to release anything

    assert step_status(store, plan_id) == {
        "first": "succeeded",
        "side": "succeeded",
        "blocked": "running",
        "last": "pending",
    }
    cli.gate.touch()
    second = WorkerProcess(cli, "second", "--max-plans", "1", "--poll-interval", "0.05")
    report = second.finish()
    assert report["finished"] == {plan_id: "succeeded"}

    execution = store.get_execution(plan_id)
    assert execution is not None and execution.worker_id is None
    assert execution.status == "succeeded" and execution.step("last").output == "first"
    starts = collections.Counter(c["step"] for c in cli.calls() if c["event"] in ("start", "call"))
    assert starts["first"] == 1 and starts["side"] == 1  # finished steps never re-run
    assert starts["blocked"] == 2 and starts["last"] == 1  # the interrupted one runs again...
    assert {c["key"] for c in cli.calls() if c["step"] == "blocked"} == {f"{plan_id}:blocked"}


@mongodb
def test_sigterm_finishes_current_work_then_exits(
    cli: Cli, store: Store, catalog: ToolCatalog
) -> None:
    plan_id = queue(store, catalog, GATED_PLAN)
    worker = WorkerProcess(cli, "w", "--poll-interval", "0.05")
    wait_until(lambda: step_started(cli, "blocked"), "the gate step started")
    worker.process.send_signal(signal.SIGTERM)
    wait_until(lambda: worker.logged(": stopping:"), "the worker stopped claiming")
    cli.gate.touch()  # the running plan can finish within the grace period
    report = worker.finish()
    assert report["finished"] == {plan_id: "succeeded"} and report["released"] == []
    assert report["stoppedBy"] == "signal"


@mongodb
def test_sigterm_after_grace_releases_current_work_for_another_worker(
    cli: Cli, store: Store, catalog: ToolCatalog
) -> None:
    plan_id = queue(store, catalog, GATED_PLAN)
    worker = WorkerProcess(cli, "w", "--poll-interval", "0.05", "--grace", "0.2")
    wait_until(lambda: step_started(cli, "blocked"), "the gate step started")
    worker.process.send_signal(signal.SIGTERM)
    report = worker.finish()
    assert report["released"] == [plan_id] and report["finished"] == {}

    execution = store.get_execution(plan_id)
    assert execution is not None  # back in the queue, with no lease to wait for:
    assert (execution.status, execution.worker_id) == ("queued", None)
    cli.gate.touch()
    other = WorkerProcess(cli, "other", "--once")
    assert other.finish()["finished"] == {plan_id: "succeeded"}
    starts = collections.Counter(c["step"] for c in cli.calls() if c["event"] in ("start", "call"))
    assert (starts["first"], starts["side"], starts["blocked"], starts["last"]) == (1, 1, 2, 1)


@mongodb
def test_second_sigterm_releases_without_waiting(
    cli: Cli, store: Store, catalog: ToolCatalog
) -> None:
    plan_id = queue(store, catalog, GATED_PLAN)
    worker = WorkerProcess(cli, "w", "--poll-interval", "0.05", "--grace", "600")
    wait_until(lambda: step_started(cli, "blocked"), "the gate step started")
    worker.process.send_signal(signal.SIGTERM)
    wait_until(lambda: worker.logged(": stopping:"), "the worker stopped claiming")
    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(timeout=30)["released"] == [plan_id]
    assert step_status(store, plan_id)["blocked"] == "running"  # to be called again, same key


# -- queueing rules and other stores --------------------------------------------------------------


@mongodb
def test_enqueue_rules(cli: Cli, store: Store, catalog: ToolCatalog) -> None:
    review = operations.submit_plan(
        author_plan(0), store=store, catalog=catalog, max_steps=50, status="needs_review"
    )
    refused = cli("execute", review.plan_id, "--enqueue", "--json")
    assert refused.code == 2 and "needs review" in refused.json()["error"]
    assert store.get_execution(review.plan_id) is None
    assert (
        cli("execute", review.plan_id, "--enqueue", "--yes", "--json").json()["status"] == "queued"
    )
    missing = cli("execute", "plan_1700000000_abcdef", "--enqueue")
    assert missing.code == 2 and "does not exist" in missing.stderr

    # A plan using a tool this worker does not have is failed, not claimed again forever.
    cli.env["TOOLPLAN_TOOLS"] = "blog"
    report = WorkerProcess(cli, "w", "--once").finish()
    assert review.plan_id in report["failed"] and "sleepy" in report["failed"][review.plan_id]
    failed = store.get_execution(review.plan_id)
    assert failed is not None and failed.status == "failed" and failed.worker_id is None


def test_workers_on_the_sqlite_store(tmp_path: Path, catalog: ToolCatalog) -> None:
    cli = Cli(tmp_path)
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as store:
        plan_ids = [queue(store, catalog, author_plan(i)) for i in range(3)]
    report = WorkerProcess(cli, "w", "--once", "--concurrency", "3").finish()
    assert report["finished"] == {plan_id: "succeeded" for plan_id in plan_ids}
    again = cli("execute", plan_ids[0], "--enqueue", "--json")
    assert again.json() == {"planId": plan_ids[0], "status": "succeeded"}  # finished: not queued
