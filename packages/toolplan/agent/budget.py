"""Visible truncation for what the respond node shows the model, by tokens
(:func:`~toolplan._tokens.count_tokens`: tiktoken's ``o200k_base`` offline, else about one per 4
characters).
"""

from __future__ import annotations

from toolplan._tokens import count_tokens

__all__ = ["truncate_tokens"]


def truncate_tokens(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` tokens, with a marker saying how much was left out;
    ``True`` when it was cut."""
    total = count_tokens(text)
    if total <= limit:
        return text, False
    # cut by characters in proportion, then check: exact enough, and no decoding needed
    keep = max(0, int(len(text) * limit / total))
    while keep > 0 and count_tokens(text[:keep]) > limit:
        keep = int(keep * 0.9)
    return (
        f"{text[:keep]}… [truncated: about {total - count_tokens(text[:keep])} more tokens]",
        True,
    )
