"""The values a Python plan computes while it is read: literals folded (``threshold + 5``, text
joined), conversions of literals (``int("5")``), each checked against the input limits **before**
it is built, so that no text can make the reader build a value larger than a plan may hold.

Nothing here runs code: it is arithmetic on JSON values, bounded in size and in count.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolplan.plan_format.limits import InputLimits

__all__ = [
    "CONVERSIONS",
    "Budget",
    "TooBig",
    "check_number",
    "check_text",
    "convert_literal",
    "fold",
    "size_of",
]

CONVERSIONS = frozenset({"str", "int", "float", "bool"})
"""Calls a plan reads as conversions of a value, unless a tool has that name."""

MAX_FOLDS = 10_000
"""The most literal operations one plan may fold (``a + 1``): more is not a plan."""


class TooBig(Exception):
    """A value would pass a limit; its message says which."""


@dataclass
class Budget:
    """What one reading may still build: folding operations, and characters of literal values
    copied through names (``x`` used in 50 calls copies what ``x`` holds 50 times)."""

    limits: InputLimits
    folds: int = 0
    copied: int = 0

    def fold(self) -> None:
        """One more folding operation."""
        self.folds += 1
        if self.folds > MAX_FOLDS:
            raise TooBig(
                f"the plan folds more than {MAX_FOLDS:,} operations on literals: write the values"
            )

    def copy(self, size: int) -> None:
        """A literal of ``size`` characters is copied into the plan once more."""
        self.copied += size
        if self.copied > self.limits.max_plan_bytes:
            raise TooBig(
                "the values the plan's names stand for add up to more than "
                f"{self.limits.max_plan_bytes:,} characters (TOOLPLAN_MAX_PLAN_BYTES)"
            )


def check_number(value: int | float, limits: InputLimits) -> int | float:
    """``value`` when a plan may hold it: finite, and an integer of at most
    ``max_number_digits`` digits."""
    if isinstance(value, float) and not math.isfinite(value):
        raise TooBig("the number is not finite: a plan holds only finite numbers")
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value))) if value.bit_length() < 4 * 4300 else 4301
        if digits > limits.max_number_digits:
            raise TooBig(
                f"an integer of {digits:,} digits: at most {limits.max_number_digits} "
                "(TOOLPLAN_MAX_NUMBER_DIGITS)"
            )
    return value


def check_text(value: str, limits: InputLimits) -> str:
    """``value`` when a plan may hold it: at most ``max_string_chars`` characters."""
    if len(value) > limits.max_string_chars:
        raise TooBig(
            f"a string of {len(value):,} characters: at most {limits.max_string_chars:,} "
            "(TOOLPLAN_MAX_STRING_CHARS)"
        )
    return value


def fold(op: ast.operator, left: Any, right: Any, budget: Budget) -> Any:
    """``left op right`` for literal operands: numbers (``+ - * /``) or text joined with ``+``;
    ``None`` when the plan language does not compute it. Sizes are checked before the value is
    built."""
    limits = budget.limits
    if isinstance(op, ast.Add) and isinstance(left, str) and isinstance(right, str):
        budget.fold()
        if len(left) + len(right) > limits.max_string_chars:
            raise TooBig(
                f"the text joined would have {len(left) + len(right):,} characters: at most "
                f"{limits.max_string_chars:,} (TOOLPLAN_MAX_STRING_CHARS)"
            )
        return left + right
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right))
    if not numbers or not isinstance(op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        return None
    budget.fold()
    if isinstance(left, int) and isinstance(right, int) and isinstance(op, ast.Mult):
        bits = left.bit_length() + right.bit_length()
        if bits > limits.max_number_digits * 4:  # a decimal digit takes about 3.3 bits
            raise TooBig(
                f"the product would have more than {limits.max_number_digits} digits "
                "(TOOLPLAN_MAX_NUMBER_DIGITS)"
            )
    try:
        if isinstance(op, ast.Add):
            result = left + right
        elif isinstance(op, ast.Sub):
            result = left - right
        elif isinstance(op, ast.Mult):
            result = left * right
        else:
            result = left / right
    except ZeroDivisionError:
        raise TooBig("a division by zero") from None
    except OverflowError:
        raise TooBig("the number is too large for a plan") from None
    return check_number(result, limits)


def convert_literal(kind: str, value: Any, limits: InputLimits) -> Any:
    """``kind(value)`` (``str``, ``int``, ``float``, ``bool``) of a literal, as Python computes
    it; :class:`ValueError` naming why when it cannot."""
    if kind == "str":
        if isinstance(value, list | dict):
            raise ValueError("str() of a list or a dict is Python's notation, not a plan value")
        return check_text("None" if value is None else str(value), limits)
    if kind == "bool":
        return bool(value)
    if isinstance(value, list | dict) or value is None:
        raise ValueError(f"{kind}() takes a number or a text")
    try:
        if kind == "int":
            if isinstance(value, str) and len(value) > limits.max_number_digits + 2:
                raise TooBig(f"an integer of more than {limits.max_number_digits} digits")
            return check_number(int(value), limits)
        return check_number(float(value), limits)
    except OverflowError:
        raise TooBig("the number is too large for a plan") from None


def size_of(value: Any, limit: int) -> int:
    """About how many characters ``value`` takes as JSON; counting stops past ``limit`` (a value
    that shares parts with itself may stand for far more than it holds)."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, Mapping):
            total += 2
            for key, inner in item.items():
                total += len(key) + 3
                stack.append(inner)
        elif isinstance(item, list):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 5
        if total > limit:
            return total
    return total
