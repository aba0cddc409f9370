"""The one place per backend where driver errors become toolplan errors: real SQLite errors and
pymongo errors in, one-line ``StoreUnavailable`` / ``InvalidInput`` out."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from pymongo.errors import DocumentTooLarge, OperationFailure, ServerSelectionTimeoutError

from toolplan.config import Settings
from toolplan.errors import InvalidInput, StoreUnavailable
from toolplan.store import open_store
from toolplan.store._mongo_faults import translate as mongo_translate
from toolplan.store._sqlite_faults import (
    BUSY_TIMEOUT_ENV,
    DEFAULT_BUSY_TIMEOUT,
    is_busy,
    retry_busy,
    translate,
)
from toolplan.store.mongo import MongoStore
from toolplan.store.protocol import (
    ExecutionLog,
    PlanRepository,
    RecordStore,
    ResultCache,
    WorkQueue,
)
from toolplan.store.sqlite import SqliteStore

URI = "sqlite:///x.db"


def _error(run: object) -> sqlite3.Error:
    try:
        run()  # type: ignore[operator]
    except sqlite3.Error as error:
        return error
    raise AssertionError("no sqlite3 error")


def busy_timeout_from_env(env: dict[str, str]) -> float:
    """The lock wait the settings read and pass to the store (the store reads no variable)."""
    return Settings.from_env(env).store_options.busy_timeout


def test_busy_timeout_setting(tmp_path: Path) -> None:
    assert busy_timeout_from_env({}) == DEFAULT_BUSY_TIMEOUT
    assert busy_timeout_from_env({BUSY_TIMEOUT_ENV: "2.5"}) == 2.5
    assert busy_timeout_from_env({BUSY_TIMEOUT_ENV: "0"}) == 0
    for bad in ("soon", "-1", "nan", "inf"):
        with pytest.raises(InvalidInput, match=BUSY_TIMEOUT_ENV):
            busy_timeout_from_env({BUSY_TIMEOUT_ENV: bad})
    options = Settings.from_env({BUSY_TIMEOUT_ENV: "2.5"}).store_options
    store = open_store(f"sqlite:///{tmp_path / 's.db'}", options=options)
    assert isinstance(store, SqliteStore) and store.busy_timeout == 2.5
    store.close()


def test_real_sqlite_errors_map_to_one_line_naming_the_store(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    not_a_db = _error(lambda: sqlite3.connect(garbage).execute("SELECT * FROM sqlite_master"))
    cant_open = _error(lambda: sqlite3.connect("/proc/nope/x.db").execute("SELECT 1"))
    limited = sqlite3.connect(":memory:")
    limited.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100)
    too_big = _error(lambda: limited.execute("SELECT ?", ("x" * 1000,)))

    for error, kind, words in (
        (not_a_db, StoreUnavailable, "is not a usable database"),
        (cant_open, StoreUnavailable, "cannot open the SQLite store"),
        (too_big, InvalidInput, "refused a value"),
    ):
        mapped = translate(error, URI)
        assert isinstance(mapped, kind) and words in mapped.message, mapped.message
        assert URI in mapped.message and "\n" not in mapped.message


def test_busy_is_retried_until_the_timeout_then_names_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (a)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    attempts = 0

    def write() -> None:
        nonlocal attempts
        attempts += 1
        other.execute("INSERT INTO t VALUES (1)")

    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="is locked by another process") as caught:
        retry_busy(write, URI, 0.3)
    assert time.monotonic() - started >= 0.3 and attempts > 2  # the whole timeout, not less
    assert BUSY_TIMEOUT_ENV in caught.value.message
    holder.execute("ROLLBACK")
    retry_busy(write, URI, 0.3)  # free again: goes through
    assert other.execute("SELECT count(*) FROM t").fetchone()[0] == 1


def test_only_lock_errors_count_as_busy() -> None:
    assert is_busy(sqlite3.OperationalError("database is locked"))
    assert not is_busy(sqlite3.OperationalError("disk I/O error"))
    assert not is_busy(ValueError("database is locked"))


def test_store_methods_never_leak_sqlite_errors(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db", busy_timeout=0.1)
    store._db.close()  # any call now fails inside sqlite3
    with pytest.raises(StoreUnavailable, match="SQLite store"):
        store.get_plan("plan_1700000000_abc")


@pytest.mark.parametrize("backend", [SqliteStore, MongoStore])
def test_every_store_method_is_inside_the_fault_mapping(backend: type) -> None:
    roles = (PlanRepository, ExecutionLog, WorkQueue, RecordStore, ResultCache)
    methods = {name for role in roles for name in vars(role) if not name.startswith("_")}
    assert {"request_cancel", "cache_put", "tool_durations"} <= methods
    unguarded = sorted(m for m in methods if not hasattr(getattr(backend, m), "__wrapped__"))
    assert unguarded == []


def test_controls_on_a_broken_sqlite_store_are_store_unavailable(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db", busy_timeout=0.1)
    store._db.close()
    for call in (
        lambda: store.request_cancel("plan_1700000000_abc", []),
        lambda: store.cache_put("k", "t", 1, 60),
        lambda: store.tool_durations(["t"], 5),
    ):
        with pytest.raises(StoreUnavailable, match="SQLite store"):
            call()


def test_mongo_errors_map_with_the_password_hidden() -> None:
    uri = "mongodb://alice:***@db:27017/tp"
    down = mongo_translate(ServerSelectionTimeoutError("db:27017: refused s3cret"), uri, "s3cret")
    assert isinstance(down, StoreUnavailable) and "cannot reach the MongoDB store" in down.message
    assert "s3cret" not in down.message
    too_big = mongo_translate(DocumentTooLarge("BSON document too large (20000123 bytes)"), uri)
    assert isinstance(too_big, InvalidInput) and "16 MB" in too_big.message
    denied = mongo_translate(OperationFailure("not authorized", code=13), uri)
    assert isinstance(denied, StoreUnavailable) and "refused access" in denied.message
    surrogate = mongo_translate(_encode_error(), uri)
    assert isinstance(surrogate, InvalidInput) and "not valid Unicode" in surrogate.message


def _encode_error() -> UnicodeEncodeError:
    try:
        "a\ud800".encode()
    except UnicodeEncodeError as error:
        return error
    raise AssertionError
