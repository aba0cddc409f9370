"""Names read as words: ``numberOfDays``, ``number_of_days`` and ``NumberOfDays`` are all
``number``, ``of``, ``days``. The validator uses them to offer only an argument name that says
the same thing ("did you mean"); the offline model, to find the tools a request names."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Mapping

__all__ = [
    "alike_name",
    "closest_tools",
    "is_id_argument",
    "name_words",
    "spelled_alike",
    "starts_alike",
]

_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_SEPARATORS = re.compile(r"[\W_]+")
_CAMEL_ID = re.compile(r"[a-z0-9]I[dD]$")


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


def spelled_alike(given: str, candidate: str, *, leading: bool = False) -> bool:
    """Every word of ``given`` is, give or take a typo or an abbreviation, a word of
    ``candidate`` (``locaton`` of ``location``, ``userName`` of ``user_name``, ``city`` of
    ``city_name``); ``number_of_days`` is not ``number_of_adults``, nor ``hotel_name``
    ``phone_number``. ``leading``: and they are its first words, so it only says more after
    them (``Exchange`` of ``Exchange Rate``; ``number`` is then not ``phone_number``, a number
    of another kind)."""
    words, theirs = name_words(given), name_words(candidate)
    if "".join(words) == "".join(theirs):
        return True
    if leading:
        return len(words) <= len(theirs) and all(map(_alike, words, theirs))
    return all(any(_alike(word, other) for other in theirs) for word in words)


def alike_name(name: str, known: Iterable[str], *, leading: bool = False) -> str | None:
    """The known name closest to ``name`` among those that differ from it in spelling only
    (:func:`spelled_alike`), ``None`` when there is none: the one a "did you mean" may offer.
    A name of the same words (``_id`` for ``id``, ``user_name`` for ``userName``) comes
    first."""
    names = list(known)
    same = "".join(name_words(name))
    for candidate in names:
        if "".join(name_words(candidate)) == same:
            return candidate
    for candidate in difflib.get_close_matches(name, names, n=3, cutoff=0.6):
        if spelled_alike(name, candidate, leading=leading):
            return candidate
    return None


def closest_tools(
    name: str,
    parameters: Mapping[str, Collection[str]],
    *,
    keywords: Collection[str] = (),
    positional: int = 0,
    n: int = 3,
) -> list[str]:
    """The ``n`` tools (of ``parameters``: each tool's parameter names) a call of the unknown
    ``name`` most likely meant, for a "did you mean": those spelled close to it, and among them
    first the ones that take the call's arguments as written (every keyword it names, and
    ``positional`` arguments by position).

    A model that mixes two tools' names up (``Hotels_BookHotel`` with a hotel reservation's
    five arguments) takes the first name offered in its repair; spelling alone offers
    ``Hotels_BookHouse``, which takes four. A call with no argument is ranked by spelling."""
    close = difflib.get_close_matches(name, list(parameters), n=max(len(parameters), 1), cutoff=0.6)
    if keywords or positional:

        def misfit(tool: str) -> bool:
            taken = parameters[tool]
            return len(taken) < positional or not all(word in taken for word in keywords)

        close.sort(key=misfit)  # stable: spelling decides among equals
    return close[:n]


def _alike(word: str, other: str) -> bool:
    """One word the other, misspelled (``adress``) or cut short (``num``)."""
    return (
        starts_alike(word, other, shortest=3)
        or difflib.SequenceMatcher(None, word, other).ratio() >= 0.75
    )


def is_id_argument(name: str) -> bool:
    """Whether an argument's name says it takes an id: ``id``, ``blog_id``, ``authorId``,
    ``userID`` (not ``paid`` or ``valid``)."""
    lowered = name.lower()
    return lowered in ("id", "_id") or lowered.endswith("_id") or bool(_CAMEL_ID.search(name))
