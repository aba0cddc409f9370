"""Fixtures shared by every test directory: a MongoDB server for the session, the rule that a
MongoDB or browser test which skips in CI is a failure, and a guard against stores leaked into the shared
temporary folder.

The server is jongodb (an in-memory MongoDB wire-protocol server, see
``tests/support/mongo_server.py``), or the real MongoDB named by ``TOOLPLAN_TEST_MONGODB_URI``.
These fixtures never skip: if jongodb cannot be installed or started, the tests that need it
error out with the reason.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mongo_server import MongoTestServer, fresh_db_name, mongodb_test_server
from toolplan.project import DATA_DIR

SHARED_STORE = Path(tempfile.gettempdir()) / DATA_DIR
"""The default store a command would make when run in the temporary folder itself. Every test's
``tmp_path`` lies below that folder, so a store there is found by later tests that rely on the
default store (issue 29, item 9): no test may leave one."""


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def mongo_test_server() -> Iterator[MongoTestServer]:
    """The MongoDB server of this test session (started once, stopped at the end)."""
    with mongodb_test_server() as server:
        yield server


@pytest.fixture
def mongodb_uri(mongo_test_server: MongoTestServer) -> Iterator[str]:
    """A URI naming a database no other test uses (jongodb cannot drop databases)."""
    name = fresh_db_name("tp")
    yield mongo_test_server.uri_for(name)
    if not mongo_test_server.supports_control:  # a real server: clean up after ourselves
        with contextlib.suppress(Exception), mongo_test_server.client() as client:
            client.drop_database(name)


@pytest.fixture(autouse=True)
def _the_default_plan_format(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run what users run: the default plan format (Python), whatever the environment
    running the suite says. A test about the JSON format says so (:func:`json_plans`)."""
    monkeypatch.delenv("TOOLPLAN_PLAN_FORMAT", raising=False)


@pytest.fixture
def json_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON plan format (``TOOLPLAN_PLAN_FORMAT=json``), for a test about it: a model
    scripted to answer JSON plans (tool calls, a JSON schema). Modules of such tests say
    ``pytestmark = pytest.mark.usefixtures("json_plans")``."""
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "json")


@pytest.fixture(autouse=True)
def _no_store_in_the_shared_temp_folder() -> Iterator[None]:
    """Fail the test during which a ``.toolplan/`` appears in the temporary folder itself.

    Checked around every test, not once per session, so the failure names the test that leaked.
    One that was there before the test is left alone: it may belong to someone else's run.
    """
    existed = SHARED_STORE.exists()
    yield
    if not existed and SHARED_STORE.exists():
        pytest.fail(
            f"this test left a store in the shared temporary folder: {str(SHARED_STORE)!r}. "
            "Give every command the test runs a store of its own (TOOLPLAN_STORE, or a cwd "
            "inside tmp_path), then delete that folder.",
            pytrace=False,
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    """In CI (``$CI`` set), a ``mongodb`` or ``browser`` test that skips at run time fails.

    A skip there means the MongoDB run (server missing, fixture gave up) or the browser run
    (Playwright or /usr/bin/chromium missing) silently did not happen, which is exactly what CI
    must catch. Declared ``skipif`` variants (tests that document jongodb or real-MongoDB
    behaviour only) are reviewed code and stay skips.
    """
    outcome: Any = yield
    report = outcome.get_result()
    if not (report.skipped and _truthy("CI")) or hasattr(report, "wasxfail"):
        return
    if item.get_closest_marker("skipif"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if item.get_closest_marker("mongodb") is not None:
        report.outcome = "failed"
        report.longrepr = (
            f"MongoDB test skipped in CI: {reason}\n"
            "The MongoDB run must not be skipped in CI; make jongodb installable "
            "(bash scripts/jongodb.sh install) or set TOOLPLAN_TEST_MONGODB_URI."
        )
    elif item.get_closest_marker("browser") is not None:
        report.outcome = "failed"
        report.longrepr = (
            f"Browser test skipped in CI: {reason}\n"
            "The plan-page browser tests must not be skipped in CI; install chromium "
            "(bash scripts/browser.sh) and Playwright (pip install -e '.[dev]')."
        )
