"""Store URIs in messages."""

from __future__ import annotations

import re

__all__ = ["redact_uri"]


def redact_uri(uri: str) -> str:
    """``uri`` with any password replaced by ``***`` (safe for messages and logs)."""
    return re.sub(r"(?<=://)([^:/@]+):([^@]*)@", r"\1:***@", uri)
