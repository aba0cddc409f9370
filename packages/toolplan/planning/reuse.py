"""Plan reuse with zero LLM calls: answer a query with a stored plan instead of the planner.

- **Exact:** the same normalised query (case, whitespace, trailing punctuation), the same catalog
  fingerprint (hash of tool names, parameter schemas and declared return schemas), and a last
  execution that succeeded.
- **Parametric:** string literals of the stored plan's parameters that also occur verbatim, as
  whole words, in its query become slots, so "Compare the weather in Tokyo and London" reads
  "Compare the weather in {a} and {b}". A new query matching that text with other values reuses
  the plan with the values substituted wherever the whole literal occurs.

Safety first (measured on held-out style queries by ``python -m bench.reuse``, see BENCHMARKS.md): a literal is a slot only if it occurs nowhere else in the plan inside a longer
string (``alice@example.com`` for the slot ``Alice``) and nowhere in the query inside a longer
word; every non-slot part of the query must match exactly (case and spacing aside); two slots
must be separated by fixed text; a new value may not contain that fixed text, template braces,
punctuation, digits or function words ("the", "of", "before", ...) that the stored value does not
have, nor be much longer than it, nor (for a capitalised name) hold lower-case words
of more than three letters; the substituted plan is validated against the catalog like any
other; and a plan is never reused across catalog fingerprints. Numbers are never slots.

No literal that the new request does not ground is carried over (:func:`_grounded`): a number of
the substituted plan must be in the new query (an invented temperature is in neither, and a
number of the stored query is in the new one only where the fixed text keeps it), a string the
stored query holds as whole words must be in the new query too (else it is the old request's
value, left in place), and, with the catalog, the plan must pass the planner's grounding check
(:mod:`toolplan.planning.grounding`) against the new query. Otherwise the query is planned anew.

Every plan the planner stores, and every reused plan, is indexed in the store's record collection
:data:`INDEX` by :func:`toolplan.service.operations.store_plan` (with the slot pattern of the query, so a
lookup reads only the plans whose pattern matches); the reused plan is stored under a new request
with ``meta.reusedFrom``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from toolplan.planning.grounding import Grounds, check_grounding, literal_numbers
from toolplan.planning.words import FUNCTION_WORDS
from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import parse_plan
from toolplan.plan_format.templates import strings_in
from toolplan.store.protocol import PlanRecord, Store
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "INDEX",
    "Reusable",
    "ReuseMode",
    "catalog_fingerprint",
    "find_reusable",
    "index_plan",
    "match_plan",
    "normalise_query",
    "reuse_mode",
]

ReuseMode = Literal["off", "exact", "parametric"]
"""Plan reuse before planning a query: ``off``, ``exact`` (the same query) or ``parametric``
(the same text with other values)."""

REUSE_MODES: tuple[str, ...] = ("off", "exact", "parametric")
INDEX = "toolplan_plan_index"
"""The record collection of planned plans, by catalog fingerprint and normalised query."""

_NUL = "\x00"
_PUNCTUATION = set(",;:?!()[]{}\"'<>|\n\t")
_MAX_EXTRA_WORDS = 2


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


@dataclass(frozen=True)
class Reusable:
    """A stored plan that answers the query, with the values to put in it."""

    source: PlanRecord
    plan: dict[str, Any]
    """The stored plan with the slot values substituted (the same plan for an exact match)."""
    mode: Literal["exact", "parametric"]
    values: dict[str, str]
    """Stored literal → new value (empty for an exact match)."""


def _plan_strings(plan: dict[str, Any]) -> list[str]:
    """Every string in the steps' parameters (and fallbacks'), templates included."""
    found: list[str] = []
    for step in plan.get("steps") or []:
        found.extend(strings_in(step.get("parameters")))
        fallback = step.get("fallback")
        if isinstance(fallback, dict):
            found.extend(strings_in(fallback.get("parameters")))
    return found


def _whole(value: str) -> str:
    return rf"(?<!\w){re.escape(value)}(?!\w)"


def _safe(value: str, slots: set[str], strings: list[str], text: str) -> bool:
    """Whether ``value`` is nowhere but in whole values of the plan and whole words of the query,
    the other slots (which are replaced too) aside."""
    folded = value.casefold()
    if any(folded in other.casefold() for other in strings if other not in slots):
        return False  # part of a value that stays ("Alice" in "alice@example.com"): derived
    rest = text
    for slot in sorted(slots, key=len, reverse=True):
        rest = re.sub(_whole(slot), _NUL, rest)
    return folded not in rest.casefold()  # else also inside a longer word ("Tokyoites")


def _chosen_slots(plan: dict[str, Any], text: str) -> list[tuple[int, int, str]]:
    """The slots of ``text``: the plan's literals (whole strings without templates) occurring
    in it as whole words, safe (:func:`_safe`) and separated by fixed text, as spans."""
    strings = _plan_strings(plan)
    literals = {v for v in strings if "{{" not in v and v.strip() and v == v.strip()}
    candidates = {v for v in literals if re.search(_whole(v), text)}
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
                for m in re.finditer(_whole(value), text)
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
class _Pattern:
    regex: str
    stored: list[str]
    """The slots' stored values, in group order (``s0``, ``s1``, ...)."""
    fixed: list[str]
    """The fixed text between the slots."""
    prefix: str
    """The text before the first slot, case folded (a lookup's cheap first test)."""
    suffix: str
    """The text after the last slot, case folded."""


def _pattern(query: str, plan: dict[str, Any]) -> _Pattern | None:
    """The stored query as a pattern with a group per slot (a repeated literal must repeat)."""
    text = _tidy(query)
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
    return _Pattern("".join(parts), list(names), fixed, prefix, suffix)


def _acceptable(stored: str, new: str, fixed: list[str]) -> bool:
    """Whether ``new`` looks like the same kind of value as ``stored`` (a name, not a phrase)."""
    if "{{" in new or "}}" in new:
        return False  # a template smuggled in through the query
    if any(re.search(_whole(part), new, re.IGNORECASE) for part in fixed):
        return False  # "in Tokyo and Paris and Rome": the split is a guess
    if any(ch in _PUNCTUATION and ch not in stored for ch in new):
        return False  # "Tokyo, Paris": a list where one value was
    identifier = len(stored.split()) == 1 and re.search(r"[_@./\\]", stored) is not None
    if not identifier and any(ch.isdigit() for ch in new) and not any(c.isdigit() for c in stored):
        return False  # "10001" where a city was
    old_words, new_words = stored.casefold().split(), new.casefold().split()
    if (set(new_words) & FUNCTION_WORDS) - set(old_words):
        return False  # "the capital of France", "the day before": a phrase, not a name
    if len(new_words) > max(len(old_words), 1) + _MAX_EXTRA_WORDS:
        return False
    if all(word[:1].isupper() for word in stored.split()) and not all(
        word[:1].isupper() or len(word) <= 3 for word in new.split()
    ):
        return False  # "London" -> "Oslo tomorrow": a name, then words the slot swallowed
    return not identifier or len(new_words) == 1  # "cpu_usage" -> "cpu_usage or disk_io"


def _substitute(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return values.get(value, value)
    if isinstance(value, dict):
        return {key: _substitute(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, values) for item in value]
    return value


def _literals(plan: dict[str, Any]) -> list[Any]:
    """Every parameter value of the steps and their fallbacks, as written."""
    found: list[Any] = []
    for step in plan.get("steps") or []:
        found.append(step.get("parameters"))
        fallback = step.get("fallback")
        if isinstance(fallback, dict):
            found.append(fallback.get("parameters"))
    return found


def _grounded(
    plan: dict[str, Any], query: str, stored_query: str, catalog: ToolCatalog | None
) -> bool:
    """Whether every literal of the substituted ``plan`` is grounded in the new ``query``:
    its numbers are in it, no whole-word phrase of ``stored_query`` stays unless ``query``
    has it too, and (with the catalog) the planner's grounding check passes."""
    grounds = Grounds(query)
    if any(not grounds.has_number(n) for value in _literals(plan) for n in literal_numbers(value)):
        return False  # numbers are never slots: one the new query lacks came from elsewhere
    for text in _plan_strings(plan):
        if "{{" in text or not text.strip():
            continue
        old = re.search(_whole(text.strip()), stored_query, re.IGNORECASE)
        if old and not re.search(_whole(text.strip()), query, re.IGNORECASE):
            return False  # the stored request's value, not replaced
    if catalog is None:
        return True
    try:
        parsed = parse_plan(plan)
    except PlanInvalid:  # not a plan any more: planned anew
        return False
    return not check_grounding(parsed, catalog, query)


def match_plan(
    query: str, record: PlanRecord, catalog: ToolCatalog | None = None
) -> Reusable | None:
    """``record``'s plan for ``query``: exact when the normalised queries are equal, else
    parametric with the slot values substituted, or ``None`` when the safety rules refuse or
    a literal of the plan is not grounded in ``query`` (checked against ``catalog``'s tool
    outputs too when it is given)."""
    if normalise_query(query) == normalise_query(record.query or ""):
        return Reusable(record, record.plan, "exact", {})
    found = _pattern(record.query or "", record.plan)
    if found is None:
        return None
    match = re.fullmatch(found.regex, _tidy(query), re.IGNORECASE)
    if match is None:
        return None
    values = {value: match.group(f"s{i}") for i, value in enumerate(found.stored)}
    if not all(_acceptable(old, new, found.fixed) for old, new in values.items()):
        return None
    values = {old: new for old, new in values.items() if new != old}
    plan = dict(record.plan)
    if isinstance(plan.get("reasoning"), str):
        reasoning = plan["reasoning"]
        for old, new in values.items():
            reasoning = re.sub(_whole(old), new.replace("\\", "\\\\"), reasoning)
        plan["reasoning"] = reasoning
    plan["steps"] = []
    for step in record.plan.get("steps") or []:
        step = dict(step)
        step["parameters"] = _substitute(step.get("parameters"), values)
        if isinstance(step.get("fallback"), dict):
            fallback = dict(step["fallback"])
            fallback["parameters"] = _substitute(fallback.get("parameters"), values)
            step["fallback"] = fallback
        plan["steps"].append(step)
    if not _grounded(plan, _tidy(query), _tidy(record.query or ""), catalog):
        return None
    return Reusable(record, plan, "parametric", values)


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
    pattern = _pattern(record.query, record.plan)
    fingerprint, key = catalog_fingerprint(catalog), normalise_query(record.query)
    keys = [_lookup_key("exact", fingerprint, key)]
    if pattern is not None:
        keys.append(_ends_key(fingerprint, pattern.prefix, pattern.suffix))
    store.put_record(
        INDEX,
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


def _may_match(entry: dict[str, Any], text: str, key: str) -> bool:
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


def find_reusable(
    store: Store, query: str, catalog: ToolCatalog, mode: ReuseMode
) -> Reusable | None:
    """The newest indexed plan for the same catalog that answers ``query`` under ``mode`` and
    whose last execution succeeded, or ``None``. The index is read by lookup keys: the entries
    of the same normalised query, and (parametric) those whose pattern's fixed ends ``query``
    starts and ends with; never the whole index."""
    if mode == "off":
        return None
    key = normalise_query(query)
    fingerprint = catalog_fingerprint(catalog)
    exact = _lookup_key("exact", fingerprint, key)
    if mode == "exact":
        entries = store.find_records(
            INDEX, {"fingerprint": fingerprint, "key": key}, lookup_keys=[exact]
        )
    else:
        text = _tidy(query)
        prefixes, suffixes = _ends_candidates(text)
        keys = {exact} | {_ends_key(fingerprint, p, s) for p in prefixes for s in suffixes}
        entries = [
            entry
            for entry in store.find_records(INDEX, {"fingerprint": fingerprint}, lookup_keys=keys)
            if entry.get("key") == key or _may_match(entry, text, key)
        ]
        # exact matches first, then the newest
        entries.sort(key=lambda entry: entry.get("key") == key)
    for entry in reversed(entries):
        record = store.get_plan(str(entry.get("planId")))
        if record is None:
            continue
        execution = store.get_execution(record.plan_id)
        if execution is None or execution.status != "succeeded":
            continue
        reusable = match_plan(query, record, catalog)
        if reusable is not None and (mode == "parametric" or reusable.mode == "exact"):
            return reusable
    return None
