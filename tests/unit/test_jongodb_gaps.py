"""Where jongodb, the suite's stand-in for MongoDB (tests/support/mongo_server.py), is known to
differ from a real MongoDB in a way that tests of toolplan depend on.

Everything else jongodb does is proven by the tests that use it: the store conformance suite
(tests/unit/test_store_conformance.py) and the MongoDB end-to-end cases fail on a server that
gets an operation of the MongoDB store wrong. These two differences would not fail them, so they
are pinned here: if a jongodb upgrade changes one, its test fails and names the tests to revisit.
They document jongodb, so they are skipped against a real server (``TOOLPLAN_TEST_MONGODB_URI``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pymongo import MongoClient
from pymongo.database import Database

from tests.support.mongo_server import (
    ENV_EXTERNAL_URI,
    JongoServer,
    MongoTestServer,
    external_mongodb_uri,
    fresh_db_name,
)

pytestmark = [
    pytest.mark.mongodb,
    pytest.mark.skipif(
        external_mongodb_uri() is not None,
        reason=f"documents jongodb behaviour; {ENV_EXTERNAL_URI} points at another server",
    ),
]


@pytest.fixture
def db(mongo_test_server: MongoTestServer) -> Iterator[Database[dict[str, Any]]]:
    with mongo_test_server.client() as client:
        yield client[fresh_db_name()]


def test_a_restarted_server_keeps_its_uri_but_is_empty() -> None:
    """jongodb keeps everything in memory. tests/e2e/test_cli_mongo.py relies on it: its killed
    server test expects the plan to be gone after the restart; and because a restarted jongodb
    cannot stand for a restarted persistent MongoDB, the outage tests there and in
    tests/faults/test_mongo_faults.py pause the server or cut a proxy instead."""
    with JongoServer() as server:
        uri, port, pid = server.uri, server.port, server.pid
        client: MongoClient[dict[str, Any]] = MongoClient(uri, serverSelectionTimeoutMS=2000)
        with client:
            client.r.c.insert_one({"a": 1})
            server.kill()
            server.restart()
            assert (server.uri, server.port) == (uri, port) and server.pid != pid
            # The same client reconnects by itself (retryable reads), to an EMPTY server.
            assert client.r.c.count_documents({}) == 0


def test_find_projections_are_ignored(db: Database[dict[str, Any]]) -> None:
    """MongoDB returns only the projected fields; jongodb returns the whole document. The MongoDB
    store reads with projections (``cancel_requested``, ``tool_durations``): a projection that
    leaves out a field the code then reads fails on MongoDB, but no test on jongodb can catch it.
    Review such projections by hand; if this test fails, jongodb now honours them."""
    db.c.insert_one({"_id": 1, "a": 1, "b": 2})
    assert db.c.find_one({}, {"_id": 0, "a": 1}) == {"_id": 1, "a": 1, "b": 2}
