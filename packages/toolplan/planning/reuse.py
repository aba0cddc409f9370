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

The index of stored plans and their slot patterns is :mod:`toolplan.service.plan_index`; the
reused plan is stored under a new request with ``meta.reusedFrom``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from toolplan.config.settings import ReuseMode
from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import parse_plan
from toolplan.planning.grounding import Grounds, check_grounding, literal_numbers
from toolplan.planning.words import FUNCTION_WORDS
from toolplan.service.plan_index import (
    indexed_plans,
    normalise_query,
    plan_literals,
    plan_strings,
    query_pattern,
    tidy_query,
    whole_word,
)
from toolplan.store.protocol import PlanRecord, Store
from toolplan.tools.catalog import ToolCatalog

__all__ = ["Reusable", "find_reusable", "match_plan"]

_PUNCTUATION = set(",;:?!()[]{}\"'<>|\n\t")
_MAX_EXTRA_WORDS = 2


@dataclass(frozen=True)
class Reusable:
    """A stored plan that answers the query, with the values to put in it."""

    source: PlanRecord
    plan: dict[str, Any]
    """The stored plan with the slot values substituted (the same plan for an exact match)."""
    mode: Literal["exact", "parametric"]
    values: dict[str, str]
    """Stored literal → new value (empty for an exact match)."""


def _acceptable(stored: str, new: str, fixed: list[str]) -> bool:
    """Whether ``new`` looks like the same kind of value as ``stored`` (a name, not a phrase)."""
    if "{{" in new or "}}" in new:
        return False  # a template smuggled in through the query
    if any(re.search(whole_word(part), new, re.IGNORECASE) for part in fixed):
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


def _grounded(
    plan: dict[str, Any], query: str, stored_query: str, catalog: ToolCatalog | None
) -> bool:
    """Whether every literal of the substituted ``plan`` is grounded in the new ``query``:
    its numbers are in it, no whole-word phrase of ``stored_query`` stays unless ``query``
    has it too, and (with the catalog) the planner's grounding check passes."""
    grounds = Grounds(query)
    if any(
        not grounds.has_number(n) for value in plan_literals(plan) for n in literal_numbers(value)
    ):
        return False  # numbers are never slots: one the new query lacks came from elsewhere
    for text in plan_strings(plan):
        if "{{" in text or not text.strip():
            continue
        old = re.search(whole_word(text.strip()), stored_query, re.IGNORECASE)
        if old and not re.search(whole_word(text.strip()), query, re.IGNORECASE):
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
    found = query_pattern(record.query or "", record.plan)
    if found is None:
        return None
    match = re.fullmatch(found.regex, tidy_query(query), re.IGNORECASE)
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
            reasoning = re.sub(whole_word(old), new.replace("\\", "\\\\"), reasoning)
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
    if not _grounded(plan, tidy_query(query), tidy_query(record.query or ""), catalog):
        return None
    return Reusable(record, plan, "parametric", values)


def find_reusable(
    store: Store, query: str, catalog: ToolCatalog, mode: ReuseMode
) -> Reusable | None:
    """The newest indexed plan for the same catalog that answers ``query`` under ``mode`` and
    whose last execution succeeded (:func:`~toolplan.service.plan_index.indexed_plans`), or
    ``None``."""
    if mode == "off":
        return None
    for record in indexed_plans(store, query, catalog, exact=mode == "exact"):
        reusable = match_plan(query, record, catalog)
        if reusable is not None and (mode == "parametric" or reusable.mode == "exact"):
            return reusable
    return None
