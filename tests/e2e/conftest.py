"""Helpers to run the real ``toolplan`` console script in subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]


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

    def __call__(self, *args: str, timeout: float = 60) -> Completed:
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
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def write_plan(self, plan: dict[str, Any], name: str = "plan.json") -> str:
        path = self.tmp / name
        path.write_text(json.dumps(plan))
        return str(path)


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
