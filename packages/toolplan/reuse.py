"""Plan reuse with zero LLM calls: answer a query with a stored plan instead of the planner.

- **Exact:** the same normalised query (case, whitespace, trailing punctuation), the same catalog
  fingerprint (hash of tool names and schemas), and a last execution that succeeded.
- **Parametric:** string literals of the stored plan's parameters that also occur verbatim, as
  whole words, exactly once in its query become slots, so "Compare the weather in Tokyo and
  London" reads "Compare the weather in {a} and {b}". A new query matching that text with other
  values reuses the plan with the values substituted wherever the whole literal occurs.

Safety first: every non-slot part of the query must match exactly (case and spacing aside), two
slots must be separated by fixed text, every slot value is a whole literal of the plan, the
substituted plan is validated against the catalog like any other, and a plan is never reused
across catalog fingerprints. Planned plans are indexed in the store's record collection
:data:`INDEX`; the reused plan is stored under a new request with ``meta.reusedFrom``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from toolplan.config import PlanReuse as ReuseMode
from toolplan.store.protocol import PlanRecord, Store
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "INDEX",
    "Reusable",
    "ReuseMode",
    "catalog_fingerprint",
    "find_reusable",
    "index_plan",
    "normalise_query",
    "reuse_mode",
]

REUSE_MODES: tuple[str, ...] = ("off", "exact", "parametric")
INDEX = "toolplan_plan_index"
"""The record collection of planned plans, by catalog fingerprint and normalised query."""


def reuse_mode(value: str | None, default: ReuseMode = "exact") -> ReuseMode:
    """``TOOLPLAN_PLAN_REUSE``'s mode (``off``, ``exact`` or ``parametric``)."""
    from toolplan.errors import InvalidInput

    if value is None or not value.strip():
        return default
    mode = value.strip().lower()
    if mode not in REUSE_MODES:
        raise InvalidInput(f"TOOLPLAN_PLAN_REUSE must be off, exact or parametric, not {value!r}")
    return "off" if mode == "off" else "exact" if mode == "exact" else "parametric"


def _tidy(query: str) -> str:
    return re.sub(r"[\s.?!;,:]+$", "", re.sub(r"\s+", " ", query).strip())


def normalise_query(query: str) -> str:
    """Case folded, whitespace collapsed, trailing punctuation removed."""
    return _tidy(query).casefold()


def catalog_fingerprint(catalog: ToolCatalog) -> str:
    """A hash of the catalog's tool names and parameter schemas."""
    tools = [[i.name, i.parameters] for i in sorted(catalog.infos(), key=lambda i: i.name)]
    text = json.dumps(tools, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def index_plan(store: Store, record: PlanRecord, catalog: ToolCatalog) -> None:
    """Record a planned plan so a later query may reuse it."""
    if not record.query:
        return
    store.put_record(
        INDEX,
        {
            "fingerprint": catalog_fingerprint(catalog),
            "key": normalise_query(record.query),
            "planId": record.plan_id,
            "query": record.query,
        },
        idempotency_key=record.plan_id,
    )


@dataclass(frozen=True)
class Reusable:
    """A stored plan that answers the query, with the values to put in it."""

    source: PlanRecord
    plan: dict[str, Any]
    """The stored plan with the slot values substituted (the same plan for an exact match)."""
    mode: Literal["exact", "parametric"]
    values: dict[str, str]
    """Stored literal → new value (empty for an exact match)."""


def _literals(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if "{{" not in value:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _literals(item)
    elif isinstance(value, list):
        for item in value:
            yield from _literals(item)


def _plan_literals(plan: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for step in plan.get("steps") or []:
        found.update(_literals(step.get("parameters")))
        fallback = step.get("fallback")
        if isinstance(fallback, dict):
            found.update(_literals(fallback.get("parameters")))
    return {value for value in found if value.strip() and value == value.strip()}


def _slots(text: str, literals: set[str]) -> list[tuple[int, int, str]]:
    """Every whole-word occurrence of a literal in ``text``; a literal whose occurrences touch
    or overlap another slot (whitespace only between them) is left as fixed text, all of it."""
    candidates = set(literals)
    while True:
        hits = sorted(
            (
                (m.start(), m.end(), value)
                for value in candidates
                for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", text)
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


def _pattern(query: str, literals: set[str]) -> tuple[re.Pattern[str], list[str], list[str]] | None:
    """The stored query as a pattern with a group per slot (a repeated literal must repeat),
    the slots' stored values, and the fixed parts."""
    text = _tidy(query)
    chosen = _slots(text, literals)
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
    fixed = [part.strip() for part in fixed if part.strip()]
    return re.compile("".join(parts), re.IGNORECASE), list(names), fixed


def _substitute(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return values.get(value, value)
    if isinstance(value, dict):
        return {key: _substitute(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, values) for item in value]
    return value


def _parametric(query: str, record: PlanRecord) -> Reusable | None:
    found = _pattern(record.query or "", _plan_literals(record.plan))
    if found is None:
        return None
    pattern, stored, fixed = found
    match = pattern.fullmatch(_tidy(query))
    if match is None:
        return None
    values = {value: match.group(f"s{i}") for i, value in enumerate(stored)}
    for new in values.values():
        if any(re.search(rf"(?<!\w){re.escape(part)}(?!\w)", new, re.IGNORECASE) for part in fixed):
            return None  # "in Tokyo and Paris and Rome": the split is a guess, so no reuse
    plan = dict(record.plan)
    plan["steps"] = []
    for step in record.plan.get("steps") or []:
        step = dict(step)
        step["parameters"] = _substitute(step.get("parameters"), values)
        if isinstance(step.get("fallback"), dict):
            fallback = dict(step["fallback"])
            fallback["parameters"] = _substitute(fallback.get("parameters"), values)
            step["fallback"] = fallback
        plan["steps"].append(step)
    return Reusable(record, plan, "parametric", values)


def find_reusable(
    store: Store, query: str, catalog: ToolCatalog, mode: ReuseMode
) -> Reusable | None:
    """The newest indexed plan for the same catalog that answers ``query`` under ``mode`` and
    whose execution succeeded, or ``None``."""
    if mode == "off":
        return None
    key = normalise_query(query)
    entries = store.find_records(INDEX, {"fingerprint": catalog_fingerprint(catalog)})
    exact = [e for e in entries if e.get("key") == key]
    others = [e for e in entries if e.get("key") != key] if mode == "parametric" else []
    for entry in [*reversed(exact), *reversed(others)]:
        record = store.get_plan(str(entry.get("planId")))
        execution = store.get_execution(record.plan_id) if record is not None else None
        if record is None or execution is None or execution.status != "succeeded":
            continue
        if entry.get("key") == key:
            return Reusable(record, record.plan, "exact", {})
        reusable = _parametric(query, record)
        if reusable is not None:
            return reusable
    return None
