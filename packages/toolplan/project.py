"""The project a command runs in: its config file and where its data lives by default.

A project is the nearest folder, from the current one upwards, that holds a ``toolplan.toml`` or a
``pyproject.toml`` with a ``[tool.toolplan]`` table::

    [tool.toolplan]                 # in toolplan.toml the keys may also stand at the top level
    tools = ["blog", "my_tools"]    # tool modules; the project folder is importable
    mcp = "mcp.json"                # an mcpServers file, relative to the project folder
    store = "sqlite:///.toolplan/toolplan.db"   # relative SQLite paths: from the project folder
    cache_ttl = 60                  # a tuning knob (TUNING_KEYS; toolplan.config.tuning)

Without a project, the default store is ``.toolplan/toolplan.db`` in the nearest folder upwards
that already has a ``.toolplan/`` folder, else in the current folder. So ``toolplan show`` in a
subfolder finds the plans made at the top, instead of silently opening a new, empty store.

Both searches stop at the repository root (the first folder upwards with a ``.git``, which is
still searched) and never reach the home folder from below it, nor anything above it, nor a
folder anyone may write to (the system temporary folder): a config or a store left in such a
parent folder belongs to someone else, and must not change what a command run below it imports
or where it writes.
"""

from __future__ import annotations

import os
import stat
import sys
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any

from toolplan.errors import InvalidInput

__all__ = [
    "CONFIG_FILE",
    "DATA_DIR",
    "TUNING_KEYS",
    "ProjectConfig",
    "default_store_uri",
    "find_project",
    "search_folders",
]

CONFIG_FILE = "toolplan.toml"
DATA_DIR = ".toolplan"
TUNING_KEYS: tuple[str, ...] = (
    "backoff",
    "lease_seconds",
    "cancel_poll",
    "cache_ttl",
    "output_limit_bytes",
    "graph_checkpoints",
    "adaptive_timeouts",
    "timeout_min_observations",
    "timeout_factor",
    "timeout_history",
    "estimate_default_ms",
    "prices",
    "temporal_heartbeat",
    "typed_schema_max_tools",
    "prompts_dir",
    "llm_retries",
)
"""The tuning knobs a project may set beside its tools and store: values nobody but an
operator tuning a deployment changes. :mod:`toolplan.config.tuning` checks their values and
documents each (docs/operations.md, "Tuning")."""
_PATH_KEYS = ("prices", "prompts_dir")
"""Tuning knobs that name a file or folder: relative to the project folder."""
_KEYS = ("tools", "mcp", "store", *TUNING_KEYS)


@dataclass(frozen=True)
class ProjectConfig:
    """What a project's config file sets; paths are absolute."""

    path: Path
    """The config file."""
    tools: tuple[str, ...] | None = None
    mcp: str | None = None
    store: str | None = None
    tuning: tuple[tuple[str, Any], ...] = field(default=())
    """The tuning knobs it sets (:data:`TUNING_KEYS`), as written (paths made absolute)."""

    @property
    def folder(self) -> Path:
        return self.path.parent


def _table(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InvalidInput(f"cannot read the project config {str(path)!r}: {error}") from None
    tool = data.get("tool")
    table = tool.get("toolplan") if isinstance(tool, dict) else None
    if path.name == CONFIG_FILE:
        return table if isinstance(table, dict) else data
    return table if isinstance(table, dict) else None


def _parse(path: Path, table: dict[str, Any]) -> ProjectConfig:
    where = f"{str(path)!r}"
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise InvalidInput(
            f"unknown key(s) {', '.join(unknown)} in the toolplan config {where}; "
            f"known: {', '.join(_KEYS)}"
        )
    tools = table.get("tools")
    if tools is not None:
        if isinstance(tools, str):
            tools = [t.strip() for t in tools.split(",")]
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise InvalidInput(f"'tools' in {where} must be a list of module names")
        tools = tuple(t for t in tools if t)
    for key in ("mcp", "store"):
        if key in table and not isinstance(table[key], str):
            raise InvalidInput(f"{key!r} in {where} must be a string")
    mcp = table.get("mcp")
    if mcp:
        mcp = str((path.parent / mcp).resolve())
    store = table.get("store")
    if store and store.startswith("sqlite:///"):
        store = _absolute_sqlite(store, path.parent)
    tuning = tuple(
        (
            key,
            str((path.parent / value).resolve())
            if key in _PATH_KEYS and isinstance(value, str)
            else value,
        )
        for key, value in table.items()
        if key in TUNING_KEYS
    )
    return ProjectConfig(
        path=path, tools=tools, mcp=mcp or None, store=store or None, tuning=tuning
    )


def _absolute_sqlite(uri: str, base: Path) -> str:
    target = uri[len("sqlite:///") :]
    if not target or target == ":memory:" or Path(target).is_absolute():
        return uri
    return f"sqlite:///{(base / target).resolve()}"


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except RuntimeError:  # no HOME and no password entry: there is no home folder to stop at
        return None


def _shared(folder: Path) -> bool:
    """Whether anyone may create files in ``folder`` (``/tmp``, ``/var/tmp``)."""
    if os.name != "posix":
        return False  # Windows folders report no such bit
    try:
        return bool(folder.stat().st_mode & stat.S_IWOTH)
    except OSError:  # unreadable: nothing in it can be read either
        return True


def search_folders(start: Path | None = None) -> Iterator[Path]:
    """The folders searched for a project config or a ``.toolplan/`` folder, nearest first.

    From ``start`` (default: the current folder) upwards, up to and including the repository root
    (a folder holding ``.git``: a folder, or a file in a worktree or submodule). The home folder is
    searched only when ``start`` is the home folder itself, and nothing above it ever is; nor is a
    world-writable folder, where any user may have left a ``toolplan.toml`` for others to run.
    """
    here = (start or Path.cwd()).resolve()
    home = _home()
    for folder in (here, *here.parents):
        if folder == home and here != home:
            return  # the home folder's files are for commands run in it, not below it
        if _shared(folder):
            return
        yield folder
        if folder == home or (folder / ".git").exists():
            return


def find_project(start: Path | None = None) -> ProjectConfig | None:
    """The config of the project ``start`` (default: the current folder) belongs to, or ``None``.

    Looks in :func:`search_folders` only, nearest first.
    """
    for folder in search_folders(start):
        for name in (CONFIG_FILE, "pyproject.toml"):
            candidate = folder / name
            if candidate.is_file():
                table = _table(candidate)
                if table is not None:
                    return _parse(candidate, table)
    return None


def default_store_uri(project: ProjectConfig | None, start: Path | None = None) -> str:
    """Where the data lives when no store is given: see the module docstring. Absolute."""
    if project is not None:
        return f"sqlite:///{project.folder / DATA_DIR / 'toolplan.db'}"
    here = (start or Path.cwd()).resolve()
    for folder in search_folders(here):
        if (folder / DATA_DIR).is_dir():
            return f"sqlite:///{folder / DATA_DIR / 'toolplan.db'}"
    return f"sqlite:///{here / DATA_DIR / 'toolplan.db'}"


class _ProjectModules(MetaPathFinder):
    """Finds top-level modules in a project folder, asked only after every other finder.

    Not a ``sys.path`` entry, even a last one: a folder there takes part in the search for every
    name, and a regular package (``langgraph/__init__.py``) on any ``sys.path`` entry wins over
    an installed *namespace* package (``langgraph`` is one, spread over several distributions).
    Asked last, this finder only sees names nothing installed provides.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is not None:  # a submodule: its package's own __path__ finds it
            return None
        return PathFinder.find_spec(fullname, [str(self.folder)])


def make_importable(project: ProjectConfig | None) -> None:
    """Let the project's own tool modules be imported by name, as if from the project folder.

    Only names that no installed package (nor ``PYTHONPATH``) provides come from the project
    folder: a folder in it that happens to be named like an installed distribution
    (``langgraph/``, ``pydantic/``) never replaces it.
    """
    if project is None:
        return
    if any(isinstance(f, _ProjectModules) and f.folder == project.folder for f in sys.meta_path):
        return
    sys.meta_path.append(_ProjectModules(project.folder))
