"""What a Python plan knows of the tools it calls: the name each one is called by, its parameters
in order, their JSON schemas and whether it only reads.

A tool's name may not be a Python name (``Real-Time_Search``, ``get-weather``, an MCP server's
``weather.current``): its **alias** is (:func:`python_name`: every other character ``_``, a
leading digit or a keyword made safe), and the plan calls it by that alias; the reader maps it
back. A dotted name stays callable as written too (``weather.current(...)`` is Python). Two
tools whose aliases collide get none: a call of that name is refused, naming both.

An argument's name may not be one either: ``from`` and ``class`` are keywords, and
``convert(from="USD")`` is not Python. The signature shows its alias (:func:`argument_aliases`:
``from_``, ``content_type``) and the reader maps a keyword argument of that name back
(:meth:`PythonTool.argument`).
"""

from __future__ import annotations

import functools
import keyword
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PythonTool",
    "PythonTools",
    "aliases",
    "argument_aliases",
    "python_name",
]

_NOT_NAME = re.compile(r"[^A-Za-z0-9_]")


def python_name(tool: str) -> str:
    """The Python name ``tool`` is called by in a plan: itself when it is one, else every other
    character ``_`` (``Real-Time_Search`` is ``Real_Time_Search``), ``_`` before a leading digit
    and after a keyword."""
    if tool.isidentifier() and not keyword.iskeyword(tool):
        return tool
    name = _NOT_NAME.sub("_", tool) or "_"
    if name[0].isdigit():
        name = "_" + name
    if keyword.iskeyword(name):
        name += "_"
    return name


def argument_aliases(parameters: Collection[str]) -> dict[str, str]:
    """Each of a tool's ``parameters`` → the name it is written by in a call (``name=value``):
    itself when it is a Python name, else its :func:`python_name` (``from_``), unless another
    parameter has that name or shares that alias (then only its position reaches it)."""
    names = {parameter: python_name(parameter) for parameter in parameters}
    shared = Counter(names.values())
    return {
        parameter: alias
        if alias != parameter and alias not in names and shared[alias] == 1
        else parameter
        for parameter, alias in names.items()
    }


def aliases(names: Iterable[str]) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Each name a plan calls (an alias, or a tool's own name) → the tool it means, and the
    aliases two or more tools would share (none of them is called by it)."""
    by_alias: dict[str, list[str]] = {}
    for name in names:
        by_alias.setdefault(python_name(name), []).append(name)
    called: dict[str, str] = {}
    collisions: dict[str, tuple[str, ...]] = {}
    for alias, named in by_alias.items():
        own = [n for n in named if n == alias]
        if len(named) == 1 or own:  # a tool named exactly so keeps its own name
            called[alias] = own[0] if own else named[0]
            others = [n for n in named if n not in own]
            if own and others:
                collisions[alias] = (own[0], *others)
        else:
            collisions[alias] = tuple(named)
    return called, collisions


@dataclass(frozen=True)
class PythonTool:
    """One tool as a Python plan sees it."""

    name: str
    """The tool's name in the catalog (what a step's ``tool`` holds)."""
    parameters: tuple[str, ...] = ()
    """Its parameter names in the order of its signature (positional arguments follow it)."""
    schema: Mapping[str, Any] = field(default_factory=dict)
    """The JSON schema of its arguments (``{}``: unknown)."""
    read_only: bool = False
    """No side effect: two identical calls of it in one plan, with no write between them on
    what it reads, are one step."""
    resources: tuple[str, ...] = ("default",)
    """What it reads or writes."""

    def argument(self, written: str) -> str:
        """The parameter a keyword argument written ``written`` names: itself, or the one
        parameter whose alias it is (``from_`` for ``from``: :func:`argument_aliases`)."""
        return self._by_alias.get(written, written)

    @functools.cached_property
    def _by_alias(self) -> dict[str, str]:
        return {alias: name for name, alias in argument_aliases(self.parameters).items()}

    def argument_schema(self, argument: str) -> Mapping[str, Any] | None:
        """The JSON schema of one argument, when declared."""
        properties = self.schema.get("properties")
        found = properties.get(argument) if isinstance(properties, Mapping) else None
        return found if isinstance(found, Mapping) else None


class PythonTools(Mapping[str, PythonTool]):
    """The tools a Python plan may call, by the names it calls them (an alias, or a dotted name
    as written), each once; which aliases collide."""

    def __init__(self, tools: Iterable[PythonTool]) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._names, self.collisions = aliases(self._tools)
        """Aliases two or more tools would share: none of them is called by it."""
        for name in self._tools:
            if "." in name and all(
                part.isidentifier() and not keyword.iskeyword(part) for part in name.split(".")
            ):
                self._names.setdefault(name, name)  # weather.current(...) is Python too

    @classmethod
    def from_signatures(cls, signatures: Mapping[str, Sequence[str]]) -> PythonTools:
        """Tools known by their parameter names only (no schema; each has side effects)."""
        return cls(PythonTool(name, tuple(signatures[name])) for name in signatures)

    def alias(self, tool: str) -> str | None:
        """The name ``tool`` is called by in a plan; ``None`` when its alias collides."""
        alias = python_name(tool)
        return alias if self._names.get(alias) == tool else None

    def tool(self, called: str) -> PythonTool | None:
        """The tool a call of ``called`` means: by its alias, or its own (dotted) name."""
        name = self._names.get(called)
        return self._tools[name] if name is not None else None

    def __getitem__(self, called: str) -> PythonTool:
        found = self.tool(called)
        if found is None:
            raise KeyError(called)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, called: object) -> bool:
        return isinstance(called, str) and called in self._names
