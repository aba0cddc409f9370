"""The stores' one JSON codec: how free-form JSON is written as text and read back, and what a
record can hold.

Plans, analyses, planning metadata, step parameters and outputs, and toolset records are kept as
JSON text by every backend: text holds every JSON value exactly as the engine produced it (BSON
cannot hold integers beyond 64 bits and restricts ``$``-prefixed keys), and SQLite has no better
type for it. Values JSON cannot represent are written as their ``str()``.

The text is strict JSON: ``NaN``, ``Infinity`` and ``-Infinity`` (which Python's ``json`` writes
and reads, but ``JSON.parse`` and most other readers refuse) are written as ``null``, and read as
``None`` where an older version stored them. :func:`storable` says what else a record cannot
hold, for the engine to refuse such a tool output before it is recorded.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "Unstorable",
    "dumps",
    "finite",
    "loads",
    "storable",
]

MAX_DEPTH = 255
"""Levels of nested objects and lists a stored value may have: what pydantic's serializer, which
converts tool outputs, takes; well below the depth at which reading the text back would exhaust
Python's recursion limit in a deep call stack."""

MAX_INT_DIGITS = 4300
"""Digits an integer may have: Python's default limit for converting text to ``int``, so every
process can read the record back (``json.loads`` refuses longer ones)."""

_SHOWN_PATH = 60


class Unstorable(ValueError):
    """A value a record cannot hold; the message says what it is and where (``output.a[0]``)."""


def dumps(value: Any) -> str:
    """``value`` as compact-enough strict JSON text (UTF-8 kept as is; NaN and ±Infinity as
    ``null``)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # NaN or an infinity somewhere (or an integer too long: raised again)
        return json.dumps(finite(value), ensure_ascii=False, default=str, allow_nan=False)


def _none(constant: str) -> None:
    return None


def loads(text: str | None) -> Any:
    """The value of JSON ``text``; ``None`` for ``None`` (an unset column or field). ``NaN`` and
    ``±Infinity`` that an older version wrote are read as ``None``."""
    return None if text is None else json.loads(text, parse_constant=_none)


def finite(value: Any) -> Any:
    """``value`` (parsed JSON: dicts, lists, scalars) with every NaN and ±Infinity as ``None``;
    the value itself when it has none."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def _digits(number: int) -> int:
    """How many decimal digits ``number`` has, without converting it to text (which Python
    refuses beyond its digit limit)."""
    magnitude = abs(number)
    estimate = max(1, int(magnitude.bit_length() * math.log10(2)))
    while magnitude >= 10**estimate:
        estimate += 1
    while estimate > 1 and magnitude < 10 ** (estimate - 1):
        estimate -= 1
    return estimate


_SAFE_BITS = int(MAX_INT_DIGITS / math.log10(2))
"""An integer of at most this many bits has at most :data:`MAX_INT_DIGITS` digits."""

_Path = tuple[Any, Any, bool] | None
"""Where a value is: (the path of its container, its key or index, whether it is a key). Built
as a linked list and spelled out only for a message."""


def _where(path: _Path) -> str:
    steps: list[str] = []
    while path is not None:
        path, key, named = path
        steps.append(f".{key}" if named else f"[{key}]")
    if not steps:
        return ""
    shown = "output" + "".join(reversed(steps))
    if len(shown) > _SHOWN_PATH:
        shown = shown[:_SHOWN_PATH] + "..."
    return f" at {shown}"


def storable(value: Any) -> Any:
    """``value`` as a record holds it: NaN and ±Infinity become ``None``, UTF-8 bytes text.
    Raises :class:`Unstorable` naming a value that cannot be held, and where: bytes that
    are not UTF-8 text, an integer of more than :data:`MAX_INT_DIGITS` digits, or nesting deeper
    than :data:`MAX_DEPTH` levels.

    ``value`` is JSON-like (dicts, lists and tuples, strings, numbers, booleans, ``None``, and
    bytes); anything else is kept as it is, for the caller's conversion to JSON.
    """
    # Iterative, with an explicit stack, so that a value nested past Python's recursion limit is
    # named, not a RecursionError. Each entry: (value, depth, path, where it goes, under what).
    result: list[Any] = [None]
    stack: list[tuple[Any, int, _Path, Any, Any]] = [(value, 0, None, result, 0)]
    while stack:
        item, depth, path, into, key = stack.pop()
        if isinstance(item, float):
            item = item if math.isfinite(item) else None
        elif isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > _SAFE_BITS and (digits := _digits(item)) > MAX_INT_DIGITS:
                raise Unstorable(
                    f"an integer of {digits} digits{_where(path)} (at most {MAX_INT_DIGITS}); "
                    "return it as text (str(value))"
                )
        elif isinstance(item, bytes | bytearray):
            try:
                item = bytes(item).decode("utf-8")
            except UnicodeDecodeError:
                raise Unstorable(
                    f"bytes that are not UTF-8 text{_where(path)}; return text instead (binary "
                    "data as base64 text)"
                ) from None
        elif isinstance(item, dict | list | tuple):
            if depth >= MAX_DEPTH:
                raise Unstorable(
                    f"nesting deeper than {MAX_DEPTH} levels{_where(path)}; return a flatter value"
                )
            if isinstance(item, dict):
                copy: Any = dict.fromkeys(item)
                stack.extend((v, depth + 1, (path, k, True), copy, k) for k, v in item.items())
            else:
                copy = [None] * len(item)
                stack.extend((v, depth + 1, (path, i, False), copy, i) for i, v in enumerate(item))
            item = copy
        into[key] = item
    return result[0]
