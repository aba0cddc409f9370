"""The tool catalog: every tool a plan may call, with its description, JSON schema and tags.

Tools are LangChain tools (``BaseTool``, ``@tool``) or plain sync/async functions with type hints
and a docstring, which are wrapped into tools. Modules contribute tools through a ``TOOLS`` list:
``--tools pkg.module`` or ``TOOLPLAN_TOOLS=pkg.a,pkg.b``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from toolplan.errors import AttemptFailed, InvalidInput, failure_kinds
from toolplan.plan_format.json_schema import inline_refs
from toolplan.plan_format.names import closest_tools
from toolplan.store.protocol import ToolStats
from toolplan.tools.effects import (
    COMMUTATIVE_TAG,
    DEFAULT_RESOURCE,
    READ_ONLY_TAG,
    RESOURCE_PREFIX,
    Effect,
    effect_from,
)
from toolplan.tools.returns import returns_schema

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from toolplan.plan_format.plan import Step
    from toolplan.plan_format.python_tools import PythonTools
    from toolplan.tools.sources import ToolSources

__all__ = [
    "APPROVAL_TAG",
    "BUILTIN_TOOLSETS",
    "COMMUTATIVE_TAG",
    "DEFAULT_RESOURCE",
    "MAX_ATTEMPTS_KEY",
    "READ_ONLY_TAG",
    "RESERVED_TOOL_NAMES",
    "RESOURCE_PREFIX",
    "RETRY_ON_KEY",
    "ToolCatalog",
    "ToolInfo",
    "ToolStats",
    "effect_of",
    "is_read_only",
    "load_tool_modules",
    "requires_approval",
    "tagged",
]

BUILTIN_TOOLSETS: dict[str, str] = {
    "blog": "toolplan.builtin_tools.blog",
    "metrics": "toolplan.builtin_tools.metrics",
    "weather": "toolplan.builtin_tools.weather",
}
"""Short names of the built-in offline toolsets, usable wherever a module name is."""

RESERVED_TOOL_NAMES: frozenset[str] = frozenset({"execute_plan", "execute_tool_plan"})
"""Names of the plan executor itself; a plan may never call them."""

APPROVAL_TAG = "approval"
"""The tag that makes every call of a tool wait for a person's approval."""

MAX_ATTEMPTS_KEY = "max_attempts"
"""Key in a tool's ``metadata`` holding its own attempts per call (``tagged(max_attempts=)``)."""
RETRY_ON_KEY = "retry_on"
"""Key in a tool's ``metadata`` holding which of its failures are retried: failure kinds or a
predicate (``tagged(retry_on=)``; :class:`toolplan.config.retry.RetryPolicy`)."""


def requires_approval(tool: BaseTool) -> bool:
    """Whether every call of ``tool`` waits for a person's approval: its tag ``approval``, or an
    MCP tool's ``destructiveHint``. Data about the tool, so that validation (which must refuse a
    gated tool where nobody would be asked) and the engine (which asks) read the same answer."""
    if APPROVAL_TAG in (tool.tags or []):
        return True
    return (tool.metadata or {}).get("destructiveHint") is True


def effect_of(tool: BaseTool) -> Effect:
    """What calling ``tool`` may do: read-only or side effects, on which resources
    (:mod:`toolplan.tools.effects`)."""
    return effect_from(tool.tags, tool.metadata)


def is_read_only(tool: BaseTool) -> bool:
    """Whether ``tool`` says it has no side effect: the tag ``read-only``, or an MCP tool's
    ``readOnlyHint``."""
    return effect_of(tool).read_only


@dataclass(frozen=True)
class ToolInfo:
    """What a planner (and a person) needs to know about one tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments, as an LLM sees it."""
    tags: tuple[str, ...] = ()
    examples: tuple[dict[str, Any], ...] = ()
    source: str | None = None
    stats: ToolStats | None = field(default=None, compare=False)
    returns: dict[str, Any] | None = None
    """JSON schema of the tool's output (:mod:`toolplan.tools.returns`); ``None``: unknown."""
    read_only: bool = False
    """No side effect (:func:`is_read_only`): results may be cached, and two identical calls are one."""
    gated: bool = False
    """Every call waits for a person's approval (:func:`requires_approval`)."""
    resources: tuple[str, ...] = (DEFAULT_RESOURCE,)
    """What the tool reads or writes (tags ``resource:NAME``; :mod:`toolplan.tools.effects`)."""
    commutative: bool = False
    """Its writes commute with the other commutative writes on its resources (tag
    ``commutative``): they run in parallel with each other."""
    python_name: str | None = None
    """The name a Python plan calls it by (an alias when its own is not a Python name:
    :mod:`toolplan.plan_format.python_tools`); ``None`` when that alias is another tool's too."""

    @property
    def effect(self) -> Effect:
        """What a call may do: the order a plan's steps keep follows it."""
        return Effect(self.read_only, self.resources, self.commutative)

    def to_json(self) -> dict[str, Any]:
        """JSON form for ``toolplan tools --json`` and the API."""
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "tags": list(self.tags),
            "examples": list(self.examples),
            "source": self.source,
            "returns": self.returns,
            "pythonName": self.python_name,
            **self.effect.to_json(),
        }
        if self.stats is not None:
            data["stats"] = {
                "calls": self.stats.calls,
                "avgDurationMs": self.stats.avg_duration_ms,
                "failureRate": self.stats.failure_rate,
            }
        return data


ToolT = TypeVar("ToolT", bound="BaseTool | Callable[..., Any]")

_TAGS_ATTR = "__toolplan_tags__"
_METADATA_ATTR = "__toolplan_metadata__"
# A plain function is tagged in place, on these attributes, and wrapped into a LangChain tool only
# when a catalog takes it (:func:`_as_tool`): so ``tagged(fn, "read-only")`` as a statement works
# for functions as it does for tools.


def tagged(
    tool: ToolT,
    *tags: str,
    examples: Iterable[dict[str, Any]] = (),
    cache_ttl: float | None = None,
    returns: Any = None,
    cost_usd: float | None = None,
    resource: str | Iterable[str] | None = None,
    max_attempts: int | None = None,
    retry_on: Collection[str] | Callable[[AttemptFailed, str], bool] | None = None,
) -> ToolT:
    """Add capability tags and usage examples to a tool (``toolplan tools --tag`` filters on them).

    ``tool`` is a LangChain tool or a plain function (tagged in place, wrapped into a tool when a
    catalog takes it); it is returned, so both ``tagged(fn, "read-only")`` and
    ``TOOLS = [tagged(fn, "read-only")]`` work.

    Examples are ``{"query": ..., "parameters": {...}}`` objects; planners show them to the model.
    The tag ``read-only`` makes the tool's results cacheable: a call with the same arguments
    within ``cache_ttl`` seconds (default: the project config's ``cache_ttl``, 300) is answered from the
    store's shared cache without calling the tool; ``cache_ttl=0``: never (a read whose answer
    changes by itself, a clock or a live price, is still ordered as a read).

    ``returns`` declares what the tool returns, as a JSON schema or a type (a ``TypedDict``, a
    pydantic model); by default it is read from the function's return annotation. The validator
    checks templates against it before anything runs, and the planner sees it.

    ``cost_usd`` declares what one call costs, in US dollars (a paid API): plan estimates
    (``estimate.costUsd``) add it up per step.

    ``resource`` names what the tool reads or writes (one name or several), the same as the tags
    ``resource:NAME``: steps on one resource keep the plan's order around a write
    (:mod:`toolplan.tools.effects`). A tool that names none shares one default resource.

    ``max_attempts`` and ``retry_on`` are the tool's own retry policy, over the run's
    (:class:`toolplan.config.retry.RetryPolicy`; a step's ``maxAttempts`` still wins):
    attempts per call, and which failures are retried: kinds (``{"timeout", "exception"}`` by
    default) or a predicate ``retry_on(failure, tool) -> bool``, given the
    :class:`~toolplan.errors.AttemptFailed` with the exception the tool raised. The in-process
    engine and Temporal workers, which load the same tool, decide alike.
    """
    from langchain_core.tools import BaseTool

    if resource is not None:
        names = [resource] if isinstance(resource, str) else list(resource)
        if not names or not all(isinstance(n, str) and n.strip() for n in names):
            raise ValueError(f"resource must be a non-empty name or names, got {resource!r}")
        tags = (*tags, *(RESOURCE_PREFIX + n.strip() for n in names))

    if cost_usd is not None and (
        isinstance(cost_usd, bool) or not isinstance(cost_usd, int | float) or cost_usd < 0
    ):
        raise ValueError(f"cost_usd must be a non-negative number of dollars, got {cost_usd!r}")
    if cache_ttl is not None and (
        isinstance(cache_ttl, bool) or not isinstance(cache_ttl, int | float) or cache_ttl < 0
    ):
        raise ValueError(
            f"cache_ttl must be a number of seconds, 0 for never cached, got {cache_ttl!r}"
        )
    if max_attempts is not None and (
        isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1
    ):
        raise ValueError(f"max_attempts must be a whole number of at least 1, got {max_attempts!r}")
    metadata: dict[str, Any] = {}
    if max_attempts is not None:
        metadata[MAX_ATTEMPTS_KEY] = max_attempts
    if retry_on is not None:
        metadata[RETRY_ON_KEY] = retry_on if callable(retry_on) else failure_kinds(retry_on)
    examples = list(examples)
    if examples:
        metadata["examples"] = examples
    if cache_ttl is not None:
        metadata["cache_ttl"] = float(cache_ttl)
    if returns is not None:
        metadata["returns"] = returns
    if cost_usd is not None:
        metadata["cost_usd"] = float(cost_usd)
    if isinstance(tool, BaseTool):
        tool.tags = [*(tool.tags or []), *tags]
        if metadata:
            tool.metadata = {**(tool.metadata or {}), **metadata}
        return tool
    if not callable(tool):
        raise TypeError(f"tagged() takes a LangChain tool or a function, got {tool!r}")
    try:
        setattr(tool, _TAGS_ATTR, [*getattr(tool, _TAGS_ATTR, []), *tags])
        setattr(tool, _METADATA_ATTR, {**getattr(tool, _METADATA_ATTR, {}), **metadata})
    except AttributeError:  # a bound method or a builtin holds no attributes
        raise TypeError(
            f"cannot tag {tool!r} in place; wrap it first: tagged(langchain_core.tools.tool(f), ...)"
        ) from None
    return tool


def _as_tool(candidate: Any, source: str) -> BaseTool:
    # LangChain is imported when the first tool is added, not when toolplan is imported.
    from langchain_core.tools import BaseTool
    from langchain_core.tools import tool as as_langchain_tool

    if isinstance(candidate, BaseTool):
        return candidate
    if callable(candidate):
        if not (getattr(candidate, "__doc__", None) or "").strip():
            name = getattr(candidate, "__name__", repr(candidate))
            raise InvalidInput(
                f"tool function {name!r} from {source!r} has no docstring; "
                "add one: it becomes the description the planner reads"
            )
        try:
            tool = as_langchain_tool(candidate)
        except Exception as error:  # langchain raises several types for bad signatures
            name = getattr(candidate, "__name__", repr(candidate))
            raise InvalidInput(
                f"cannot turn {name!r} from {source!r} into a tool: {error}"
            ) from None
        tags, metadata = (
            getattr(candidate, _TAGS_ATTR, None),
            getattr(candidate, _METADATA_ATTR, None),
        )
        if tags:
            tool.tags = [*(tool.tags or []), *tags]
        if metadata:
            tool.metadata = {**(tool.metadata or {}), **metadata}
        return tool
    raise InvalidInput(
        f"{source!r} lists {candidate!r} in TOOLS; entries must be LangChain tools or functions"
    )


def _schema_of(tool: BaseTool) -> dict[str, Any]:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    parameters = convert_to_openai_tool(tool)["function"].get("parameters") or {}
    return dict(parameters)


class ToolCatalog:
    """An ordered, name-unique collection of tools."""

    def __init__(
        self, tools: Iterable[BaseTool | Callable[..., Any]] = (), *, source: str = ""
    ) -> None:
        self._tools: dict[str, BaseTool] = {}
        self._sources: dict[str, str] = {}
        self._infos: dict[str, ToolInfo] = {}
        self._python: tuple[int, PythonTools] | None = None
        self._called: tuple[int, dict[str, str]] | None = None
        self._arguments: dict[str, dict[str, Any]] = {}
        self.origin: ToolSources | None = None
        """Where the tools were loaded from (set by :func:`~toolplan.tools.loading.load_catalog`);
        recorded with each plan stored against this catalog so it can run again without them."""
        self.add(tools, source=source or "python")

    def add(
        self, tools: Iterable[BaseTool | Callable[..., Any]], *, source: str = "python"
    ) -> None:
        """Add tools; a name already present is an error (tool names must be unique)."""
        for candidate in tools:
            tool = _as_tool(candidate, source)
            if tool.name in RESERVED_TOOL_NAMES:
                raise InvalidInput(
                    f"{source!r} defines a tool named {tool.name!r}, which is reserved for the "
                    "plan executor; rename it"
                )
            if tool.name in self._tools:
                raise InvalidInput(
                    f"tool {tool.name!r} is defined twice ({self._sources[tool.name]!r} and "
                    f"{source!r}); tool names must be unique"
                )
            self._tools[tool.name] = tool
            self._sources[tool.name] = source
        self._infos.clear()  # a tool added may take an alias an earlier one had

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """Tool names in the order they were added."""
        return list(self._tools)

    def get(self, name: str) -> BaseTool:
        """The tool called ``name``; :class:`InvalidInput` with a suggestion if unknown."""
        try:
            return self._tools[name]
        except KeyError:
            raise InvalidInput(self.unknown_tool_message(name)) from None

    def unknown_tool_message(self, name: str, arguments: Collection[str] = ()) -> str:
        """'unknown tool ...' with the closest known names (those that take the call's
        ``arguments`` first), or the list of all of them."""
        close = closest_tools(name, self.signatures, keywords=arguments)
        if close:
            hint = "did you mean " + " or ".join(map(repr, close)) + "?"
        elif len(self.names) <= 15:
            hint = "known tools: " + (", ".join(self.names) or "none (load some with --tools)")
        else:
            hint = "run `toolplan tools` to list the known tools"
        return f"unknown tool {name!r}; {hint}"

    @property
    def python_tools(self) -> PythonTools:
        """The tools as a Python plan calls them: by name or alias, with their parameters,
        argument schemas and effects (:mod:`toolplan.plan_format.python_tools`)."""
        if self._python is None or self._python[0] != len(self._tools):
            from toolplan.plan_format.python_tools import PythonTool, PythonTools

            tools = []
            for name in self._tools:
                info = self.info(name)
                tools.append(
                    PythonTool(
                        name,
                        tuple((info.parameters.get("properties") or {}).keys()),
                        info.parameters,
                        info.read_only,
                        info.resources,
                    )
                )
            self._python = (len(self._tools), PythonTools(tools))
        return self._python[1]

    @property
    def signatures(self) -> Mapping[str, Sequence[str]]:
        """Each tool's parameter names in the order of its signature (how a plan written as
        Python reads positional arguments), computed for a tool only when asked for."""
        return _Signatures(self)

    def gated(self, name: str) -> bool:
        """Whether the catalog has a tool ``name`` whose every call waits for approval."""
        tool = self._tools.get(name)
        return tool is not None and requires_approval(tool)

    def read_only(self, name: str) -> bool:
        """Whether the catalog has a tool ``name`` that has no side effect."""
        tool = self._tools.get(name)
        return tool is not None and is_read_only(tool)

    def effect(self, name: str) -> Effect:
        """What a call of the tool ``name`` may do; for a tool this catalog lacks, a write on
        the default resource (the safe choice: validation refuses a plan calling it anyway)."""
        return self.info(name).effect if name in self._tools else Effect()

    def step_effect(self, step: Step) -> Effect:
        """What running ``step`` may do: its tool's effect, with its fallback's added (either
        may be the call that runs)."""
        effect = self.effect(step.tool)
        if step.fallback is not None:
            effect = effect.union(self.effect(step.fallback.tool))
        return effect

    def info(self, name: str) -> ToolInfo:
        """Catalog information (description, JSON schema, tags, examples) for one tool."""
        cached = self._infos.get(name)
        if cached is None:
            tool = self.get(name)
            metadata = tool.metadata or {}
            effect = effect_of(tool)
            cached = ToolInfo(
                name=tool.name,
                description=inspect.cleandoc(tool.description or ""),
                parameters=_schema_of(tool),
                tags=tuple(tool.tags or ()),
                examples=tuple(metadata.get("examples", ())),
                source=self._sources.get(name),
                returns=returns_schema(tool),
                read_only=effect.read_only,
                gated=requires_approval(tool),
                resources=effect.resources,
                commutative=effect.commutative,
                python_name=self._python_name(name),
            )
            self._infos[name] = cached
        return cached

    def _python_name(self, name: str) -> str | None:
        from toolplan.plan_format.python_tools import aliases, python_name

        if self._called is None or self._called[0] != len(self._tools):
            self._called = (len(self._tools), aliases(self._tools)[0])
        alias = python_name(name)
        return alias if self._called[1].get(alias) == name else None

    def arguments_schema(self, name: str) -> dict[str, Any]:
        """The JSON schema of the tool's arguments with ``$ref``s inlined, as templates are
        resolved against it (once per catalog, not once per execution)."""
        schema = self._arguments.get(name)
        if schema is None:
            schema = self._arguments[name] = inline_refs(self.info(name).parameters)
        return schema

    def infos(self, *, tag: str | None = None) -> list[ToolInfo]:
        """Information on every tool, optionally only those tagged ``tag``."""
        infos = [self.info(name) for name in self.names]
        return [i for i in infos if tag is None or tag in i.tags]


class _Signatures(Mapping[str, Sequence[str]]):
    """A catalog's parameter names by tool, read from each tool's schema on first use."""

    def __init__(self, catalog: ToolCatalog) -> None:
        self._catalog = catalog

    def __getitem__(self, name: str) -> Sequence[str]:
        if name not in self._catalog:
            raise KeyError(name)
        return list((self._catalog.info(name).parameters.get("properties") or {}).keys())

    def __iter__(self) -> Iterator[str]:
        return iter(self._catalog.names)

    def __len__(self) -> int:
        return len(self._catalog)

    def __contains__(self, name: object) -> bool:
        return name in self._catalog


def _import_tools(module_name: str) -> Sequence[Any]:
    # The built-in tools were toolplan.toolsets.*: plans stored then record that name.
    target = BUILTIN_TOOLSETS.get(module_name.removeprefix("toolplan.toolsets."), module_name)
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as error:
        if error.name and target.startswith(error.name):
            raise InvalidInput(
                f"cannot import tool module {module_name!r}: no module named {error.name!r} "
                "(is it installed or on PYTHONPATH?); built-in toolsets: "
                + ", ".join(BUILTIN_TOOLSETS)
            ) from None
        raise
    tools = getattr(module, "TOOLS", None)
    if not isinstance(tools, list | tuple):
        raise InvalidInput(
            f"tool module {module_name!r} has no TOOLS list; define TOOLS = [tool_a, tool_b]"
        )
    return tools


def load_tool_modules(module_names: Iterable[str]) -> ToolCatalog:
    """Build a catalog from modules that expose ``TOOLS`` (short built-in names allowed)."""
    catalog = ToolCatalog()
    for name in module_names:
        name = name.strip()
        if name:
            catalog.add(_import_tools(name), source=name)
    return catalog
