"""The store conformance suite: the tests every :class:`toolplan.store.Store` backend passes.

toolplan's SQLite and MongoDB stores and the benchmark's in-memory store run it, and a backend in
another package runs the same tests in its own test suite. It ships in the ``toolplan`` wheel as a
package of its own, beside ``toolplan`` and never imported by it: it is a pytest suite, and needs
``pytest`` and ``pytest-asyncio`` (``pip install 'toolplan[conformance]'``).

A backend's test module imports the suite and provides one fixture, ``store_uri``: the URI of an
empty store of the backend, a new one for each test::

    # tests/test_store_conformance.py of a package that adds the "mystore" scheme
    import pytest

    from toolplan_conformance import *  # noqa: F403  (every test_*, and the `store` fixture)


    @pytest.fixture
    def store_uri(tmp_path) -> str:
        return f"mystore:///{tmp_path / 'store'}"

The suite's ``store`` fixture opens that URI with :func:`toolplan.store.open_store` and closes it
after the test; a module that opens its store some other way defines its own ``store`` *after*
the import. The URI's scheme must be registered (:mod:`toolplan.store.registry`: an entry point
in the ``toolplan.stores`` group, or ``register_store`` in a fixture). Tests that need another
process's view (concurrent claims and writes, reopening after a crash) open more stores on the
same URI, each with its own connection, so an in-process backend shares one state between the
stores it opens for one URI. The async tests are marked ``pytest.mark.asyncio``. For pytest's
detailed assertion messages in the suite's tests, call
``pytest.register_assert_rewrite("toolplan_conformance")`` in a ``conftest.py``: pytest rewrites
the asserts of test modules only, and this package is imported as a library.

What it covers: round trips and immutability of requests and plans, atomic step transitions and
batched ``update_steps``, the lease state machine and the work queue under concurrent claims,
resume state after reopening, toolset records, cancel requests, tool durations, the result cache,
the LangGraph checkpointer, the list of recent plans, approval gates and the items of
``forEach`` steps, one per write and read a page at a time (:mod:`~toolplan_conformance.core`,
:mod:`~toolplan_conformance.items`, :mod:`~toolplan_conformance.approvals`,
:mod:`~toolplan_conformance.batch`, :mod:`~toolplan_conformance.controls`,
:mod:`~toolplan_conformance.listing`).

The builders of :mod:`~toolplan_conformance.records` (``stored_plan``, ``started_execution``, ...)
and the connections of :mod:`~toolplan_conformance.connections` (``other_store``, ``in_threads``)
are exported too, for a backend's tests of its own.
"""

from __future__ import annotations

from toolplan_conformance import approvals, batch, controls, core, items, listing
from toolplan_conformance.approvals import *  # noqa: F403
from toolplan_conformance.batch import *  # noqa: F403
from toolplan_conformance.connections import in_threads, other_store
from toolplan_conformance.controls import *  # noqa: F403
from toolplan_conformance.core import *  # noqa: F403
from toolplan_conformance.fixtures import store
from toolplan_conformance.items import *  # noqa: F403
from toolplan_conformance.listing import *  # noqa: F403
from toolplan_conformance.records import (
    new_plan,
    new_request,
    queued,
    started_execution,
    step_pairs,
    stored_plan,
)

__all__ = [
    *core.__all__,
    *batch.__all__,
    *controls.__all__,
    *listing.__all__,
    *approvals.__all__,
    *items.__all__,
    "in_threads",
    "new_plan",
    "new_request",
    "other_store",
    "queued",
    "started_execution",
    "step_pairs",
    "stored_plan",
    "store",
]
