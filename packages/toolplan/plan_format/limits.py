"""Input limits: what a plan document or a query may be, checked once, at the edge.

Every entry point (CLI, GraphQL API, Python API, ``execute_plan`` meta-tool) hands plans to
:func:`toolplan.plan_format.plan.load_plan` and queries to :func:`check_text`, which apply these checks
before anything is validated further or stored:

- text is strict UTF-8 (a UTF-8 byte-order mark is allowed), with no lone surrogates anywhere,
  in keys or values (JSON ``"\\ud800"`` escapes decode to them, and no store can hold them);
- a plan is at most :attr:`InputLimits.max_plan_bytes` of JSON and nests objects and lists at
  most :attr:`InputLimits.max_depth` deep; each string is at most
  :attr:`InputLimits.max_string_chars`;
- numbers are finite (no ``NaN``/``Infinity``, no ``1e999``) and integers have at most
  :attr:`InputLimits.max_number_digits` digits.

Every check is linear in the input and stops early once a limit is passed. Violations raise
:class:`~toolplan.errors.PlanInvalid` (exit code 2) naming where, e.g.
``steps[1].parameters.name``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields
from typing import Any

from toolplan.errors import InvalidInput, PlanInvalid, ValidationIssue

__all__ = [
    "InputLimits",
    "check_json",
    "check_text",
    "decode_utf8",
    "parse_json_text",
]

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MAX_ISSUES = 20


@dataclass(frozen=True)
class InputLimits:
    """Limits on user input; each has an environment variable, read by
    :meth:`toolplan.config.Settings.from_env`."""

    max_plan_bytes: int = 1_000_000
    """Largest plan, as UTF-8 JSON (``TOOLPLAN_MAX_PLAN_BYTES``)."""
    max_string_chars: int = 100_000
    """Longest string in a plan (keys and values), and longest query
    (``TOOLPLAN_MAX_STRING_CHARS``)."""
    max_depth: int = 64
    """Deepest nesting of objects and lists in a plan (``TOOLPLAN_MAX_DEPTH``)."""
    max_number_digits: int = 100
    """Most digits in an integer (``TOOLPLAN_MAX_NUMBER_DIGITS``)."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInput(f"input limit {item.name} must be a positive integer")


def _issue(message: str) -> PlanInvalid:
    return PlanInvalid([ValidationIssue("limit", message)])


def _surrogate_at(text: str) -> int | None:
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return found.start() if found else None


def _show(key: str) -> str:
    """A key as it can be printed: surrogates escaped, cut to 40 characters."""
    shown = key.encode("utf-8", "backslashreplace").decode("utf-8")
    return shown if len(shown) <= 40 else shown[:37] + "..."


def decode_utf8(data: bytes, origin: str) -> str:
    """Strict UTF-8 text of ``data`` (a leading UTF-8 byte-order mark is dropped); raises
    :class:`PlanInvalid` saying what the bytes look like instead."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            hint = "it looks like UTF-16; save it as UTF-8"
        elif data[:2] == b"\x1f\x8b":
            hint = "it looks gzip-compressed; decompress it first"
        else:
            hint = "save it as UTF-8"
        raise PlanInvalid(
            [
                ValidationIssue(
                    "json",
                    f"{origin} is not UTF-8 JSON: byte 0x{data[error.start]:02x} at offset "
                    f"{error.start} is not valid UTF-8 ({hint})",
                )
            ]
        ) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json_text(text: str, origin: str, limits: InputLimits) -> Any:
    """Parse JSON text within ``limits``: size, then syntax (with nesting and number limits the
    parser itself would trip over), then :func:`check_json` on the result."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_plan_bytes:
        raise _issue(
            f"{origin} is {size:,} bytes; the limit is {limits.max_plan_bytes:,} "
            "(TOOLPLAN_MAX_PLAN_BYTES)"
        )
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise PlanInvalid(
            [
                ValidationIssue(
                    "json",
                    f"{origin} is not valid JSON: {error.msg} at line {error.lineno} "
                    f"column {error.colno}",
                )
            ]
        ) from None
    except RecursionError:
        raise _issue(
            f"{origin} is nested more than {limits.max_depth} levels deep (TOOLPLAN_MAX_DEPTH)"
        ) from None
    except ValueError as error:  # integers over Python's digit limit, NaN/Infinity
        reason = str(error)
        if "digits" in reason:
            reason = f"an integer has more than {limits.max_number_digits} digits"
        raise _issue(f"{origin} is not accepted: {reason}") from None
    check_json(data, limits, origin=origin)
    return data


class _Walk:
    """One linear pass over a JSON value, collecting the first problems found."""

    def __init__(self, limits: InputLimits) -> None:
        self.limits = limits
        self.bound = 10**limits.max_number_digits
        self.issues: list[str] = []
        self.budget = limits.max_plan_bytes  # bytes the plan may still take, roughly

    def path(self, node: Any) -> str:
        parts: list[str] = []
        while node is not None:
            node, key = node
            parts.append(f"[{key}]" if isinstance(key, int) else f".{_show(key)}")
        text = "".join(reversed(parts)).lstrip(".")
        return text or "the plan"

    def string(self, text: str, node: Any, what: str) -> None:
        self.budget -= len(text) + 3
        if len(text) > self.limits.max_string_chars:
            self.issues.append(
                f"{self.path(node)}: {what} is {len(text):,} characters long; the limit is "
                f"{self.limits.max_string_chars:,} (TOOLPLAN_MAX_STRING_CHARS)"
            )
        elif (at := _surrogate_at(text)) is not None:
            self.issues.append(
                f"{self.path(node)}: {what} holds a lone surrogate (U+{ord(text[at]):04X}) at "
                f"position {at}, which is not valid Unicode"
            )

    def run(self, value: Any) -> None:
        limits = self.limits
        stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
        while stack and len(self.issues) < _MAX_ISSUES and self.budget >= 0:
            current, depth, node = stack.pop()
            if isinstance(current, str):
                self.string(current, node, "the string")
            elif isinstance(current, dict | list | tuple):
                if depth >= limits.max_depth:
                    self.issues.append(
                        f"{self.path(node)}: nested more than {limits.max_depth} levels deep "
                        "(TOOLPLAN_MAX_DEPTH)"
                    )
                    continue
                self.budget -= 2
                if isinstance(current, dict):
                    for key, item in current.items():
                        if not isinstance(key, str):
                            self.issues.append(
                                f"{self.path(node)}: key {key!r} is not a string (JSON keys are)"
                            )
                            continue
                        child = (node, key)
                        self.string(key, child, "the key")
                        stack.append((item, depth + 1, child))
                else:
                    stack.extend(
                        (item, depth + 1, (node, index)) for index, item in enumerate(current)
                    )
            elif isinstance(current, bool) or current is None:
                self.budget -= 5
            elif isinstance(current, int):
                self.budget -= 2
                if not -self.bound < current < self.bound:
                    self.issues.append(
                        f"{self.path(node)}: the integer has more than "
                        f"{limits.max_number_digits} digits (TOOLPLAN_MAX_NUMBER_DIGITS)"
                    )
            elif isinstance(current, float):
                self.budget -= 2
                if not math.isfinite(current):
                    self.issues.append(
                        f"{self.path(node)}: {current!r} is not a finite number (JSON has no "
                        "NaN or Infinity)"
                    )
            else:
                self.issues.append(
                    f"{self.path(node)}: a {type(current).__name__} is not a JSON value"
                )


def check_json(value: Any, limits: InputLimits, *, origin: str = "the plan") -> None:
    """Raise :class:`PlanInvalid` if a parsed JSON value breaks ``limits``: nesting, string
    length, lone surrogates, integer digits, non-finite numbers, non-JSON types, total size."""
    walk = _Walk(limits)
    walk.run(value)
    if walk.issues:
        raise PlanInvalid([ValidationIssue("limit", message) for message in walk.issues])
    too_big = walk.budget < 0
    if not too_big:
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
        too_big = size > limits.max_plan_bytes
    if too_big:
        raise _issue(
            f"{origin} is larger than {limits.max_plan_bytes:,} bytes of JSON "
            "(TOOLPLAN_MAX_PLAN_BYTES)"
        )


def check_text(text: str | None, what: str, limits: InputLimits) -> None:
    """Raise :class:`InvalidInput` if a free text (a query) has lone surrogates (from invalid
    UTF-8 on a command line, or ``\\ud800`` escapes) or is longer than the string limit."""
    if text is None:
        return
    if len(text) > limits.max_string_chars:
        raise InvalidInput(
            f"{what} is {len(text):,} characters long; the limit is "
            f"{limits.max_string_chars:,} (TOOLPLAN_MAX_STRING_CHARS)"
        )
    at = _surrogate_at(text)
    if at is not None:
        code = ord(text[at])
        if 0xDC80 <= code <= 0xDCFF:  # how Python carries an undecodable byte (surrogateescape)
            raise InvalidInput(
                f"{what} is not valid UTF-8: byte 0x{code - 0xDC00:02x} at position {at}"
            )
        raise InvalidInput(
            f"{what} holds a lone surrogate (U+{code:04X}) at position {at}, which is not valid "
            "Unicode"
        )
