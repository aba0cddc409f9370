"""The stores' one JSON codec: how free-form JSON is written as text and read back.

Plans, analyses, planning metadata, step parameters and outputs, and toolset records are kept as
JSON text by every backend: text holds every JSON value exactly as the engine produced it (BSON
cannot hold integers beyond 64 bits and restricts ``$``-prefixed keys), and SQLite has no better
type for it. Values JSON cannot represent are written as their ``str()``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "loads"]


def dumps(value: Any) -> str:
    """``value`` as compact-enough JSON text (UTF-8 kept as is)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def loads(text: str | None) -> Any:
    """The value of JSON ``text``; ``None`` for ``None`` (an unset column or field)."""
    return None if text is None else json.loads(text)
