"""The fixture the suite provides: ``store``, the store under test. It needs ``store_uri``, which
the backend's test module provides (see :mod:`toolplan_conformance`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing

import pytest

from toolplan.store import Store, open_store

__all__ = ["store"]


@pytest.fixture
def store(store_uri: str) -> Iterator[Store]:
    """The store under test: ``open_store(store_uri)``, closed after the test. A test module that
    opens its store some other way defines its own ``store`` after importing the suite."""
    with closing(open_store(store_uri)) as opened:
        yield opened
