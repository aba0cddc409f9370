"""Fixtures of the Temporal tests: one real Temporal server per session (``temporal server
start-dev --headless`` on a free port, see ``tests/support/temporal_server.py``), and a task queue
of its own for every test, so workers of one test never take another's work."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.support.temporal_server import TemporalServer
from toolplan.config import TemporalSettings


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalServer]:
    with TemporalServer(tmp_path_factory.mktemp("temporal")) as server:
        yield server


@pytest.fixture
def temporal_settings(temporal_server: TemporalServer) -> TemporalSettings:
    """This test's task queue on the session's server; a lost worker's step moves on in 1 s."""
    return TemporalSettings(
        address=temporal_server.address,
        task_queue=f"test-{uuid.uuid4().hex[:10]}",
        heartbeat_seconds=1.0,
    )
