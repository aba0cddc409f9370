"""BFCL v4 entries and their possible answers, read from the ``bfcl-eval`` wheel's data files.

The wheel (``pip install --no-deps bfcl-eval==2026.3.23``, done by ``scripts/setup.sh``) ships
``bfcl_eval/data/BFCL_v4_<category>.json`` (one JSON object a line: ``id``, ``question``,
``function``) and ``bfcl_eval/data/possible_answer/BFCL_v4_<category>.json`` (``id``,
``ground_truth``). The package is located without being imported, so nothing of its large
dependency set is needed to read the data.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.harness import seeded_sample

__all__ = [
    "AST_CATEGORIES",
    "CATEGORIES",
    "IRRELEVANCE_CATEGORIES",
    "TUNING_CATEGORIES",
    "BfclMissing",
    "Entry",
    "data_dir",
    "load_category",
    "sample",
]

AST_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""Single-turn Python categories scored by the official AST checker against possible answers."""

IRRELEVANCE_CATEGORIES: tuple[str, ...] = ("irrelevance", "live_irrelevance")
"""No function fits: an entry is correct when no call is made (BFCL's own rule)."""

CATEGORIES: tuple[str, ...] = AST_CATEGORIES + IRRELEVANCE_CATEGORIES
"""Every category this bench runs. Java/JavaScript, multi-turn, memory and web search are not
supported (they need other checkers or executable environments)."""

TUNING_CATEGORIES: tuple[str, ...] = ("simple_python", "multiple", "parallel")
"""The only categories anything may be tuned on (issue 28); every other one is a test set."""

Kind = Literal["ast", "irrelevance"]

_WHEEL = "bfcl-eval==2026.3.23"


class BfclMissing(RuntimeError):
    """The ``bfcl-eval`` wheel is not installed."""

    def __init__(self) -> None:
        super().__init__(
            f"the BFCL data and checker come from the {_WHEEL} wheel, which is not installed; "
            f"run `pip install --no-deps {_WHEEL}` (scripts/setup.sh does)"
        )


@dataclass(frozen=True)
class Entry:
    """One BFCL test entry."""

    id: str
    category: str
    messages: list[dict[str, str]]
    """The first (only) turn's messages: ``system`` (some live entries) and ``user``."""
    functions: list[dict[str, Any]]
    """The function docs, as BFCL writes them (``dict``/``float``/``tuple`` types, dotted names)."""
    answer: list[dict[str, Any]] | None
    """Possible answers ``[{func: {arg: [allowed values]}}]``; ``None`` for irrelevance."""

    @property
    def kind(self) -> Kind:
        """``ast`` (checked against possible answers) or ``irrelevance`` (no call is right)."""
        return "irrelevance" if self.category in IRRELEVANCE_CATEGORIES else "ast"

    @property
    def query(self) -> str:
        """The turn as one text: a system message (if any) followed by the user's request."""
        return "\n\n".join(m["content"] for m in self.messages if m.get("content"))


def data_dir() -> Path:
    """``bfcl_eval/data`` inside the installed wheel; :class:`BfclMissing` when absent."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise BfclMissing()
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_category(category: str) -> list[Entry]:
    """Every entry of ``category``, in the file's order, with its possible answer."""
    if category not in CATEGORIES:
        raise ValueError(
            f"unsupported BFCL category {category!r}; choose from {', '.join(CATEGORIES)}"
        )
    root = data_dir()
    answers: dict[str, Any] = {}
    if category in AST_CATEGORIES:
        answers = {
            row["id"]: row["ground_truth"]
            for row in _lines(root / "possible_answer" / f"BFCL_v4_{category}.json")
        }
    entries = []
    for row in _lines(root / f"BFCL_v4_{category}.json"):
        turns = row["question"]
        if len(turns) != 1:  # single-turn categories only; a guard, not a filter
            raise ValueError(f"{row['id']!r} has {len(turns)} turns; only one is supported")
        entries.append(
            Entry(
                id=row["id"],
                category=category,
                messages=list(turns[0]),
                functions=list(row["function"]),
                answer=answers.get(row["id"]) if category in AST_CATEGORIES else None,
            )
        )
    return entries


def sample(entries: list[Entry], size: int | None, seed: int) -> list[Entry]:
    """``size`` entries drawn with a generator seeded by the category and ``seed`` (all of them
    when ``size`` is ``None`` or larger), kept in the file's order so runs read alike. The
    category is part of the seed so that categories of equal length do not share indices."""
    category = entries[0].category if entries else ""
    return seeded_sample(entries, size, f"{category}:{seed}")
