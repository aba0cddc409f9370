"""A real MongoDB wire-protocol server for tests.

No ``mongod`` can be installed on the project's machines, so tests talk to
*jongodb*, a native (GraalVM) in-memory MongoDB wire-protocol server shipped in
the npm package ``@jongodb/memory-server-bin-linux-x64-gnu``.
``scripts/jongodb.sh install`` puts it under ``.toolplan-dev/jongodb`` (git-ignored).

Usage::

    from tests.support.mongo_server import JongoServer, mongodb_test_server

    with JongoServer() as server:            # always a local jongodb process
        client = MongoClient(server.uri_for("mydb"))
        server.kill()                        # SIGKILL: simulate a crash
        server.restart()                     # same port; the data is GONE (in-memory)

    with mongodb_test_server() as server:    # real server if TOOLPLAN_TEST_MONGODB_URI is set
        if not server.supports_control:
            pytest.skip("needs a server the test can kill")

Environment:

``TOOLPLAN_TEST_MONGODB_URI``
    Use this (real) MongoDB instead of jongodb.  ``kill``/``restart`` raise
    :class:`ServerControlUnsupported` there.
``TOOLPLAN_JONGODB_BIN``
    Path of a jongodb binary to use instead of the project-local install.
``TOOLPLAN_JONGODB_DIR``
    Install prefix (default ``<repo>/.toolplan-dev/jongodb``); shared with the script.
``TOOLPLAN_JONGODB_START_TIMEOUT``
    Seconds to wait for the ``JONGODB_URI=`` line (default 20).

jongodb has **no persistence**: every start is an empty server, and it has no
``drop``/``dropDatabase``/``listCollections``/``create`` commands, so isolate tests
by database name (:func:`fresh_db_name`) rather than by dropping.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import fcntl
import os
import queue
import signal
import subprocess
import threading
import time
import uuid
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO_ROOT / "scripts" / "jongodb.sh"
JONGODB_PACKAGE = "@jongodb/memory-server-bin-linux-x64-gnu"

ENV_EXTERNAL_URI = "TOOLPLAN_TEST_MONGODB_URI"
ENV_BIN = "TOOLPLAN_JONGODB_BIN"
ENV_DIR = "TOOLPLAN_JONGODB_DIR"
ENV_START_TIMEOUT = "TOOLPLAN_JONGODB_START_TIMEOUT"

_URI_PREFIX = "JONGODB_URI="
_FAILURE_PREFIX = "JONGODB_START_FAILURE="
_EOF = object()


class JongoServerError(RuntimeError):
    """jongodb could not be installed, found or started."""


class ServerControlUnsupported(RuntimeError):
    """kill/restart was asked of a server this process does not own."""


# --------------------------------------------------------------------------- install


def install_dir() -> Path:
    """Where ``scripts/jongodb.sh install`` puts the npm package."""
    configured = os.environ.get(ENV_DIR)
    return Path(configured) if configured else REPO_ROOT / ".toolplan-dev" / "jongodb"


def default_binary_path() -> Path:
    return install_dir() / "node_modules" / JONGODB_PACKAGE / "bin" / "jongodb"


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_jongodb_binary(*, install: bool = True) -> Path:
    """Return the jongodb binary, installing it with the script when missing.

    ``TOOLPLAN_JONGODB_BIN`` wins when set (and must then point at an executable).
    """
    override = os.environ.get(ENV_BIN)
    if override:
        path = Path(override)
        if not _is_executable(path):
            raise JongoServerError(f"{ENV_BIN}={override} is not an executable file")
        return path
    path = default_binary_path()
    if _is_executable(path):
        return path
    if not install:
        raise JongoServerError(f"jongodb is not installed at {path}; run: {INSTALL_SCRIPT} install")
    _run_installer()
    if not _is_executable(path):
        raise JongoServerError(f"{INSTALL_SCRIPT} install finished but {path} is missing")
    return path


def _run_installer() -> None:
    # A file lock so parallel test processes (e.g. pytest-xdist) install only once.
    lock_path = install_dir().parent / "jongodb.install.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            proc = subprocess.run(
                ["bash", str(INSTALL_SCRIPT), "install"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if proc.returncode != 0:
        raise JongoServerError(
            f"{INSTALL_SCRIPT} install failed (exit {proc.returncode}):\n"
            f"{proc.stdout}{proc.stderr}".rstrip()
        )


# --------------------------------------------------------------------------- URIs


def with_database(uri: str, dbname: str | None) -> str:
    """``uri`` with its default database replaced by ``dbname`` (options kept).

    If the URI carries credentials but no ``authSource``, the original database
    (or ``admin``) is pinned as ``authSource`` so that changing the database name
    does not change where the user authenticates.
    """
    if dbname is None:
        return uri
    if not dbname or any(ch in dbname for ch in '/\\. "$\x00'):
        raise ValueError(f"invalid MongoDB database name: {dbname!r}")
    parts = urlsplit(uri)
    query = parts.query
    options = parse_qsl(query, keep_blank_values=True)
    if "@" in parts.netloc and not any(k.lower() == "authsource" for k, _ in options):
        original_db = parts.path.lstrip("/") or "admin"
        extra = urlencode({"authSource": original_db}, quote_via=quote)
        query = f"{query}&{extra}" if query else extra
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, query, ""))


def fresh_db_name(prefix: str = "t") -> str:
    """A database name no other test uses (jongodb cannot drop databases)."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


# --------------------------------------------------------------------------- servers


_live_servers: weakref.WeakSet[JongoServer] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for server in list(_live_servers):
        with contextlib.suppress(Exception):
            server.kill()


try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - non-glibc platforms
    _LIBC = None
_PR_SET_PDEATHSIG = 1


def _parent_death_signal() -> None:
    """In the child: die with SIGKILL when the parent dies (Linux), so no server is orphaned."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class JongoServer:
    """A jongodb process on 127.0.0.1, started with ``--port=0`` (or a given port).

    * ``uri`` / ``uri_for(dbname)`` -- connection strings (``mongodb://127.0.0.1:N/db``)
    * ``stop()`` -- SIGTERM, then SIGKILL after ``timeout``; idempotent
    * ``kill()`` -- SIGKILL, to simulate a crash; idempotent
    * ``restart()`` -- start again on the *same* port so existing URIs/clients stay valid;
      jongodb is in-memory, so the restarted server is **empty**
    * ``replica_set="rs0"`` -- start jongodb's single-node replica-set profile
      (``hello`` reports ``setName``; the URI gets ``?replicaSet=rs0``)
    """

    supports_control = True

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        database: str = "test",
        replica_set: str | None = None,
        binary: str | os.PathLike[str] | None = None,
        startup_timeout: float | None = None,
    ) -> None:
        self.host = host
        self.database = database
        self.replica_set = replica_set
        self._requested_port = port
        self._binary = Path(binary) if binary is not None else None
        if startup_timeout is None:
            startup_timeout = float(os.environ.get(ENV_START_TIMEOUT, "20"))
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._tail: collections.deque[str] = collections.deque(maxlen=200)
        self._uri: str | None = None
        self._port: int | None = None
        self.start_seconds: float | None = None
        self.starts = 0

    # -- context manager -------------------------------------------------------------

    def __enter__(self) -> JongoServer:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<JongoServer {self._uri or self.host} {state} pid={self.pid}>"

    # -- properties ------------------------------------------------------------------

    @property
    def binary(self) -> Path:
        if self._binary is None:
            self._binary = find_jongodb_binary()
        return self._binary

    @property
    def uri(self) -> str:
        """The URI jongodb printed (default database ``self.database``)."""
        if self._uri is None:
            raise JongoServerError("server has not been started")
        return self._uri

    def uri_for(self, dbname: str | None) -> str:
        return with_database(self.uri, dbname)

    @property
    def port(self) -> int:
        if self._port is None:
            raise JongoServerError("server has not been started")
        return self._port

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def output(self) -> str:
        """The last lines jongodb wrote (stdout and stderr), for error messages."""
        return "\n".join(self._tail)

    def client(self, dbname: str | None = None, **kwargs: Any) -> Any:
        """A ``pymongo.MongoClient`` for this server (caller closes it)."""
        from pymongo import MongoClient

        kwargs.setdefault("serverSelectionTimeoutMS", 5000)
        return MongoClient(self.uri_for(dbname), **kwargs)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> JongoServer:
        if self.running:
            raise JongoServerError(f"{self!r} is already running")
        port = self._port if self._port is not None else self._requested_port
        self._spawn(port)
        return self

    def restart(self, *, retry_for: float = 5.0) -> JongoServer:
        """Start again on the same port (stopping first if still running).

        The new process is empty: jongodb keeps everything in memory.  Retries for
        ``retry_for`` seconds if the port is momentarily not bindable.
        """
        if self._port is None:
            raise JongoServerError("restart() before the first start()")
        if self.running:
            self.stop()
        deadline = time.monotonic() + retry_for
        while True:
            try:
                self._spawn(self._port)
                return self
            except JongoServerError as exc:
                if "failed to allocate" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def stop(self, timeout: float = 5.0) -> None:
        """Graceful stop: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._reap()

    def kill(self) -> None:
        """SIGKILL the server, as a crash would; the port and URI are kept for restart()."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        self._reap()

    # -- internals -------------------------------------------------------------------

    def _command(self, port: int) -> list[str]:
        cmd = [str(self.binary), f"--host={self.host}", f"--port={port}"]
        cmd.append(f"--database={self.database}")
        if self.replica_set:
            cmd += [
                "--topology-profile=singlenodereplicaset",
                f"--replica-set-name={self.replica_set}",
            ]
        return cmd

    def _spawn(self, port: int) -> None:
        cmd = self._command(port)
        in_main_thread = threading.current_thread() is threading.main_thread()
        self._lines = queue.Queue()
        self._tail.clear()
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                # PDEATHSIG fires when the *thread* that forked exits, so only use it
                # from the main thread (a server started from a worker thread would
                # otherwise die with that thread).
                preexec_fn=_parent_death_signal if in_main_thread else None,
            )
        except OSError as exc:
            raise JongoServerError(f"cannot execute {cmd[0]}: {exc}") from exc
        self._proc = proc
        reader = threading.Thread(
            target=self._read_output, args=(proc,), name=f"jongodb-{proc.pid}", daemon=True
        )
        reader.start()
        self._reader = reader
        try:
            uri = self._wait_for_uri(proc, started)
        except BaseException:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            self._reap()
            raise
        self._uri = uri
        self._port = int(urlsplit(uri).port or 0)
        self.start_seconds = time.monotonic() - started
        self.starts += 1
        _live_servers.add(self)

    def _read_output(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            for raw in proc.stdout:
                line = raw.rstrip("\n")
                self._tail.append(line)
                self._lines.put(line)
        self._lines.put(_EOF)

    def _wait_for_uri(self, proc: subprocess.Popen[str], started: float) -> str:
        deadline = started + self.startup_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JongoServerError(
                    f"jongodb printed no {_URI_PREFIX} line within {self.startup_timeout:.1f}s "
                    f"(command: {' '.join(self._command_for_message(proc))}); output so far:\n"
                    f"{self.output or '<none>'}"
                )
            try:
                item = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if item is _EOF:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(2)
                raise JongoServerError(
                    f"jongodb exited (code {proc.poll()}) before printing {_URI_PREFIX}; "
                    f"output:\n{self.output or '<none>'}"
                )
            assert isinstance(item, str)
            if item.startswith(_FAILURE_PREFIX):
                # The stack trace follows; give the reader a moment to collect it.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(2)
                raise JongoServerError(
                    f"jongodb failed to start: {item[len(_FAILURE_PREFIX) :]}\n{self.output}"
                )
            if item.startswith(_URI_PREFIX):
                return item[len(_URI_PREFIX) :].strip()

    @staticmethod
    def _command_for_message(proc: subprocess.Popen[str]) -> list[str]:
        args = proc.args
        return [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]

    def _reap(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdout is not None:
            with contextlib.suppress(Exception):
                proc.stdout.close()
        if self._reader is not None:
            self._reader.join(timeout=2)
        self._reader = None
        _live_servers.discard(self)


class ExternalMongoServer:
    """A MongoDB server this process does not own (``TOOLPLAN_TEST_MONGODB_URI``).

    Same read-only surface as :class:`JongoServer`; ``kill``/``restart`` raise
    :class:`ServerControlUnsupported` and ``stop`` is a no-op.
    """

    supports_control = False

    def __init__(self, uri: str) -> None:
        self._uri = uri

    def __enter__(self) -> ExternalMongoServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<ExternalMongoServer from ${ENV_EXTERNAL_URI}>"

    @property
    def uri(self) -> str:
        return self._uri

    def uri_for(self, dbname: str | None) -> str:
        return with_database(self._uri, dbname)

    @property
    def running(self) -> bool:
        return True

    def client(self, dbname: str | None = None, **kwargs: Any) -> Any:
        from pymongo import MongoClient

        kwargs.setdefault("serverSelectionTimeoutMS", 5000)
        return MongoClient(self.uri_for(dbname), **kwargs)

    def start(self) -> ExternalMongoServer:
        return self

    def stop(self, timeout: float = 5.0) -> None:
        return None

    def _unsupported(self, what: str) -> ServerControlUnsupported:
        return ServerControlUnsupported(
            f"{what}() is not supported on the external server from ${ENV_EXTERNAL_URI}; "
            "skip tests that need to crash/restart the server in that mode"
        )

    def kill(self) -> None:
        raise self._unsupported("kill")

    def restart(self, **kwargs: Any) -> ExternalMongoServer:
        raise self._unsupported("restart")


MongoTestServer = JongoServer | ExternalMongoServer


def external_mongodb_uri() -> str | None:
    """``TOOLPLAN_TEST_MONGODB_URI`` if set (and not blank), else None."""
    uri = os.environ.get(ENV_EXTERNAL_URI, "").strip()
    return uri or None


def mongodb_test_server(**jongo_kwargs: Any) -> MongoTestServer:
    """An *unstarted-or-external* server: use it as a context manager.

    The real server from ``TOOLPLAN_TEST_MONGODB_URI`` when set, else a new
    :class:`JongoServer` (``jongo_kwargs`` are passed to it).
    """
    uri = external_mongodb_uri()
    if uri is not None:
        return ExternalMongoServer(uri)
    return JongoServer(**jongo_kwargs)


_shared_lock = threading.Lock()
_shared_server: JongoServer | None = None


def mongodb_test_uri(dbname: str | None = None) -> str:
    """A URI for tests: ``TOOLPLAN_TEST_MONGODB_URI`` if set, else a process-wide jongodb.

    The shared jongodb starts on first use and is killed at interpreter exit.  Tests
    that need to kill/restart the server must start their own :class:`JongoServer`.
    """
    external = external_mongodb_uri()
    if external is not None:
        return with_database(external, dbname)
    global _shared_server
    with _shared_lock:
        if _shared_server is None or not _shared_server.running:
            _shared_server = JongoServer().start()
        return _shared_server.uri_for(dbname)
