"""Request and plan identifiers: ``req_{unix_seconds}_{random}`` and ``plan_{unix_seconds}_{random}``."""

from __future__ import annotations

import re
import secrets
import string
import time
from typing import Literal

from toolplan.errors import InvalidInput

__all__ = ["IdKind", "is_valid_id", "new_id", "require_id"]

IdKind = Literal["req", "plan"]
"""The prefixes of the identifiers toolplan mints."""

_ALPHABET = string.ascii_lowercase + string.digits
_RANDOM_LENGTH = 10
# `fullmatch`, not `$`: `$` also matches before a final "\n", which would let one through.
_ID_PATTERN = re.compile(r"(req|plan)_(\d{9,11})_([a-z0-9]{6,32})")
_SHAPES: dict[IdKind, tuple[str, str]] = {
    "plan": ("plan", "plan_<seconds>_<id>"),
    "req": ("request", "req_<seconds>_<id>"),
}


def new_id(kind: IdKind, *, now: float | None = None) -> str:
    """Mint a new ID such as ``req_1732200000_k3j9x0ab2c`` (lowercase alphanumeric random part)."""
    seconds = int(time.time() if now is None else now)
    random_part = "".join(secrets.choice(_ALPHABET) for _ in range(_RANDOM_LENGTH))
    return f"{kind}_{seconds}_{random_part}"


def is_valid_id(value: object, kind: IdKind | None = None) -> bool:
    """Whether ``value`` is a well-formed ID (of ``kind`` when given)."""
    if not isinstance(value, str):
        return False
    match = _ID_PATTERN.fullmatch(value)
    if match is None:
        return False
    return kind is None or match.group(1) == kind


def require_id(value: str, kind: IdKind) -> str:
    """``value`` if it is a well-formed ID of ``kind``; else :class:`InvalidInput` naming the
    expected shape. Every lookup by ID checks this first, so nothing user-supplied reaches a
    store query unchecked."""
    if not is_valid_id(value, kind):
        noun, shape = _SHAPES[kind]
        shown = value if len(value) <= 80 else value[:77] + "..."
        raise InvalidInput(f"{shown!r} is not a {noun} ID (expected {shape})")
    return value
