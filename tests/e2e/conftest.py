"""Helpers to run the real ``toolplan`` CLI: in-process by default, in subprocesses on request.

``cli(...)`` runs a command in this process with Typer's ``CliRunner``, set up as the subprocess
it stands for would see the world (:meth:`Cli.in_process`); ``cli.subprocess(...)`` and
``cli.popen(...)`` start the real console script, for tests that need a process: signals, kills,
start-up, closed pipes, interpreter shutdown. ``TOOLPLAN_TEST_CLI=subprocess`` runs every command
in a subprocess (to compare the two, or to rule the harness out).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer
from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.planning.context import PlannerContext

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

MODE_ENV = "TOOLPLAN_TEST_CLI"
"""``subprocess``: every ``cli(...)`` starts the console script, as before in-process runs."""

# The warning filters of a fresh interpreter (python -W / PYTHONWARNINGS aside): what a
# subprocess would have printed on its stderr.
_INTERPRETER_WARNING_FILTERS = [
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
]


@dataclass
class Completed:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


class Cli:
    """Runs ``toolplan`` with an isolated store, test tools and a call log."""

    def __init__(self, tmp: Path, store_uri: str | None = None, *, in_process: bool = True) -> None:
        self.tmp = tmp
        self.in_process = in_process and os.environ.get(MODE_ENV) != "subprocess"
        """Run ``cli(...)`` in this process (unless a ``prefix`` is set); else in a subprocess."""
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
        """Run ``toolplan *args`` to its end: in this process unless the test asked for a
        subprocess (``Cli(in_process=False)``) or set a ``prefix``, which needs a process."""
        if self.in_process and not self.prefix:
            return self.run_in_process(*args, timeout=timeout)
        return self.subprocess(*args, timeout=timeout)

    def subprocess(self, *args: str, timeout: float = HUNG_AFTER) -> Completed:
        """Run ``toolplan *args`` in a subprocess of its own."""
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

    def run_in_process(self, *args: str, timeout: float = HUNG_AFTER) -> Completed:
        """Run ``toolplan *args`` in this process with Typer's ``CliRunner``, as the subprocess
        would: its environment exactly (variables it would not inherit removed), its working
        directory, its ``PYTHONPATH`` entries importable (and the modules found there forgotten
        afterwards), fresh process-wide caches and consoles, separate stdout and stderr, the
        traceback of an uncaught exception and the warnings a fresh interpreter would print on
        stderr, and logging with no handler (the interpreter's last resort: WARNING on stderr).

        A command still running after ``timeout`` seconds raises ``subprocess.TimeoutExpired``
        as ``subprocess.run`` would, as soon as Python code runs again (a SIGALRM cannot cut a
        long C call short, as a kill would: hang guards around one stay in subprocesses)."""
        from toolplan.cli import app

        saved_env = dict(os.environ)
        env: dict[str, str | None] = {name: None for name in os.environ if name not in self.env}
        env.update(self.env)
        # bytes arguments arrive in a process's sys.argv as os.fsdecode makes them
        argv = [os.fsdecode(arg) for arg in args]
        try:
            with (
                _process_state(self.tmp, self.env.get("PYTHONPATH", "")),
                warnings.catch_warnings(record=True) as caught,
            ):
                warnings.resetwarnings()
                for action, category, module in _INTERPRETER_WARNING_FILTERS:
                    warnings.filterwarnings(action, category=category, module=module or "")
                with _deadline([*self.command, *args], timeout):
                    result = _runner_class()(env=env).invoke(app, argv, catch_exceptions=True)
        finally:  # also what the command itself set (os.environ.setdefault, say)
            os.environ.clear()
            os.environ.update(saved_env)
        stderr = result.stderr
        for warning in caught:
            stderr += warnings.formatwarning(
                warning.message, warning.category, warning.filename, warning.lineno, warning.line
            )
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            stderr += "".join(traceback.format_exception(result.exception))
        return Completed(result.exit_code, result.stdout, stderr)

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


class _TimedOut(BaseException):
    """Raised by the SIGALRM handler: a BaseException, so that neither the CLI's handler of
    unexpected errors nor ``CliRunner`` turns it into an exit code."""


@contextlib.contextmanager
def _deadline(argv: list[str], timeout: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only
        return

    def expire(signum: int, frame: Any) -> None:
        raise _TimedOut

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    except _TimedOut:
        raise subprocess.TimeoutExpired(argv, timeout) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@functools.cache
def _runner_class() -> type[Any]:
    from typer.testing import CliRunner

    class Runner(CliRunner):
        """``CliRunner`` without Click's help width fixed at 80 (a process's help follows
        ``COLUMNS``, capped at 78 columns), whose commands start with fresh process-wide caches
        and consoles."""

        @contextlib.contextmanager
        def isolation(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
            import click.formatting
            from rich.console import Console

            from toolplan.config import clear_caches

            with super().isolation(*args, **kwargs) as streams:
                forced = click.formatting.FORCED_WIDTH
                click.formatting.FORCED_WIDTH = None
                # Caches and consoles read the environment when built: build them in this one.
                clear_caches()
                _clear_library_caches()  # a test's own model calls, before its first command
                for console in _consoles(Console):
                    if hasattr(console, "reset"):  # PipeConsole.reset, wherever it lives
                        console.reset()
                try:
                    yield streams
                finally:
                    click.formatting.FORCED_WIDTH = forced

    return Runner


@contextlib.contextmanager
def _process_state(cwd: Path, pythonpath: str) -> Iterator[None]:
    """What a new process starts with, for one in-process command; the test's own state after."""
    from toolplan.config import clear_caches

    entries = [entry for entry in pythonpath.split(os.pathsep) if entry]
    added = [entry for entry in entries if entry not in sys.path]
    saved_path = list(sys.path)
    sys.path[:0] = added
    importlib.invalidate_caches()
    before = set(sys.modules)
    root = logging.getLogger()
    handlers = list(root.handlers)
    for handler in handlers:  # pytest's capture; a process has none (the last resort prints)
        root.removeHandler(handler)
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(previous)
        for handler in handlers:
            root.addHandler(handler)
        sys.path[:] = saved_path
        for name in set(sys.modules) - before:  # the next command imports them afresh
            if _under(getattr(sys.modules[name], "__file__", None), added):
                del sys.modules[name]
        for entry in added:
            sys.path_importer_cache.pop(entry, None)
        clear_caches()
        _clear_library_caches()


def _clear_library_caches() -> None:
    """Forget what libraries keep per process and a new process would not have.

    langchain-openai shares one httpx client per base URL across the process; its pooled
    connections belong to the event loop of the command that opened them, which ``asyncio.run``
    has closed since ("RuntimeError: Event loop is closed" on the next command's call). Called
    after a command, with no event loop running: a dropped client's ``__del__`` schedules its
    ``aclose()`` on the running loop if there is one, where it would fail on the closed one."""
    utils = sys.modules.get("langchain_openai.chat_models._client_utils")
    dropped = False
    for name in ("_cached_async_httpx_client", "_cached_sync_httpx_client"):
        cached = getattr(utils, name, None)
        if cached is not None and hasattr(cached, "cache_clear") and cached.cache_info().currsize:
            cached.cache_clear()
            dropped = True
    if dropped:
        gc.collect()  # now, while no loop runs, not in the middle of the next command


def _consoles(kind: type[Any]) -> list[Any]:
    """The CLI's consoles (module globals of toolplan's modules, wherever the CLI keeps them),
    each once."""
    found: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if name == "toolplan" or name.startswith("toolplan."):
            for value in list(vars(module).values()):
                if isinstance(value, kind):
                    found[id(value)] = value
    return list(found.values())


def _under(path: str | None, folders: list[str]) -> bool:
    if not path or not folders:
        return False
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(Path(folder).resolve()) for folder in folders)


@pytest.fixture
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    """The CLI on a SQLite store of the test's own; on a fresh MongoDB database for a test that
    :data:`ON_BOTH_STORES` parametrizes and this is its ``mongodb`` case."""
    if getattr(request, "param", "sqlite") == "mongodb":
        return Cli(tmp_path, store_uri=request.getfixturevalue("mongodb_uri"))
    return Cli(tmp_path)


ON_BOTH_STORES = pytest.mark.parametrize(
    "cli", ["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)], indirect=True
)
"""Run a test with ``cli`` on SQLite and on MongoDB.

End-to-end cases run on SQLite: what a store backend does is the store conformance suite's
subject (tests/unit/test_store_conformance.py runs it on SQLite, MongoDB and the in-memory store).
A case is given MongoDB as well only where what it checks happens between processes through a
wire store (a cancel request seen by a run in another process, say); the MongoDB-only end-to-end
cases are in test_cli_mongo.py, test_workers.py and tests/faults/test_mongo_faults.py."""


@pytest.fixture
def llm() -> Iterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible server (script its replies with ``llm.script``)."""
    with FakeOpenAIServer(api_key="sk-test") as server:
        yield server


def as_model_endpoint(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> FakeOpenAIServer:
    """``server`` as this process's model endpoint: ``OPENAI_*`` point at it, and the model and
    structured-output method are the defaults (for a module's ``llm`` fixture, overriding this
    file's: ``def llm(llm, monkeypatch): return as_model_endpoint(llm, monkeypatch)``)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    monkeypatch.delenv("TOOLPLAN_STRUCTURED_METHOD", raising=False)
    return server


def planner_context(tmp_path: Path, **kwargs: Any) -> PlannerContext:
    """The planner context of a client on a SQLite store in ``tmp_path``, configured from the
    environment (``as_model_endpoint``)."""
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    return Toolplan(settings=settings).planner_context(**kwargs)


@pytest.fixture
def cli_llm(cli: Cli, llm: FakeOpenAIServer) -> Cli:
    """``cli`` pointed at ``llm``, without retries (each request the test scripts is one call)."""
    cli.env.update(
        {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url, "TOOLPLAN_LLM_RETRIES": "0"}
    )
    cli.env.pop("TOOLPLAN_MODEL", None)
    return cli


CliFactory = Callable[[Path], Cli]
