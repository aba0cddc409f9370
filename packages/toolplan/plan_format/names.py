"""Names read as words: ``numberOfDays``, ``number_of_days`` and ``NumberOfDays`` are all
``number``, ``of``, ``days``. The validator uses them to offer only an argument name that says
the same thing ("did you mean"); the offline model, to find the tools a request names."""

from __future__ import annotations

import re

__all__ = ["name_words", "starts_alike"]

_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def name_words(name: str) -> list[str]:
    """The words of an identifier, lowercased: split at ``_``, ``-``, ``.`` and where a capital
    starts a word (``getHTTPResponse``: ``get``, ``http``, ``response``)."""
    return [word.lower() for word in _NAME_WORDS.findall(name)]


def starts_alike(word: str, other: str, *, shortest: int) -> bool:
    """One word is the other cut short (``num``, ``blog`` of ``blogs``), the shorter at least
    ``shortest`` letters long; equal words are alike too."""
    if not word or not other:
        return False
    short, long = sorted((word, other), key=len)
    return short == long or (len(short) >= shortest and long.startswith(short))
