"""The index of stored plans a later query may reuse (:mod:`toolplan.planning.reuse` matches
them): each plan by its catalog fingerprint, its normalised query and the slot pattern of that
query (its literals that the plan's parameters hold, as whole words), written by
:func:`toolplan.service.operations.store_plan` and read by lookup keys (:func:`indexed_plans`)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from toolplan.plan_format.templates import strings_in
from toolplan.store.protocol import PlanRecord, Store
from toolplan.store.records import PLAN_INDEX, PlanIndexEntry
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "INDEX",
    "QueryPattern",
    "catalog_fingerprint",
    "index_plan",
    "indexed_plans",
    "normalise_query",
    "plan_literals",
    "plan_strings",
    "query_pattern",
    "tidy_query",
    "whole_word",
]

INDEX = PLAN_INDEX.name
"""The record collection of planned plans, by catalog fingerprint and normalised query
(:data:`~toolplan.store.records.PLAN_INDEX`)."""

_NUL = "\x00"


def tidy_query(query: str) -> str:
    """Whitespace collapsed, trailing punctuation removed."""
    return re.sub(r"[\s.?!;,:]+$", "", re.sub(r"\s+", " ", query).strip())


def normalise_query(query: str) -> str:
    """Case folded, whitespace collapsed, trailing punctuation removed."""
    return tidy_query(query).casefold()


def catalog_fingerprint(catalog: ToolCatalog) -> str:
    """A hash of the catalog's tool names, parameter schemas and declared return schemas.

    Returns belong in it: a stored plan's templates (``{{a.metrics[0].name}}``) were checked
    against them, and a tool whose output changed shape is another tool to that plan.
    Descriptions, tags and examples do not: they guide a planner, and editing them must not
    throw away every plan that ran.
    """
    tools = [
        [i.name, i.parameters, i.returns] for i in sorted(catalog.infos(), key=lambda i: i.name)
    ]
    text = json.dumps(tools, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def plan_literals(plan: dict[str, Any]) -> list[Any]:
    """Every parameter value of the steps and their fallbacks, as written."""
    found: list[Any] = []
    for step in plan.get("steps") or []:
        found.append(step.get("parameters"))
        fallback = step.get("fallback")
        if isinstance(fallback, dict):
            found.append(fallback.get("parameters"))
    return found


def plan_strings(plan: dict[str, Any]) -> list[str]:
    """Every string in the steps' parameters (and fallbacks'), templates included."""
    return [text for value in plan_literals(plan) for text in strings_in(value)]


def whole_word(value: str) -> str:
    """A regex for ``value`` as whole words."""
    return rf"(?<!\w){re.escape(value)}(?!\w)"


def _safe(value: str, slots: set[str], strings: list[str], text: str) -> bool:
    """Whether ``value`` is nowhere but in whole values of the plan and whole words of the query,
    the other slots (which are replaced too) aside."""
    folded = value.casefold()
    if any(folded in other.casefold() for other in strings if other not in slots):
        return False  # part of a value that stays ("Alice" in "alice@example.com"): derived
    rest = text
    for slot in sorted(slots, key=len, reverse=True):
        rest = re.sub(whole_word(slot), _NUL, rest)
    return folded not in rest.casefold()  # else also inside a longer word ("Tokyoites")


def _chosen_slots(plan: dict[str, Any], text: str) -> list[tuple[int, int, str]]:
    """The slots of ``text``: the plan's literals (whole strings without templates) occurring
    in it as whole words, safe (:func:`_safe`) and separated by fixed text, as spans."""
    strings = plan_strings(plan)
    literals = {v for v in strings if "{{" not in v and v.strip() and v == v.strip()}
    candidates = {v for v in literals if re.search(whole_word(v), text)}
    while True:
        safe = {v for v in candidates if _safe(v, candidates, strings, text)}
        chosen = _slots(text, safe)
        slotted = {value for _, _, value in chosen}
        if slotted == candidates:
            return chosen
        candidates = slotted  # fewer slots: check the rest again


def _slots(text: str, literals: set[str]) -> list[tuple[int, int, str]]:
    """Every whole-word occurrence of a literal in ``text``; a literal whose occurrences touch
    or overlap another slot (whitespace only between them) is left as fixed text, all of it."""
    candidates = set(literals)
    while True:
        hits = sorted(
            (
                (m.start(), m.end(), value)
                for value in candidates
                for m in re.finditer(whole_word(value), text)
            ),
            key=lambda hit: (hit[0], hit[0] - hit[1]),
        )
        chosen: list[tuple[int, int, str]] = []
        dropped: set[str] = set()
        for start, end, value in hits:
            if chosen and not text[chosen[-1][1] : start].strip():
                dropped.add(value)  # no fixed text between two slots: which is which?
                continue
            chosen.append((start, end, value))
        if not dropped:
            return chosen
        candidates -= dropped


@dataclass(frozen=True)
class QueryPattern:
    regex: str
    stored: list[str]
    """The slots' stored values, in group order (``s0``, ``s1``, ...)."""
    fixed: list[str]
    """The fixed text between the slots."""
    prefix: str
    """The text before the first slot, case folded (a lookup's cheap first test)."""
    suffix: str
    """The text after the last slot, case folded."""


def query_pattern(query: str, plan: dict[str, Any]) -> QueryPattern | None:
    """The stored query as a pattern with a group per slot (a repeated literal must repeat)."""
    text = tidy_query(query)
    chosen = _chosen_slots(plan, text)
    if not chosen:
        return None
    parts: list[str] = []
    fixed: list[str] = []
    names: dict[str, str] = {}
    position = 0
    for start, end, value in chosen:
        fixed.append(text[position:start])
        parts.append(re.escape(text[position:start]))
        if value in names:
            parts.append(f"(?P={names[value]})")
        else:
            names[value] = f"s{len(names)}"
            parts.append(rf"(?P<{names[value]}>\S(?:.*?\S)?)")
        position = end
    fixed.append(text[position:])
    parts.append(re.escape(text[position:]))
    prefix, suffix = fixed[0].casefold(), fixed[-1].casefold()
    fixed = [part.strip() for part in fixed if part.strip()]
    return QueryPattern("".join(parts), list(names), fixed, prefix, suffix)


_KEY_CHARS = 40
"""How much of a pattern's fixed prefix and suffix its lookup key holds: enough to tell most
patterns apart, few enough that a query has a bounded number of candidate keys."""
_NON_WORD = re.compile(r"\W")


def _lookup_key(kind: str, *parts: str) -> str:
    """An index lookup key: hashed, so long queries make short index entries."""
    return f"{kind}:" + hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _ends_key(fingerprint: str, prefix: str, suffix: str) -> str:
    return _lookup_key("ends", fingerprint, prefix[:_KEY_CHARS], suffix[-_KEY_CHARS:])


def _ends_candidates(text: str) -> tuple[set[str], set[str]]:
    """Every (truncated, case-folded) fixed prefix and suffix a pattern matching ``text`` could
    have: a slot is a whole word, so a prefix ends, and a suffix starts, at a non-word character
    (or is empty)."""
    prefixes: set[str] = set()
    for i in range(len(text)):
        if i == 0 or _NON_WORD.match(text[i - 1]):
            folded = text[:i].casefold()
            prefixes.add(folded[:_KEY_CHARS])
            if len(folded) >= _KEY_CHARS:
                break  # every longer prefix is cut to the same key
    suffixes: set[str] = set()
    for j in range(len(text), 0, -1):
        if j == len(text) or _NON_WORD.match(text[j]):
            folded = text[j:].casefold()
            suffixes.add(folded[-_KEY_CHARS:])
            if len(folded) >= _KEY_CHARS:
                break
    return prefixes, suffixes


def index_plan(store: Store, record: PlanRecord, catalog: ToolCatalog) -> None:
    """Record a stored plan so a later query may reuse it (once its execution succeeds).

    The entry's lookup keys (:meth:`~toolplan.store.protocol.RecordStore.find_records`) are its
    catalog fingerprint with the normalised query (exact), and with the first and last
    :data:`_KEY_CHARS` characters of its slot pattern's fixed ends (parametric), so a lookup
    reads only the entries that could match, however many plans are stored."""
    if not record.query:
        return
    pattern = query_pattern(record.query, record.plan)
    fingerprint, key = catalog_fingerprint(catalog), normalise_query(record.query)
    keys = [_lookup_key("exact", fingerprint, key)]
    if pattern is not None:
        keys.append(_ends_key(fingerprint, pattern.prefix, pattern.suffix))
    PLAN_INDEX.put(
        store,
        {
            "fingerprint": fingerprint,
            "key": key,
            "planId": record.plan_id,
            "query": record.query,
            "pattern": pattern.regex if pattern is not None else None,
            "prefix": pattern.prefix if pattern is not None else None,
            "suffix": pattern.suffix if pattern is not None else None,
        },
        idempotency_key=record.plan_id,
        lookup_keys=keys,
    )


def _may_match(entry: PlanIndexEntry, text: str, key: str) -> bool:
    """Whether ``text`` matches an index entry's slot pattern: the fixed ends first (cheap, and
    most entries fail there), then the pattern itself."""
    pattern, prefix, suffix = entry.get("pattern"), entry.get("prefix"), entry.get("suffix")
    if not isinstance(pattern, str):
        return False
    if isinstance(prefix, str) and not key.startswith(prefix):
        return False
    if isinstance(suffix, str) and not key.endswith(suffix):
        return False
    return re.fullmatch(pattern, text, re.IGNORECASE) is not None


def indexed_plans(
    store: Store, query: str, catalog: ToolCatalog, *, exact: bool
) -> Iterator[PlanRecord]:
    """The indexed plans for the same catalog that may answer ``query`` and whose last execution
    succeeded, exact matches first, then the newest; read one by one, as the caller asks for
    them. The index is read by lookup keys: the entries of the same normalised query, and
    (unless ``exact``) those whose pattern's fixed ends ``query`` starts and ends with; never
    the whole index."""
    key = normalise_query(query)
    fingerprint = catalog_fingerprint(catalog)
    exact_key = _lookup_key("exact", fingerprint, key)
    if exact:
        entries = PLAN_INDEX.find(
            store, {"fingerprint": fingerprint, "key": key}, lookup_keys=[exact_key]
        )
    else:
        text = tidy_query(query)
        prefixes, suffixes = _ends_candidates(text)
        keys = {exact_key} | {_ends_key(fingerprint, p, s) for p in prefixes for s in suffixes}
        entries = [
            entry
            for entry in PLAN_INDEX.find(store, {"fingerprint": fingerprint}, lookup_keys=keys)
            if entry.get("key") == key or _may_match(entry, text, key)
        ]
        # exact matches first, then the newest
        entries.sort(key=lambda entry: entry.get("key") == key)
    for entry in reversed(entries):
        record = store.get_plan(str(entry.get("planId")))
        if record is None:
            continue
        execution = store.get_execution(record.plan_id)
        if execution is not None and execution.status == "succeeded":
            yield record
