"""Unasked steps: a planner check for a step the request never asked for.

Given several tools, a small model calls the ones the request asked for and then some that only
look related, with values it makes up: "run a t-test on groups A and B" also got
``get_personality_traits(hobby="reading")``, and a guitar's price got
``identify_color_rgb(color_name="white")``. Every schema accepts such a step, and it runs. The
grounding checks (:mod:`toolplan.planning.grounding`) do not see it: it takes nothing from
another step, so there is no template to suggest.

A step is *unasked* when all of these hold, each read so that a step the user asked for is
never caught (a model rightly rewrites what it was told, and writes text of its own):

* it takes nothing from another step (no template, no ``forEach``, no ``when``): a step that
  does is there to use what the plan found;
* the request names nothing the tool is about: no word of the tool's name or description, by
  its first four letters too, function words and words every description has aside
  (``weather`` asks for ``get_weather``, "draft a welcome message" for ``createDraft`` with any
  title);
* its required arguments are given literal strings, and the request mentions none of them. A
  value *mentioned* is a word of it in the request (``"Boston, MA"`` for Boston), the same first
  four letters (``hearts``, ``Germany`` for "German"), initials (``Los Angeles`` for LA), an
  abbreviation (``km`` for kilometers, either way round) or a code in capitals (``USD`` for
  "US dollars", ``AAPL``); words are split at underscores and capitals (``disk_io``). A value
  the catalog offers (the argument's ``enum``, ``const``, ``default``, a word of its
  description like ``'dontcare'``) proves nothing either way, and neither does a string with a
  digit (a time, a date, a code like ``"C12H22O11"``) or a number (a model rightly computes
  one: 4 kings in a deck of 52);
* the request is written in a Latin script: a value translated from another one (Beijing for
  北京) cannot be matched by its letters. A plan with no request at all (a document) is not
  checked either.

When the plan has other steps and nothing uses the unasked ones' output, the planner drops
them itself (:func:`drop_unasked`), and the planning record says so (``unaskedSteps``): told to
remove such a step, the small model kept it through both repairs, and planning failed. A step
that only waited for one (``dependsOn``) waits for it no more, and may then be merged as a plain
repeat (BFCL ``multiple_165``: the guitar's price again "after" the colour lookup). Otherwise
the plan goes back to the model, which uses the request's values, removes the step, or (when
every step is unasked: no tool does what was asked) answers with no steps.
``python -m bench.grounding`` measures the false refusals on BFCL's answers, whose values all
come from the request: none over 2,351 entries, with every allowed value of each argument.

This is the ``unasked`` rule of the rewrite pipeline (:mod:`toolplan.planning.rewrites`), a
*heuristic* one: it runs only with ``TOOLPLAN_PLANNER_REWRITES=all`` (or
``Toolplan(rewrites="all")``), and each change it makes is recorded as ``{rule, step, before,
after}`` and printed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolplan.errors import ValidationIssue
from toolplan.plan_format.json_schema import listed_values, union_parts
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import contains_template, references, strings_in
from toolplan.planning.words import FUNCTION_WORDS
from toolplan.tools.catalog import ToolCatalog, ToolInfo

__all__ = ["asks_for_tool", "check_unasked", "drop_unasked", "latin_script", "mentions"]

_WORD = re.compile(r"[^\W\d_]+|\d+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_DIGIT = re.compile(r"\d")
_CODE = re.compile(r"[A-Z][A-Z0-9]{1,4}")
_LETTER = re.compile(r"[^\W\d_]")
_STEM = 4
_ABBREVIATION = 3
_VOWELS = frozenset("aeiouy")
_ORDINALS = frozenset(["st", "nd", "rd", "th"])
_LATIN_SHARE = 0.8
_SHOWN = 3
_GENERIC = frozenset(
    [
        "function",
        "tool",
        "given",
        "specified",
        "specific",
        "particular",
        "certain",
        "based",
        "using",
        "use",
        "used",
        "returns",
        "return",
        "provides",
        "provide",
        "information",
        "details",
        "data",
        "value",
        "values",
    ]
)
"""Words of tool descriptions that say nothing of what a tool is about."""


def latin_script(text: str) -> bool:
    """Whether ``text`` is written in a Latin script (or has no letters): what its words can be
    matched against."""
    letters = [c for c in text if c.isalpha()]
    return not letters or sum(c.isascii() for c in letters) / len(letters) > _LATIN_SHARE


_IRREGULAR = {
    "women": "woman",
    "men": "man",
    "children": "child",
    "people": "person",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
}
"""Plurals the first four letters do not match with their singular (``women`` for "woman")."""


def _words(text: str) -> list[str]:
    """The words of ``text``, folded, split at underscores, dots and capitals too; an irregular
    plural as its singular."""
    return [_IRREGULAR.get(w, w) for w in _WORD.findall(_CAMEL.sub(" ", text).casefold())]


def _content(words: Iterable[str]) -> set[str]:
    return {w for w in words if w not in FUNCTION_WORDS and w not in _GENERIC}


def _shares(words: Iterable[str], said: set[str]) -> bool:
    """Whether a word of ``words`` is one of ``said``, or has its first four letters."""
    stems = {w[:_STEM] for w in said if len(w) >= _STEM}
    return any(w in said or (len(w) >= _STEM and w[:_STEM] in stems) for w in words)


def mentions(request: str, value: str) -> bool:
    """Whether ``request`` mentions ``value``, read loosely (see the module's docstring)."""
    stripped = value.strip()
    folded = stripped.casefold()
    if not folded or folded in request.casefold() or _CODE.fullmatch(stripped):
        return True
    said = _content(_words(request))
    words = _words(stripped)
    content = _content(words)
    if not words or _shares(content, said):
        return True
    initials = "".join(w[0] for w in words)
    if any(2 <= len(w) <= len(initials) and initials.startswith(w) for w in said):
        return True
    alone = len(content) == 1  # a value that is one short word is meant as an abbreviation
    return any(
        _abbreviates(a, b, any_letters=alone) or _abbreviates(b, a) for a in content for b in said
    )


def _abbreviates(short: str, word: str, *, any_letters: bool = False) -> bool:
    """Whether ``short`` abbreviates ``word``: two or three letters, ``word``'s first letter,
    then its other letters in order (``km`` for kilometers, ``cm`` for centimeter, ``gb`` for
    GenBank). Unless ``any_letters``, only consonants: a unit, a format, not a word like "do"
    or "can", nor an ordinal's ``st``."""
    if not 2 <= len(short) <= _ABBREVIATION < len(word) or short[0] != word[0]:
        return False
    if not short.isalpha() or short in _ORDINALS:
        return False
    if not any_letters and set(short) & _VOWELS:
        return False
    rest = iter(word[1:])
    return all(letter in rest for letter in short[1:])


def asks_for_tool(request: str, info: ToolInfo) -> bool:
    """Whether ``request`` names what the tool is about: a word of its name or description
    (``weather`` for ``get_weather``, ``draft`` for ``createDraft``), function words and
    words every description has aside."""
    about = _content(_words(f"{info.name} {info.description}"))
    # a single letter or a bare number says nothing of a tool (``s`` and ``3`` of ``s3_list``)
    named = {w for w in about if len(w) > 1 and not w.isdigit()}
    return _shares(named, _content(_words(request)))


def _in_words(text: str, value: str) -> bool:
    """Whether ``value`` is a word (or words) of ``text``: ``'dontcare'`` in an argument's
    description that says to pass it when the user has no preference."""
    folded = value.strip().casefold()
    return (
        bool(folded)
        and re.search(rf"(?<!\w){re.escape(folded)}(?!\w)", text.casefold()) is not None
    )


def _takes_from_others(step: Step) -> bool:
    return (
        step.for_each is not None
        or step.condition is not None
        or contains_template(step.parameters)
    )


def _offered(schema: Any) -> tuple[list[Any], str]:
    """The values an argument's schema offers (``enum``, ``const``, ``default``, in any
    branch too) and the text of its descriptions."""
    parts = union_parts(schema)
    values = [*(listed_values(schema) or []), *(part.get("default") for part in parts)]
    return values, " ".join(str(part.get("description") or "") for part in parts)


def _unmentioned(step: Step, schema: Mapping[str, Any], request: str) -> list[tuple[str, str]]:
    """The required arguments' literal strings, as ``(argument, value)``, if the request
    mentions none of them (else nothing). A value the catalog offers proves nothing either
    way, and is left out."""
    assert isinstance(step.parameters, dict)
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    found: list[tuple[str, str]] = []
    for name in required if isinstance(required, list) else []:
        if name not in step.parameters:
            continue
        offered, described = _offered(properties.get(name))
        for value in strings_in(step.parameters[name]):
            if not value.strip():
                continue
            if value in offered or _in_words(described, value):
                continue  # the catalog's own choice ('celsius', 'dontcare')
            if not _LETTER.search(value) or _DIGIT.search(value):
                continue  # a number written as text (a time, a date), or a code (C6H12O6)
            if mentions(request, value):
                return []
            found.append((name, value))
    return found


def check_unasked(plan: Plan, catalog: ToolCatalog, request: str) -> list[ValidationIssue]:
    """One issue per step the request does not ask for (see the module's docstring).
    ``request`` is everything the planner was told: the query, and a replan's context."""
    if not request.strip() or not latin_script(request):
        return []  # nothing to compare with, or nothing its letters can match
    unasked: list[tuple[Step, list[tuple[str, str]]]] = []
    for step in plan.steps:
        if step.tool not in catalog or not isinstance(step.parameters, dict):
            continue
        info = catalog.info(step.tool)
        if _takes_from_others(step) or asks_for_tool(request, info):
            continue
        found = _unmentioned(step, info.parameters, request)
        if found:
            unasked.append((step, found))
    every = len(unasked) == len(plan.steps)
    issues = []
    for step, found in unasked:
        shown = ", ".join(f"{value!r} ({name})" for name, value in found[:_SHOWN])
        fix = (
            "if no tool does what the request asks, answer with no steps"
            if every
            else f"if the request does not ask for what {step.tool!r} does, remove the step"
        )
        issues.append(
            ValidationIssue(
                "unasked",
                f"step {step.id!r}: the request mentions neither what tool {step.tool!r} "
                f"does nor the values the step passes it: {shown}. Use the values the request "
                f"gives; {fix}",
                step.id,
            )
        )
    return issues


def drop_unasked(
    plan: Plan, issues: Sequence[ValidationIssue]
) -> tuple[Plan, dict[str, str]] | None:
    """``plan`` without its unasked steps, and those as ``{step id: tool}``, when that is all
    that is wrong with it: every issue is an unasked step, no step uses one's output, and a
    step the request asked for is left. A step that only waits for one (``dependsOn``, no
    template) waits for it no more: what it waited for is not to run. ``None`` otherwise (the
    issues go to the model)."""
    if not issues or any(issue.code != "unasked" or not issue.step for issue in issues):
        return None
    unasked = {issue.step for issue in issues if issue.step}
    kept = [step for step in plan.steps if step.id not in unasked]
    if not kept:
        return None
    for step in kept:
        if references(step.model_dump(by_alias=True, exclude={"id", "depends_on"})) & unasked:
            return None
    dropped = {step.id: step.tool for step in plan.steps if step.id in unasked}
    return plan.without(unasked), dropped
