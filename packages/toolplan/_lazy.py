"""Public names of a package resolved on first use (a module ``__getattr__``, PEP 562).

``import toolplan`` and ``import toolplan.cli`` stay cheap: LangGraph, LangChain and jsonschema
are imported by the code that needs them, not by a package ``__init__``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing ``names[name]`` (a module path) on first access and
    caching the value in ``namespace`` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
