"""Names read as words: ``numberOfDays``, ``number_of_days`` and ``NumberOfDays`` are all
``number``, ``of``, ``days``. The validator uses them to offer only an argument name that says
the same thing ("did you mean"); the offline model, to find the tools a request names."""

from __future__ import annotations

import re

__all__ = ["name_words", "starts_alike"]

_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_SEPARATORS = re.compile(r"[\W_]+")


def name_words(name: str) -> list[str]:
    """The words of an identifier, lowercased: split at ``_``, ``-``, ``.`` and where a capital
    starts a word (``getHTTPResponse``: ``get``, ``http``, ``response``). A name with letters
    beyond ASCII is split at what is not a letter or digit only, and case-folded (``Straße`` is
    ``strasse``); a name with no letter or digit is its one word."""
    if name.isascii():
        words = [word.lower() for word in _NAME_WORDS.findall(name)]
    else:
        words = [word.casefold() for word in _SEPARATORS.split(name) if word]
    return words or ([name.casefold()] if name else [])


def starts_alike(word: str, other: str, *, shortest: int) -> bool:
    """One word is the other cut short (``num``, ``blog`` of ``blogs``), the shorter at least
    ``shortest`` letters long; equal words are alike too."""
    if not word or not other:
        return False
    short, long = sorted((word, other), key=len)
    return short == long or (len(short) >= shortest and long.startswith(short))
