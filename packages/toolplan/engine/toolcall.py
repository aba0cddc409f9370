"""Calling a LangChain tool: ``BaseTool.ainvoke``, or a fast path with the same semantics when
nothing would observe the call.

``ainvoke`` costs about 0.25 ms per call on this project's machines, mostly building a callback
manager and starting/ending a tool run that no handler receives, plus ``get_type_hints`` on the
tool's coroutine every call. When no callback handler is configured (no tracing, no verbose/debug,
no callbacks on the tool or in the config), :func:`invoke_tool` does what ``ainvoke`` does for a
``StructuredTool`` without those parts: the same argument parsing and validation
(``_to_args_and_kwargs``; a ``ValidationError`` propagates as it would), the same
``RunnableConfig`` (with the idempotency metadata) passed to the coroutine's config parameter and
set as the child config for nested runnables (in the calling task's context, with no task of its
own), and every exception, ``ToolException`` included,
raised unchanged. Tools the fast path does not cover (sync-only tools, tools handling their own
errors, ``content_and_artifact`` tools, custom ``BaseTool`` subclasses) always go through
``ainvoke``. ``tests/unit/test_toolcall.py`` shows both paths give identical results and errors.

A failed attempt is :class:`~toolplan.errors.AttemptFailed` (re-exported here with
:data:`~toolplan.errors.FailureKind`); whether another follows is the retry policy's decision.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools.base import (
    InjectedToolCallId,
    _get_runnable_config_param,
    _is_injected_arg_type,
    get_all_basemodel_annotations,
)
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from toolplan.errors import AttemptFailed, FailureKind, ToolOutputInvalid
from toolplan.store.codec import Unstorable, storable

__all__ = [
    "AttemptFailed",
    "FailureKind",
    "callbacks_configured",
    "fast_path_applies",
    "invoke_tool",
    "normalize_output",
    "schema_arguments",
    "without_surrogates",
]


def callbacks_configured(config: RunnableConfig | None = None) -> bool:
    """Whether a tool call made now would reach any callback handler: tracing (LangSmith env or
    context), verbose/debug, configure hooks, or callbacks in ``config``."""
    manager = AsyncCallbackManager.configure((config or {}).get("callbacks"), None, False)
    return bool(manager.handlers or manager.inheritable_handlers)


@functools.lru_cache(maxsize=1024)
def _config_param(function: Callable[..., Any]) -> str | None:
    return _get_runnable_config_param(function)


@functools.lru_cache(maxsize=1024)
def _takes_callbacks(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return True
    return "callbacks" in parameters or "run_manager" in parameters


def fast_path_applies(tool: BaseTool) -> bool:
    """A plain ``@tool``/``StructuredTool`` with a coroutine, no callbacks of its own, no error
    handlers and plain content output: what :func:`invoke_tool` can call directly."""
    return (
        type(tool) is StructuredTool
        and tool.coroutine is not None
        and not tool.callbacks
        and not tool.verbose
        and not tool.handle_tool_error
        and not tool.handle_validation_error
        and tool.response_format == "content"
        and not _takes_callbacks(tool.coroutine)
    )


@functools.lru_cache(maxsize=1024)
def _defaulted_fields(schema: type[BaseModel]) -> frozenset[str] | None:
    """The fields of a tool's argument model that have a default, for validating its arguments
    as ``_parse_input`` does without its per-call signature walk; ``None`` when that walk
    matters (an injected tool-call id) or there is no field: LangChain's own parsing then."""
    annotations = get_all_basemodel_annotations(schema)
    if not schema.model_fields or any(
        _is_injected_arg_type(kind, injected_type=InjectedToolCallId)
        for kind in annotations.values()
    ):
        return None
    return frozenset(
        name
        for name, field in schema.model_fields.items()
        if not field.is_required() and name not in ("args", "kwargs")
    )


def _arguments(tool: StructuredTool, arguments: dict[str, Any]) -> tuple[tuple[Any, ...], Any]:
    """``tool._to_args_and_kwargs(arguments, None)``: the same validation and the same keyword
    arguments, with the argument model's shape looked up once per model rather than on every
    call (``inspect.signature`` of the model: most of a call's own cost)."""
    schema = tool.args_schema
    defaulted = (
        _defaulted_fields(schema)
        if isinstance(schema, type) and issubclass(schema, BaseModel)
        else None
    )
    if defaulted is None or tool._injected_args_keys:
        return tool._to_args_and_kwargs(arguments, None)
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    result = schema.model_validate(arguments)
    given = result.model_fields_set
    return (), {
        name: getattr(result, name)
        for name in result.model_dump()
        if name in arguments or name in given or name in defaulted
    }


def schema_arguments(tool: BaseTool, arguments: Any) -> Any:
    """``arguments`` as ``tool``'s schema reads them: defaults filled in and values in the
    declared types (``0`` for a number is ``0.0``), as JSON values. Two calls with equal schema
    arguments are the same call (a streamed step adopts an early call only then). Arguments the
    schema refuses are returned as given: the call will say what is wrong with them."""
    if not isinstance(arguments, dict):
        return arguments
    schema = tool.args_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            parsed = schema.model_validate(arguments)
        except ValueError:  # pydantic's ValidationError among them
            return arguments
        injected = set(getattr(tool, "_injected_args_keys", ()) or ())
        dumped = parsed.model_dump(mode="json")
        return {
            k: v for k, v in dumped.items() if k not in injected and k not in ("args", "kwargs")
        }
    if isinstance(schema, dict):
        properties = schema.get("properties") or {}
        defaults = {
            name: spec["default"]
            for name, spec in properties.items()
            if isinstance(spec, dict) and "default" in spec
        }
        return {**defaults, **arguments}
    return arguments


async def invoke_tool(tool: BaseTool, arguments: Any, config: RunnableConfig, *, fast: bool) -> Any:
    """``tool.ainvoke(arguments, config=config)``; with ``fast`` (the caller checked
    :func:`callbacks_configured` is false) and a tool :func:`fast_path_applies` to, without the
    callback machinery."""
    if not (fast and isinstance(arguments, dict) and fast_path_applies(tool)):
        return await tool.ainvoke(arguments, config=config)
    assert isinstance(tool, StructuredTool) and tool.coroutine is not None
    config = ensure_config(config)
    args, kwargs = _arguments(tool, arguments)
    if param := _config_param(tool.coroutine):
        kwargs[param] = config
    # The config is the child runnables' config while the tool runs, as ``ainvoke`` sets it;
    # set in this task's own context (the step's) rather than in a copy run by a new task: one
    # task and one event-loop turn less per call. No tracer is configured on this path, so the
    # tracing context ``ainvoke`` would also set stays as it is.
    token = var_child_runnable_config.set(config)
    try:
        return await tool.coroutine(*args, **kwargs)
    finally:
        var_child_runnable_config.reset(token)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    """``value`` with lone surrogates (text no store can hold, e.g. from a file read with
    ``surrogateescape``) replaced by U+FFFD; the value itself when it has none."""
    if isinstance(value, str):
        return value if value.isascii() else _SURROGATE.sub("\ufffd", value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if text.isascii() or not _SURROGATE.search(text):
        return value
    return json.loads(_SURROGATE.sub("\ufffd", text))


def _as_json(value: Any) -> Any:
    """Tool output as JSON types: objects are kept; strings holding a JSON object or list are
    parsed; pydantic models dumped; anything else converted by pydantic (``str()`` as a last
    resort)."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                return value
            if isinstance(parsed, dict | list):
                return parsed
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return to_jsonable_python(value, fallback=str)


def normalize_output(value: Any, *, tool: str | None = None) -> Any:
    """Tool output as JSON the record can hold: objects are kept; strings holding a JSON object or
    list are parsed; NaN and ±Infinity become ``null`` (strict JSON, for every reader); lone
    surrogates become U+FFFD.

    Raises :class:`~toolplan.errors.ToolOutputInvalid` (naming ``tool``) for an output no store
    can hold, saying why: bytes that are not UTF-8 text, an integer of more than
    :data:`~toolplan.store.codec.MAX_INT_DIGITS` digits, nesting deeper than
    :data:`~toolplan.store.codec.MAX_DEPTH` levels. Checked here, once, for every call (a step,
    a ``forEach`` item, a fallback), before anything is recorded.
    """
    try:
        converted = _as_json(value)
    except Exception as error:  # pydantic refused it: bytes that are not text, nesting...
        try:
            storable(value)  # says why, in the record's terms, when it is one of its limits
        except Unstorable as why:
            raise _invalid(str(why), tool) from None
        raise _invalid(f"it is not JSON ({type(error).__name__}: {error})", tool) from None
    try:
        # The common case at C speed: strict JSON already. pydantic's conversion stops at the
        # record's nesting limit; only a value parsed from text has not been through it.
        text = json.dumps(converted, ensure_ascii=False, allow_nan=False)
        if converted is not value and isinstance(value, str):
            to_jsonable_python(converted)
    except (ValueError, TypeError, RecursionError):  # NaN, a long integer, deep nesting
        try:
            return without_surrogates(storable(converted))
        except Unstorable as why:
            raise _invalid(str(why), tool) from None
    if text.isascii() or not _SURROGATE.search(text):
        return converted
    return json.loads(_SURROGATE.sub("\ufffd", text))


def _invalid(why: str, tool: str | None) -> ToolOutputInvalid:
    who = f"tool {tool!r} returned an output" if tool else "the output is one"
    return ToolOutputInvalid(f"{who} the record cannot hold: {why}", tool=tool)
