"""Temporal end to end: real ``toolplan`` processes (workers, the CLI, the API server) and a real
Temporal server. The kill test: 3 worker processes drain 30 plans, two are ``kill -9``'d while
their steps run, and every plan completes exactly once."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import GraphQLClient, ServerFactory, server_factory
from tests.e2e.conftest import Cli
from tests.support.ports import free_port
from tests.support.temporal_server import TemporalServer, temporal_binary
from tests.support.user_tools import ECHO, USER_TOOLS
from toolplan.config import Settings, TemporalSettings
from toolplan.service import operations
from toolplan.service.wiring import execution_context
from toolplan.store import Store, open_store
from toolplan.store.protocol import TERMINAL_EXECUTION_STATUSES
from toolplan.tools import ToolCatalog, load_tool_modules

pytestmark = [pytest.mark.temporal, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]

GATED = {
    "steps": [
        {"id": "wait", "tool": "gate", "parameters": {"label": "w"}},
        {"id": "after", "tool": "echo", "parameters": {"value": "{{wait.label}}"}},
    ]
}


def side_effect_plan(i: int) -> dict[str, Any]:
    """Steps with side effects, each allowed ONE attempt: a worker killed under a step must not
    spend it (the step runs again elsewhere, same idempotency key) nor re-run a finished step."""
    return {
        "steps": [
            {
                "id": "author",
                "tool": "createAuthor",
                "parameters": {"name": f"author {i}", "email": f"a{i}@test.com"},
                "maxAttempts": 1,
            },
            {
                "id": "note",
                "tool": "sleepy",
                "parameters": {"label": "{{author._id}}", "seconds": 0.4},
                "maxAttempts": 1,
            },
            {
                "id": "done",
                "tool": "echo",
                "parameters": {"value": "{{note.label}}"},
                "maxAttempts": 1,
            },
        ]
    }


@pytest.fixture
def cli(tmp_path: Path, temporal_settings: TemporalSettings) -> Cli:
    cli = Cli(tmp_path)
    assert temporal_settings.address is not None
    cli.env.update(
        {
            "TOOLPLAN_TEMPORAL_ADDRESS": temporal_settings.address,
            "TOOLPLAN_TEMPORAL_TASK_QUEUE": temporal_settings.task_queue,
            "TOOLPLAN_TEMPORAL_HEARTBEAT": "1",
        }
    )
    return cli


@pytest.fixture
def store(cli: Cli) -> Iterator[Store]:
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as opened:
        yield opened


class Worker:
    """A ``toolplan worker --temporal`` process, its stderr in a file."""

    def __init__(self, cli: Cli, name: str, *args: str, tools: bool = True) -> None:
        self.log = cli.tmp / f"{name}.log"
        self._log_file = self.log.open("w")
        env = dict(cli.env)
        if not tools:  # no tools chosen: each plan runs with the tools recorded with it
            env.pop("TOOLPLAN_TOOLS", None)
        self.process = subprocess.Popen(
            cli.argv("worker", "--temporal", "--json", *args),
            env=env,
            cwd=cli.tmp,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def started(self) -> bool:
        return ": started:" in self.log.read_text()

    def stop(self, timeout: float = 60) -> dict[str, Any]:
        """SIGTERM; the JSON report (exit code 0 required)."""
        self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=timeout)
        self._log_file.close()
        assert self.process.returncode == 0, self.log.read_text()
        report: dict[str, Any] = json.loads(out)
        return report

    def kill(self) -> None:
        self.process.kill()  # SIGKILL
        self.process.wait(timeout=10)
        self._log_file.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def workers(cli: Cli) -> Iterator[Callable[..., Worker]]:
    started: list[Worker] = []

    def start(name: str, *args: str, tools: bool = True) -> Worker:
        worker = Worker(cli, name, *args, tools=tools)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)
    return value


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


async def enqueue(cli: Cli, store: Store, catalog: ToolCatalog, plan_ids: list[str]) -> None:
    settings = Settings.from_env(cli.env)
    ctx = execution_context(settings, store=store, catalog=catalog)
    for plan_id in plan_ids:
        assert (await operations.enqueue_execution(plan_id, ctx)).status == "queued"


def submit(cli: Cli, plan: dict[str, Any]) -> str:
    done = cli(
        "submit", "--file", cli.write_plan(plan, f"plan{time.monotonic_ns()}.json"), "--json"
    )
    assert done.code == 0, done.stderr
    plan_id: str = done.json()["planId"]
    return plan_id


def test_three_workers_drain_30_plans_exactly_once_although_two_are_killed(
    cli: Cli, store: Store, workers: Callable[..., Worker]
) -> None:
    catalog = load_tool_modules(["blog", "tests.support.tools"])
    plan_ids = [
        operations.submit_plan(
            side_effect_plan(i), store=store, catalog=catalog, max_steps=50
        ).plan_id
        for i in range(30)
    ]
    pool = [workers(f"w{n}", "--concurrency", "4") for n in range(3)]
    wait_until(lambda: all(w.started() for w in pool), "all workers started")
    queued = cli("execute", plan_ids[0], "--enqueue", "--json")  # the CLI contract, once
    assert queued.code == 0, queued.stderr
    assert queued.json() == {"planId": plan_ids[0], "status": "queued"}
    asyncio.run(enqueue(cli, store, catalog, plan_ids[1:]))  # the rest at once, in-process

    def running_on(worker: Worker) -> bool:
        """A step of this worker started and has not ended: kill it mid-run."""
        open_calls = collections.Counter()
        for call in cli.calls():
            if call["pid"] == worker.pid and call["step"] == "note":
                open_calls[call["key"]] += 1 if call["event"] == "start" else -1
        return any(count > 0 for count in open_calls.values())

    victims = pool[:2]
    for victim in victims:
        wait_until(lambda v=victim: running_on(v), f"worker {victim.pid} runs a step", 30)
        victim.kill()
    finished_before_kills = sum(
        1
        for plan_id in plan_ids
        if (e := store.get_execution(plan_id)) and e.status in TERMINAL_EXECUTION_STATUSES
    )

    def all_finished() -> bool:
        return all(
            (e := store.get_execution(plan_id)) is not None
            and e.status in TERMINAL_EXECUTION_STATUSES
            for plan_id in plan_ids
        )

    wait_until(all_finished, "every plan finished", 90)

    def completed_workflows() -> bool:
        """One workflow per plan, completed (its last step: the store's record came first)."""
        counted = subprocess.run(
            [
                str(temporal_binary()),
                "workflow",
                "count",
                "--address",
                cli.env["TOOLPLAN_TEMPORAL_ADDRESS"],
                "--query",
                f"TaskQueue = '{cli.env['TOOLPLAN_TEMPORAL_TASK_QUEUE']}' AND "
                "ExecutionStatus = 'Completed'",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return counted.stdout.split() == ["Total:", "30"]

    wait_until(completed_workflows, "every workflow completed", 30)
    report = pool[2].stop()
    assert report["stoppedBy"] == "signal" and report["backend"] == "temporal"
    assert finished_before_kills < 30  # the kills happened mid-run, with work left

    calls = cli.calls()
    killed = {v.pid for v in victims}
    assert {c["pid"] for c in calls} >= killed | {pool[2].pid}  # all three did work
    interrupted = 0
    for plan_id in plan_ids:
        execution = store.get_execution(plan_id)
        assert execution is not None and execution.status == "succeeded", execution
        for step in execution.steps:
            assert step.status == "succeeded" and step.finished_at is not None
            key = f"{plan_id}:{step.step_id}"
            step_calls = [c for c in calls if c["key"] == key and c["event"] in ("start", "call")]
            # A finished step is never called again: every call began before it was recorded.
            assert all(c["t"] <= epoch(step.finished_at) + 0.001 for c in step_calls), key
            # A call lost with a killed worker ran again elsewhere (attempt 2), its only
            # attempt unspent: the worker's death is not the step's failure. (An attempt can
            # be recorded and its worker killed before the tool was called: fewer calls.)
            if step.step_id != "author":  # createAuthor keeps no call log: see its records
                assert 1 <= len(step_calls) <= step.attempts, key
                assert step_calls[-1]["attempt"] == step.attempts, key
            if step.attempts > 1:
                interrupted += 1
                assert {c["pid"] for c in step_calls[:-1]} <= killed
        assert execution.step("done").output == execution.step("author").output["_id"]
    assert interrupted >= 2  # each kill interrupted at least one running step

    # Side effects exactly once, by idempotency key: one author record per plan.
    authors = store.find_records("authors", {})
    assert sorted(a["name"] for a in authors) == sorted(f"author {i}" for i in range(30))


def test_cli_runs_shows_and_cancels_plans_on_temporal(
    cli: Cli, workers: Callable[..., Worker]
) -> None:
    worker = workers("w", tools=False)  # it runs the test tools because the plans recorded them
    wait_until(worker.started, "the worker started")
    ran = cli("run", "--file", str(REPO / "examples" / "blog_chain.json"), "--json")
    assert ran.code == 0, ran.stderr
    result = ran.json()
    assert result["status"] == "succeeded" and len(result["steps"]) == 3
    shown = cli("show", result["planId"], "--json")
    assert shown.json()["execution"] == result

    plan_id = submit(cli, GATED)
    waiting = cli.popen("execute", plan_id)  # waits for the workflow, with progress
    wait_until(lambda: any(c["step"] == "wait" for c in cli.calls()), "the gate step started")
    cancelled = cli("cancel", plan_id, "--json")  # the store-based cancel of issue 14
    assert cancelled.code == 0, cancelled.stderr
    body = cancelled.json()
    assert body["status"] == "cancelled"
    assert [s["status"] for s in body["steps"]] == ["cancelled", "cancelled"]
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 1, err  # the plan ended without success
    assert "wait (gate) started" in err and "cancelled" in out

    again = cli("cancel", plan_id)
    assert again.code == 0 and f"plan {plan_id} is cancelled" in again.stdout
    worker.stop()


def test_approve_enqueue_with_no_worker_records_queues_and_exits_0_as_on_the_lease_queue(
    cli: Cli, workers: Callable[..., Worker]
) -> None:
    # Issue 42: on Temporal, `approve --enqueue` with no worker running exited 4 and asked for
    # the approval again, although it was recorded. Like the lease queue: recorded, queued for
    # a worker, exit 0 saying a worker continues it; the next worker does, calling the tool once.
    plan = {
        "steps": [
            {"id": "pay", "tool": "wire_money", "parameters": {"to": "NO12", "amount": 5}},
            {"id": "receipt", "tool": "echo", "parameters": {"value": "{{pay.sent}}"}},
        ]
    }
    plan_id = submit(cli, plan)
    worker = workers("before")
    wait_until(worker.started, "the worker started")
    waiting = cli("execute", plan_id, "--json")
    assert waiting.code == 4 and waiting.json()["status"] == "waiting", waiting.stderr
    worker.stop()

    approved = cli("approve", plan_id, "pay", "--enqueue", "--by", "ada")
    assert approved.code == 0, approved.stderr
    assert "recorded; queued" in approved.stdout and "worker" in approved.stdout
    shown = cli("show", plan_id, "--json").json()["execution"]
    assert shown["status"] == "queued"
    [pay] = [step for step in shown["steps"] if step["id"] == "pay"]
    assert pay["decision"]["decision"] == "approved" and pay["decision"]["by"] == "ada"
    assert not [c for c in cli.calls() if c["step"] == "pay"]

    later = workers("after")
    wait_until(
        lambda: cli("show", plan_id, "--json").json()["execution"]["status"] == "succeeded",
        "the next worker finished the plan",
    )
    assert len([c for c in cli.calls() if c["step"] == "pay" and c["event"] == "call"]) == 1
    later.stop()


def test_a_temporal_server_that_is_down_is_exit_3_with_one_line(cli: Cli, store: Store) -> None:
    plan_id = submit(cli, GATED)
    cli.env["TOOLPLAN_TEMPORAL_ADDRESS"] = f"127.0.0.1:{free_port()}"
    for args in (
        ("execute", plan_id),
        ("execute", plan_id, "--enqueue"),
        ("worker", "--temporal"),
        ("run", "--file", cli.write_plan(GATED)),
    ):
        done = cli(*args)
        assert done.code == 3, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        errors = [line for line in lines if line.startswith("error:")]
        assert errors == lines[-1:], (args, done.stderr)  # one line, the last
        assert "cannot reach the Temporal server at 127.0.0.1:" in errors[0]
        assert "connection refused" in errors[0] and "Traceback" not in done.stderr
        if args[0] != "run":  # run also reports where it stored the plan
            assert len(lines) == 1, (args, done.stderr)
    as_json = cli("execute", plan_id, "--json")
    assert as_json.code == 3 and as_json.json()["exitCode"] == 3
    # Nothing ran and nothing is left half-done: the plan runs once a server is there.
    assert cli("show", plan_id, "--json").json()["execution"] is None


def test_worker_flags_of_the_lease_queue_are_refused_with_temporal(cli: Cli) -> None:
    done = cli("worker", "--temporal", "--once")
    assert done.code == 2 and "--once apply to the store's lease queue" in done.stderr
    del cli.env["TOOLPLAN_TEMPORAL_ADDRESS"]
    done = cli("worker", "--temporal")
    assert done.code == 2 and "TOOLPLAN_TEMPORAL_ADDRESS" in done.stderr


EXECUTE = """mutation($id: String!, $wait: Boolean) {
  executePlan(planId: $id, wait: $wait) { planId status steps { id status attempts } }
}"""
EVENTS = "subscription($id: String!) { stepEvents(planId: $id) { kind stepId attempt } }"


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Iterator[ServerFactory]:
    """API servers with the test's Temporal settings; ``cli`` (the workers) uses their store."""
    for name in (
        "TOOLPLAN_TEMPORAL_ADDRESS",
        "TOOLPLAN_TEMPORAL_TASK_QUEUE",
        "TOOLPLAN_TEMPORAL_HEARTBEAT",
        "TOOLPLAN_TEST_LOG",
        "TOOLPLAN_TEST_GATE",
    ):
        monkeypatch.setenv(name, cli.env[name])
    cli.env["TOOLPLAN_STORE"] = f"sqlite:///{tmp_path / 'api.db'}"
    yield from server_factory(tmp_path)


def read_events(client: GraphQLClient, plan_id: str) -> list[dict[str, Any]]:
    payloads: list[dict[str, Any]] = []
    request = {"query": EVENTS, "variables": {"id": plan_id}}
    with client.http.stream(
        "POST", "/graphql", json=request, headers={"accept": "text/event-stream"}
    ) as response:
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
                if event == "complete":
                    break
            elif line.startswith("data: ") and event == "next":
                payloads.append(json.loads(line.removeprefix("data: "))["data"]["stepEvents"])
    return payloads


def test_api_execute_plan_and_cancel_execution_on_temporal(
    api: ServerFactory, cli: Cli, workers: Callable[..., Worker], tmp_path: Path
) -> None:
    server = api()
    client = server.client()
    try:
        plan_id = client.data(
            "mutation($p: JSON!) { submitPlan(plan: $p) { planId } }", {"p": GATED}
        )["submitPlan"]["planId"]
        queued = client.data(EXECUTE, {"id": plan_id, "wait": False})["executePlan"]
        assert queued["status"] == "queued"  # handed to Temporal; no worker runs yet
        assert [s["status"] for s in queued["steps"]] == ["pending", "pending"]
        worker = workers("w")
        (tmp_path / "gate.open").touch()
        events = read_events(client, plan_id)
        assert [(e["kind"], e["stepId"]) for e in events] == [
            ("started", "wait"),
            ("succeeded", "wait"),
            ("started", "after"),
            ("succeeded", "after"),
        ]
        done = client.data(
            "query($id: String!) { execution(planId: $id) { status steps { status } } }",
            {"id": plan_id},
        )["execution"]
        assert done == {"status": "succeeded", "steps": [{"status": "succeeded"}] * 2}

        (tmp_path / "gate.open").unlink()
        other = client.data(
            "mutation($p: JSON!) { submitPlan(plan: $p) { planId } }", {"p": GATED}
        )["submitPlan"]["planId"]
        client.data(EXECUTE, {"id": other, "wait": False})
        wait_until(
            lambda: sum(c["step"] == "wait" for c in cli.calls()) == 2, "the second gate started"
        )
        cancelled = client.data(
            "mutation($id: String!) { cancelExecution(planId: $id) { status error steps { status } } }",
            {"id": other},
        )["cancelExecution"]
        assert cancelled["status"] == "cancelled"
        assert [s["status"] for s in cancelled["steps"]] == ["cancelled", "cancelled"]
        worker.stop()
    finally:
        client.close()


def test_the_server_keeps_workflows_across_a_restart(
    tmp_path: Path, workers: Callable[..., Worker], cli: Cli
) -> None:
    """Temporal's history is the durability mechanism: a plan queued while the server restarts
    (same SQLite file) still runs once a worker is there."""
    with TemporalServer(tmp_path / "own") as server:
        cli.env["TOOLPLAN_TEMPORAL_ADDRESS"] = server.address
        plan_id = submit(cli, GATED)
        assert cli("execute", plan_id, "--enqueue", "--json").json()["status"] == "queued"
        server.stop()
        server.start()
        (tmp_path / "gate.open").touch()
        worker = workers("w")
        done = cli("execute", plan_id, "--json", timeout=60)  # joins the running workflow
        assert done.code == 0, done.stderr
        assert done.json()["status"] == "succeeded"
        worker.stop()


def test_a_worker_lacking_a_plans_module_leaves_it_waiting_for_one_that_has_it(
    cli: Cli, store: Store, workers: Callable[..., Worker]
) -> None:
    """A setup fault of a worker is not the plan's: the start activity fails retryably (the
    reason is on the execution record), nothing is recorded failed, and a worker that has the
    module runs the plan (issue 29)."""
    modules = cli.tmp / "user_modules"
    modules.mkdir()
    (modules / "tp_user_tools.py").write_text(USER_TOOLS)
    del cli.env["TOOLPLAN_TOOLS"]
    with_module = os.pathsep.join([str(REPO), str(modules)])
    cli.env["PYTHONPATH"] = str(REPO)
    lacking = workers("lacking", tools=False)  # its environment has no tp_user_tools
    wait_until(lacking.started, "the worker without the module started")

    cli.env["PYTHONPATH"] = with_module
    submitted = cli("submit", "--file", cli.write_plan(ECHO), "--tools", "tp_user_tools", "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    assert cli("execute", plan_id, "--enqueue").code == 0

    def waiting_with_the_reason() -> bool:
        execution = store.get_execution(plan_id)
        return execution is not None and "cannot load the tools recorded" in (execution.error or "")

    wait_until(waiting_with_the_reason, "the worker recorded why it cannot run the plan")
    execution = store.get_execution(plan_id)
    assert execution is not None and execution.status not in TERMINAL_EXECUTION_STATUSES
    assert {s.status for s in execution.steps} == {"pending"}
    # While it lives, the worker that took the workflow retries its start (a local activity);
    # it goes away (as a lost or reconfigured worker does) and the workflow moves on.
    lacking.kill()

    able = workers("able", tools=False)  # its environment has the module (cli.env now does)
    wait_until(
        lambda: (e := store.get_execution(plan_id)) is not None and e.status == "succeeded",
        "the worker with the module ran the plan",
        90,
    )
    execution = store.get_execution(plan_id)
    assert execution is not None and execution.error is None
    assert execution.step("said").output == "HI"
    able.stop()
