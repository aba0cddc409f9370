"""Only entry points read the environment (issue 53): the CLI, the API, the adapters, the client
that ``from_env`` builds, and the settings reader they call. Below them, a setting is passed
in (the stores' timeouts travel as ``StoreOptions``); a module that reads ``os.environ`` there
is a setting nobody can see from the settings object."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "packages" / "toolplan"

ENTRY_POINTS = (
    "toolplan.cli",
    "toolplan.api",
    "toolplan.adapters",
    "toolplan.client",
    "toolplan._client_parts",
    "toolplan.__main__",
    "toolplan.config",
)
"""Modules (and packages) that read settings: each builds its client, or is what they call."""

NOT_SETTINGS = {
    "toolplan.tools.mcp": "an MCP config file's own ${VAR} placeholders, as other MCP clients "
    "expand them (the user's variables for the servers, not toolplan's settings)",
    "toolplan._tokens": "tiktoken's own cache folder (TIKTOKEN_CACHE_DIR), set for tiktoken",
}
"""Modules that read the environment for something that is not a toolplan setting."""


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _environment_reads(tree: ast.AST) -> list[int]:
    """Lines that read the process environment: ``os.environ``, ``os.environb``, ``os.getenv``,
    or those names imported from ``os``."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("environ", "environb", "getenv", "getenvb")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ) or (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(a.name in ("environ", "environb", "getenv", "getenvb") for a in node.names)
        ):
            lines.append(node.lineno)
    return lines


def _reads() -> dict[str, list[int]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _environment_reads(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[_module(path)] = lines
    return found


def test_no_module_below_the_entry_points_reads_the_environment() -> None:
    below = {
        module: lines
        for module, lines in _reads().items()
        if not any(module == e or module.startswith(e + ".") for e in ENTRY_POINTS)
        and module not in NOT_SETTINGS
    }
    assert below == {}, "read the setting in toolplan.config and pass it in instead"


def test_the_exceptions_still_read_it() -> None:
    assert set(NOT_SETTINGS) <= set(_reads())  # an exception no longer needed is removed
