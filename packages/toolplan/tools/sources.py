"""Where a catalog's tools came from, recorded with each stored plan so it runs again without them.

``toolplan submit --tools my_tools`` stores ``{"modules": ["my_tools"], "mcp": null}`` in the plan's
``meta.toolSources``; a later ``toolplan execute PLAN_ID`` (or a worker) that was given no tools
loads the same ones (:mod:`toolplan.tools.recorded`), instead of failing on an unknown tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolplan.plan_format.meta import TOOL_SOURCES_KEY
from toolplan.store.protocol import PlanRecord

__all__ = ["META_KEY", "ToolSources", "recorded_sources"]

META_KEY = TOOL_SOURCES_KEY
"""The key of a plan's ``meta`` that holds its :class:`ToolSources` (set only by toolplan)."""

_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class ToolSources:
    """Tool modules and the ``mcpServers`` file (absolute path) a catalog was loaded from."""

    modules: tuple[str, ...]
    mcp: str | None = None

    @classmethod
    def of(cls, modules: Iterable[str], mcp: Any = None) -> ToolSources:
        """The sources of a catalog loaded from ``modules`` and the ``mcpServers`` file ``mcp``
        (made absolute). An ``mcpServers`` mapping (not a file) cannot be recorded and is left
        out."""
        path = str(Path(mcp).resolve()) if isinstance(mcp, str | Path) else None
        return cls(tuple(modules), path)

    def to_json(self) -> dict[str, Any]:
        """``{"modules": [...], "mcp": path or null}``."""
        return {"modules": list(self.modules), "mcp": self.mcp}

    @classmethod
    def from_json(cls, data: Any) -> ToolSources | None:
        """The sources stored by :meth:`to_json`; ``None`` for anything else (a module entry
        that is not a dotted Python name included: it is never imported)."""
        if not isinstance(data, Mapping):
            return None
        modules = data.get("modules")
        mcp = data.get("mcp")
        if not isinstance(modules, list) or not all(
            isinstance(m, str) and _MODULE_NAME.fullmatch(m) for m in modules
        ):
            return None
        return cls(tuple(modules), mcp if isinstance(mcp, str) else None)

    def describe(self) -> str:
        """As flags: ``--tools a --tools b --mcp /path``."""
        parts = [f"--tools {module}" for module in self.modules]
        if self.mcp:
            parts.append(f"--mcp {self.mcp}")
        return " ".join(parts) or "no tools"


def recorded_sources(record: PlanRecord) -> ToolSources | None:
    """The tool sources stored with a plan, if any (plans stored before they were recorded,
    or built from Python tool objects, have none)."""
    return ToolSources.from_json((record.meta or {}).get(META_KEY))
