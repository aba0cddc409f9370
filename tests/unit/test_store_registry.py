"""Store backends are chosen by URI scheme through a registry fed by entry points."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolplan.config import clear_caches
from toolplan.errors import InvalidInput
from toolplan.store import open_store
from toolplan.store.registry import (
    _BUILTIN,
    ENTRY_POINT_GROUP,
    register_store,
    store_schemes,
    store_uri_for,
)
from toolplan.store.sqlite import SqliteStore

REPO = Path(__file__).parents[2]


def test_the_builtin_schemes_are_declared_as_entry_points() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["entry-points"][ENTRY_POINT_GROUP] == _BUILTIN
    assert {"sqlite", "mongodb", "mongodb+srv"} <= set(store_schemes())


def test_unknown_schemes_name_the_known_ones(tmp_path: Path) -> None:
    assert isinstance(open_store(f"sqlite:///{tmp_path / 'a.db'}"), SqliteStore)
    with pytest.raises(InvalidInput, match=r"known schemes: .*mongodb.*sqlite"):
        open_store("nosuch://host/db")
    with pytest.raises(InvalidInput, match="needs a file path"):
        open_store("sqlite:///:memory:")


def test_a_bare_sqlite_path_is_a_sqlite_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("runs.db", "sub/../other.SQLITE", "third.sqlite3"):
        store = open_store(name)
        assert isinstance(store, SqliteStore)
        assert store.uri == f"sqlite:///{(tmp_path / name).resolve()}"
        store.close()
    assert store_uri_for("runs.db") == f"sqlite:///{tmp_path / 'runs.db'}"
    (tmp_path / "existing").write_bytes(b"")  # an existing file, whatever its name
    assert store_uri_for("existing") == f"sqlite:///{tmp_path / 'existing'}"
    # URIs pass through; anything else is still refused, saying what a path may look like
    assert store_uri_for("mongodb://h/db") == "mongodb://h/db"
    for other in ("runs", "data/", str(tmp_path)):
        with pytest.raises(InvalidInput, match=r"a path ending in \.db.*known schemes"):
            open_store(other)
    with pytest.raises(InvalidInput, match="known schemes") as raised:
        open_store("nosuch://host/db")
    assert "a path ending in" not in str(raised.value)


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[Path]:
    """A distribution on sys.path declaring a store backend, as an installed package would."""
    (tmp_path / "teststorepkg.py").write_text(
        "from bench.memstore import MemoryStore\n"
        "def open_memory(uri):\n"
        "    store = MemoryStore()\n"
        "    store.uri = uri\n"
        "    return store\n"
    )
    info = tmp_path / "teststorepkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: teststorepkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nmemplugin = teststorepkg:open_memory\n"
    )
    sys.path.insert(0, str(tmp_path))
    clear_caches()
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("teststorepkg", None)
    clear_caches()


def test_a_package_adds_a_backend_through_an_entry_point(plugin: Path) -> None:
    assert "memplugin" in store_schemes()
    store = open_store("memplugin://one")
    assert store.uri == "memplugin://one" and store.get_plan("plan_1700000000_abcdef") is None


def test_a_backend_can_be_registered_at_run_time() -> None:
    from bench.memstore import MemoryStore

    register_store("scratch", lambda uri: MemoryStore())
    assert "scratch" in store_schemes()
    assert isinstance(open_store("scratch://x"), MemoryStore)
