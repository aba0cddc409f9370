"""Tools: the catalog that plans are validated against and executed with."""

from toolplan.tools.catalog import (
    BUILTIN_TOOLSETS,
    RESERVED_TOOL_NAMES,
    ToolCatalog,
    ToolInfo,
    ToolStats,
    load_tool_modules,
    tagged,
)

__all__ = [
    "BUILTIN_TOOLSETS",
    "RESERVED_TOOL_NAMES",
    "ToolCatalog",
    "ToolInfo",
    "ToolStats",
    "load_tool_modules",
    "tagged",
]
