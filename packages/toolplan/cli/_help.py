"""Help text that reads like a command-line tool's, not like Python.

typer 0.29 labels every option and argument with its Python type (``--json <bool>``, ``--tools
<list[str]>``, ``{plan_id} <str>``). The CLI's help shows metavars instead, the way click and
most tools do: ``--tools MODULE``, ``--concurrency N``, ``toolplan execute PLAN_ID``; a flag
shows none. Applied once, when the CLI module is imported.
"""

from __future__ import annotations

from typing import Any

import click
from typer.core import TyperArgument, TyperOption

__all__ = ["use_metavars"]


def _option_label(self: TyperOption, ctx: click.Context) -> str | None:
    if self.is_flag or self.count:
        return None
    if self.metavar is not None:
        return self.metavar
    label = self.bare_type().split("[")[-1].rstrip("]")
    return _LABELS.get(label, label.upper())


_LABELS = {"int": "N", "float": "NUMBER", "str": "TEXT", "Path": "PATH", "bool": "BOOL"}


def _argument_label(self: TyperArgument, ctx: click.Context) -> str | None:
    return None  # the argument's name (its metavar) says it


def _argument_usage(self: TyperArgument) -> str:
    name = self.metavar or (self.name or "").upper()
    name = name if self.required else f"[{name}]"
    return f"{name}..." if self.nargs != 1 else name


def use_metavars() -> None:
    """Patch typer's help rendering as the module docstring says (idempotent)."""
    patches: dict[Any, dict[str, Any]] = {
        TyperOption: {"display_type_rich": _option_label},
        TyperArgument: {
            "display_type_rich": _argument_label,
            "_usage_display_name": _argument_usage,
        },
    }
    for cls, methods in patches.items():
        for name, function in methods.items():
            setattr(cls, name, function)
