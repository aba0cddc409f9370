"""Helpers to run the real ``toolplan`` console script in subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]

HUNG_AFTER = 300.0
"""Seconds after which a CLI process that has not reached the awaited event counts as hung.

Only a guard against hangs, never a timing assertion: tests wait for events (a line, a file, a
record), and on a busy 2-core CI machine one CLI start alone takes 10-20 s (it imports
LangChain), so a bound of 30 s failed slow runs that would have passed."""

# A shell without job control starts background commands (`pytest ... &` in a script) with SIGINT
# ignored, and a child inherits an ignored signal: the Ctrl-C tests' SIGINT would then reach no
# one, and the CLI would run on as if it had never come. A caught signal reverts to the default
# in a child, so catching it here gives every CLI process the Ctrl-C a terminal would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass
class Completed:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


class Cli:
    """Runs ``toolplan`` with an isolated store, test tools and a call log."""

    def __init__(self, tmp: Path, store_uri: str | None = None) -> None:
        self.tmp = tmp
        self.log = tmp / "calls.jsonl"
        self.gate = tmp / "gate.open"
        self.env = {
            **os.environ,
            "TOOLPLAN_STORE": store_uri or f"sqlite:///{tmp / 'toolplan.db'}",
            "TOOLPLAN_TOOLS": "blog,metrics,weather,tests.support.tools",
            "TOOLPLAN_TEST_LOG": str(self.log),
            "TOOLPLAN_TEST_GATE": str(self.gate),
            "TOOLPLAN_BACKOFF": "0.001",
            "PYTHONPATH": str(REPO),
            "COLUMNS": "200",
        }
        script = shutil.which("toolplan", path=str(Path(sys.executable).parent))
        self.command = [script] if script else [sys.executable, "-m", "toolplan"]
        self.prefix: list[str] = []
        """A command the CLI runs under (``prlimit ...``, a namespace), empty by default."""

    def argv(self, *args: str) -> list[str]:
        return [*self.prefix, *self.command, *args]

    def __call__(self, *args: str, timeout: float = HUNG_AFTER) -> Completed:
        done = subprocess.run(
            self.argv(*args),
            env=self.env,
            cwd=self.tmp,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Completed(done.returncode, done.stdout, done.stderr)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args),
            env=self.env,
            cwd=self.tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def calls(self) -> list[dict[str, Any]]:
        """The test tools' calls logged so far (a line being written is not one yet)."""
        if not self.log.exists():
            return []
        lines = self.log.read_text().split("\n")[:-1]  # the last piece has no newline yet
        return [json.loads(line) for line in lines]

    def wait_for_call(self, step: str, process: subprocess.Popen[str]) -> None:
        """Wait until the test tools logged a call of ``step`` by the running ``process``."""
        wait_for(lambda: any(c["step"] == step for c in self.calls()), f"step {step!r}", process)

    def write_plan(self, plan: dict[str, Any], name: str = "plan.json") -> str:
        path = self.tmp / name
        path.write_text(json.dumps(plan))
        return str(path)


def wait_for(condition: Callable[[], Any], what: str, process: subprocess.Popen[str]) -> None:
    """Poll ``condition`` until it holds; fail if ``process`` exits first, or seems hung."""
    deadline = time.monotonic() + HUNG_AFTER
    while not condition():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the CLI exited ({process.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {what} within {HUNG_AFTER:.0f} s: the CLI seems hung")
        time.sleep(0.02)


def interrupt(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Ctrl-C ``process`` and return its stdout and stderr once it has exited.

    If it hangs, it is aborted (with ``PYTHONFAULTHANDLER=1`` in its environment its threads'
    stacks are then on stderr) and the test fails showing them."""
    process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=HUNG_AFTER)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        _, err = process.communicate(timeout=30)
        pytest.fail(f"the CLI did not stop within {HUNG_AFTER:.0f} s of Ctrl-C:\n{err}")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def llm() -> Iterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible server (script its replies with ``llm.script``)."""
    with FakeOpenAIServer(api_key="sk-test") as server:
        yield server


@pytest.fixture
def cli_llm(cli: Cli, llm: FakeOpenAIServer) -> Cli:
    """``cli`` pointed at ``llm``, without retries (each request the test scripts is one call)."""
    cli.env.update(
        {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url, "TOOLPLAN_LLM_RETRIES": "0"}
    )
    cli.env.pop("TOOLPLAN_MODEL", None)
    return cli


CliFactory = Callable[[Path], Cli]
