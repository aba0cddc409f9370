"""The test Temporal server itself: a port taken between choosing it and binding it.

The port is chosen free before the server binds it, so on a busy machine another process can take
it in between. A CI run once lost every Temporal test that way ("bind: address already in use").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.ports import holding
from tests.support.temporal_server import TemporalServer, TemporalServerError, _serving


def test_a_first_start_whose_port_was_taken_moves_to_a_free_one(tmp_path: Path) -> None:
    server = TemporalServer(tmp_path, persist=False)
    taken = server.port
    with holding(taken), server:
        assert server.port != taken
        assert server.running and _serving(server.port)
        log = server.log.read_text()
    assert "address already in use" in log, "the first launch did not meet the taken port"


def test_a_restart_keeps_its_port_and_says_when_it_is_taken(tmp_path: Path) -> None:
    server = TemporalServer(tmp_path, persist=False)
    with server:
        port = server.port
        server.stop()
        with holding(port), pytest.raises(TemporalServerError, match="address already in use"):
            server.start()
        assert server.port == port and not server.running
