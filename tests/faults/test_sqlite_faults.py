"""SQLite store faults, met by real ``toolplan`` processes: a lock held by another process, a
read-only file, a full disk (a file-size limit), the file removed mid-run, and several processes
creating a new store at once.

What each must give: exit 3 with one line naming the store and the cause (one JSON object with
``--json``), no step or plan recorded as failed, and, once the fault is gone, ``toolplan execute``
completing the plan without calling finished steps again (the interrupted step runs again with
the same idempotency key).
"""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import cli_cases
from tests.e2e.conftest import Cli
from tests.support.faults import (
    GATED_PLAN,
    LockHolder,
    file_size_limit,
    read_only_file,
    wait_for_call,
)

pytestmark = pytest.mark.e2e


def _db(cli: Cli) -> Path:
    return cli.tmp / "toolplan.db"


def _submit(cli: Cli, plan: dict[str, Any]) -> str:
    done = cli("submit", "--file", cli.write_plan(plan), "--json")
    assert done.code == 0, done.stderr
    plan_id: str = done.json()["planId"]
    return plan_id


def assert_store_fault(code: int, out: str, err: str, *, cause: str) -> dict[str, Any]:
    """Exit 3, one line on stderr naming the store and ``cause``, one JSON object on stdout."""
    assert code == 3, (code, out, err)
    assert "Traceback" not in err and "sqlite3." not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "SQLite store 'sqlite:///" in lines[0] and cause in lines[0], lines[0]
    payload: dict[str, Any] = json.loads(out)  # exactly one object, nothing else
    assert payload["exitCode"] == 3 and cause in payload["error"]
    return payload


def assert_resumes(cli: Cli, plan_id: str, *, finished: list[str], interrupted: str) -> None:
    """After the fault: execute completes; finished steps are not called again, the interrupted
    one is, with the same idempotency key."""
    before = [c["step"] for c in cli.calls() if c["event"] in ("start", "call")]
    resumed = cli("execute", plan_id, "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["status"] == "succeeded"
    after = [c["step"] for c in cli.calls() if c["event"] in ("start", "call")][len(before) :]
    assert not set(after) & set(finished), after
    assert interrupted in after
    keys = {c["key"] for c in cli.calls() if c["step"] == interrupted}
    assert keys == {f"{plan_id}:{interrupted}"}


# -- a lock held by another process ---------------------------------------------------------------


def test_lock_held_mid_run_stops_with_exit_3_and_resumes_after_release(cli: Cli) -> None:
    """The table's first row: another process holds the write lock while a plan runs. The run
    must not record a failure or finish as ``partial``: it stops (exit 3) and resumes later."""
    cli.env["TOOLPLAN_STORE_BUSY_TIMEOUT"] = "0.5"
    plan_id = _submit(cli, GATED_PLAN)
    process = cli.popen("execute", plan_id, "--json")
    wait_for_call(cli.calls, "blocked", process)
    with LockHolder(_db(cli)):
        cli.gate.touch()  # the step finishes while the lock is held: its write must wait
        out, err = process.communicate(timeout=60)
        payload = assert_store_fault(process.returncode, out, err, cause="is locked")
        assert payload["planId"] == plan_id and payload["resumable"] is True
        assert "TOOLPLAN_STORE_BUSY_TIMEOUT" in payload["error"]
        shown = cli("show", plan_id, "--json")  # readers are not blocked by a writer (WAL)
    assert shown.code == 0, shown.stderr
    execution = shown.json()["execution"]
    assert execution["status"] == "running"  # not partial, not failed
    assert {s["id"]: s["status"] for s in execution["steps"]} == {
        "first": "succeeded",
        "blocked": "running",
        "last": "pending",
    }
    assert_resumes(cli, plan_id, finished=["first"], interrupted="blocked")


def test_submit_and_execute_while_locked_exit_3_with_one_line(cli: Cli) -> None:
    cli.env["TOOLPLAN_STORE_BUSY_TIMEOUT"] = "0.3"
    plan_id = _submit(cli, GATED_PLAN)
    cli.gate.touch()
    with LockHolder(_db(cli)):
        started = time.monotonic()
        submitted = cli("submit", "--file", cli_cases.BLOG_PLAN, "--json")
        waited = time.monotonic() - started
        assert_store_fault(submitted.code, submitted.stdout, submitted.stderr, cause="is locked")
        assert waited >= 0.3  # it waited for the lock before giving up
        executed = cli("execute", plan_id, "--json")
        assert_store_fault(executed.code, executed.stdout, executed.stderr, cause="is locked")
        human = cli("execute", plan_id)
        assert human.code == 3 and "is locked by another process" in human.stderr
    assert cli.calls() == []  # nothing ran while locked
    shown = cli("show", plan_id, "--json").json()
    assert shown["execution"] is None or shown["execution"]["status"] != "partial"
    done = cli("execute", plan_id, "--json")
    assert done.code == 0 and done.json()["status"] == "succeeded", done.stderr


def test_lock_released_within_the_busy_timeout_waits_and_goes_on(cli: Cli) -> None:
    cli.env["TOOLPLAN_STORE_BUSY_TIMEOUT"] = "30"
    assert cli("tools", "--json").code == 0  # creates the store file
    holder = LockHolder(_db(cli))
    holder.acquire()
    process = cli.popen("run", "--file", cli_cases.BLOG_PLAN, "--json")
    time.sleep(0.5)
    assert process.poll() is None  # waiting for the lock
    holder.release()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert json.loads(out)["status"] == "succeeded"


# -- a read-only file -------------------------------------------------------------------------------


def test_read_only_file_exit_3_nothing_written_then_resumes(cli: Cli) -> None:
    plan_id = _submit(cli, GATED_PLAN)
    cli.gate.touch()
    with read_only_file(_db(cli)) as how:
        for args in (
            ("execute", plan_id, "--json"),
            ("submit", "--file", cli_cases.BLOG_PLAN, "--json"),
        ):
            done = cli(*args)
            assert_store_fault(done.code, done.stdout, done.stderr, cause="read-only")
        human = cli("run", "--file", cli_cases.BLOG_PLAN)
        assert human.code == 3 and "read-only" in human.stderr, (how, human.stderr)
        shown = cli("show", plan_id, "--json")  # reading a read-only store works
        assert shown.code == 0 and shown.json()["execution"] is None, shown.stderr
    assert cli.calls() == []
    done = cli("execute", plan_id, "--json")
    assert done.code == 0 and done.json()["status"] == "succeeded", done.stderr


# -- a full disk ----------------------------------------------------------------------------------


def test_disk_full_mid_run_exit_3_then_resumes_once_space_is_back(cli: Cli) -> None:
    """``prlimit --fsize``: once the store's files reach the limit, every write fails with EFBIG
    as it would on a full disk. The run stops with exit 3; without the limit it completes and
    the steps that had finished are not called again."""
    big = "x" * 60_000  # 12 steps: 720 KB, under the plan size limit
    steps = [
        {"id": f"s{i}", "tool": "echo", "parameters": {"value": f"{big}{i}"}}
        | ({"dependsOn": [f"s{i - 1}"]} if i else {})
        for i in range(12)
    ]
    plan_id = _submit(cli, {"steps": steps})
    size = _db(cli).stat().st_size + sum(
        p.stat().st_size for p in cli.tmp.glob("toolplan.db-*") if p.exists()
    )
    cli.prefix = file_size_limit(size + 600_000)  # room for a few steps' records, not all
    done = cli("execute", plan_id, "--json")
    cli.prefix = []
    assert done.code == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    payload = json.loads(done.stdout)
    assert payload["exitCode"] == 3 and "SQLite store" in payload["error"]
    assert "disk" in payload["error"]
    shown = cli("show", plan_id, "--json").json()["execution"]
    assert shown is not None and shown["status"] == "running"
    statuses = [s["status"] for s in shown["steps"]]
    assert "failed" not in statuses and "skipped" not in statuses
    finished = [s["id"] for s in shown["steps"] if s["status"] == "succeeded"]
    assert 0 < len(finished) < len(steps)
    interrupted = next(s["id"] for s in shown["steps"] if s["status"] != "succeeded")
    calls_before = [c["step"] for c in cli.calls()]
    resumed = cli("execute", plan_id, "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["status"] == "succeeded"
    again = [c["step"] for c in cli.calls()][len(calls_before) :]
    assert not set(again) & set(finished)
    assert interrupted in again
    assert {c["key"] for c in cli.calls() if c["step"] == interrupted} == {
        f"{plan_id}:{interrupted}"
    }


# -- the file removed while a plan runs ------------------------------------------------------------


def test_store_file_removed_mid_run_exit_3_with_the_cause(cli: Cli) -> None:
    plan_id = _submit(cli, GATED_PLAN)
    process = cli.popen("execute", plan_id, "--json")
    wait_for_call(cli.calls, "blocked", process)
    for path in [_db(cli), *cli.tmp.glob("toolplan.db-*")]:
        path.unlink()
    cli.gate.touch()
    out, err = process.communicate(timeout=60)
    assert_store_fault(process.returncode, out, err, cause="removed or moved")


# -- a new store created by several processes at once ---------------------------------------------


def _open_and_submit(path: str, barrier: Any, results: Any) -> None:
    from toolplan.service.operations import submit_plan
    from toolplan.store import open_store

    plan = {"steps": [{"id": "w", "tool": "get_weather", "parameters": {"location": "Paris"}}]}
    barrier.wait()
    try:
        store = open_store(f"sqlite:///{path}")
        try:
            submit_plan(plan, store=store, catalog=_CATALOG, max_steps=50)
        finally:
            store.close()
        results.put("ok")
    except Exception as error:
        results.put(f"{type(error).__name__}: {error}")


_CATALOG: Any = None


def test_processes_creating_a_new_store_at_once_are_never_refused(tmp_path: Path) -> None:
    """4 processes open the same, not yet existing, SQLite file at the same instant and store a
    plan, 60 times over (240 opens): none is refused ("database is locked" was 1 in 30)."""
    global _CATALOG
    from toolplan.config import Settings
    from toolplan.tools.loading import load_catalog

    _CATALOG = load_catalog(Settings())  # before fork: the children only open and write
    context = multiprocessing.get_context("fork")
    refused: list[str] = []
    for trial in range(60):
        path = tmp_path / f"trial{trial}" / "toolplan.db"
        path.parent.mkdir()  # the file is new; a folder that does not exist is refused
        barrier, results = context.Barrier(4), context.Queue()
        processes = [
            context.Process(target=_open_and_submit, args=(str(path), barrier, results))
            for _ in range(4)
        ]
        for process in processes:
            process.start()
        outcomes = [results.get(timeout=60) for _ in processes]
        for process in processes:
            process.join(timeout=60)
        refused += [outcome for outcome in outcomes if outcome != "ok"]
    assert refused == []


def test_worker_survives_a_locked_store_and_finishes_the_plan_after(cli: Cli) -> None:
    """A ``toolplan worker`` whose run meets a locked store does not fail the plan: the run
    stops, the lease runs out, and once the lock is gone the worker claims it again and
    finishes it without calling finished steps again."""
    cli.env.update({"TOOLPLAN_STORE_BUSY_TIMEOUT": "0.3", "TOOLPLAN_LEASE_SECONDS": "1"})
    plan_id = _submit(cli, GATED_PLAN)
    assert cli("execute", plan_id, "--enqueue", "--json").code == 0
    worker = cli.popen("worker", "--idle-exit", "3", "--poll-interval", "0.05", "--json")
    wait_for_call(cli.calls, "blocked", worker)
    with LockHolder(_db(cli)):
        cli.gate.touch()
        deadline = time.monotonic() + 30
        while not any(c["step"] == "blocked" and c["event"] == "end" for c in cli.calls()):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.8)  # the step's final write waits 0.3 s for the lock, then the run stops
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    report = json.loads(out)
    assert report["finished"] == {plan_id: "succeeded"} and report["failed"] == {}
    starts = [c["step"] for c in cli.calls() if c["event"] in ("start", "call")]
    assert starts.count("first") == 1 and starts.count("blocked") == 2
    assert {c["key"] for c in cli.calls() if c["step"] == "blocked"} == {f"{plan_id}:blocked"}
