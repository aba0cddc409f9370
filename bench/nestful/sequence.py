"""A NESTFUL call sequence: calls with labels, whose arguments reference earlier outputs.

NESTFUL writes a sequence as a JSON list of calls::

    [{"name": "calculate_route", "label": "var1", "arguments": {"mode": "car"}},
     {"name": "calculate_pace", "label": "var2", "arguments": {"distance": "$var1.distance$"}},
     {"name": "var_result", "arguments": {"pace": "$var2$"}}]

``"$var1.distance$"`` is a reference: the ``distance`` field of the output of the call labelled
``var1``; ``"$var1$"`` is its whole output. A reference may also sit inside a longer string
(``"Meeting ID: $var1.id$"``). The last pseudo-call ``var_result`` only names what the answer
is made of; it is not a call, and every scorer drops it.

Models write labels as ``var1``, ``$var1`` or ``$var_1``, and close references with or without
the final ``$``: :func:`read_calls` and :func:`canonical` accept all of those. A ``$...`` that
names no label of the same sequence is text (``"$100-$200"`` is a price range).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RESULT_CALL",
    "Call",
    "CanonicalCall",
    "Reference",
    "call_names",
    "canonical",
    "canonical_value",
    "read_calls",
    "references_in",
    "relabel",
    "without_defaults",
]

RESULT_CALL = "var_result"
"""The pseudo-call that closes a NESTFUL sequence: what the answer is made of, not a call."""

_REFERENCE = re.compile(
    r"\$(?P<label>[A-Za-z_][A-Za-z0-9_-]*)"
    r"(?:(?P<closed>(?:\.[^.$\[\]]+|\[\d+\])*)\$|(?P<open>(?:\.[^.$\s\[\]]+|\[\d+\])*))"
)
"""``$label.path$``; a closed one's keys may hold spaces (``$var1.Exchange Rate$``), an open
one (``$var1.rate``, no final ``$``) ends at the first space."""
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


@dataclass(frozen=True)
class Call:
    """One call of a sequence."""

    name: str
    arguments: Mapping[str, Any]
    label: str | None = None
    """The label later calls reference it by, without ``$`` (``var1``); ``None`` if unlabelled."""

    def to_json(self) -> dict[str, Any]:
        """NESTFUL's form: ``{"name", "label", "arguments"}``."""
        data: dict[str, Any] = {"name": self.name, "arguments": dict(self.arguments)}
        if self.label is not None:
            data["label"] = self.label
        return data


@dataclass(frozen=True)
class Reference:
    """A ``$label.path$`` found in a string."""

    start: int
    end: int
    label: str
    path: str
    """``""`` for the whole output, else ``.field``, ``.list[0].field``..."""


def _label(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip("$ "):
        return None
    return value.strip().strip("$")


def read_calls(raw: Iterable[Any]) -> list[Call]:
    """The calls of a NESTFUL sequence (the gold, or a model's answer in that form), without
    ``var_result``. An item that is not an object with a string ``name`` is skipped; arguments
    come from ``arguments`` (or ``parameters``, which models also write), a JSON string holding
    an object included."""
    calls = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            continue
        if item["name"] == RESULT_CALL:
            continue
        arguments: Any = item.get("arguments", item.get("parameters", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {}
        if not isinstance(arguments, Mapping):
            arguments = {}
        calls.append(Call(item["name"], dict(arguments), _label(item.get("label"))))
    return calls


def references_in(text: str, labels: Iterable[str]) -> Iterator[Reference]:
    """Every reference in ``text`` to one of ``labels`` (each written without ``$``)."""
    known = set(labels)
    for match in _REFERENCE.finditer(text):
        if match.group("label") in known:
            path = (
                match.group("closed") if match.group("closed") is not None else match.group("open")
            )
            yield Reference(match.start(), match.end(), match.group("label"), path or "")


def _replace_references(text: str, labels: Mapping[str, str]) -> str:
    """``text`` with every reference to a label of ``labels`` written ``$<labels[label]><path>$``."""
    out, position = [], 0
    for ref in references_in(text, labels):
        out += [text[position : ref.start], f"${labels[ref.label]}{ref.path}$"]
        position = ref.end
    return "".join(out) + text[position:]


def canonical_value(value: Any, labels: Mapping[str, str] | None = None) -> Any:
    """``value`` in the form two values are compared in (hashable, JSON-like).

    - Scalars become text, in JSON's spelling: ``3``, ``3.0`` and ``"3"`` are all ``"3"``;
      ``True`` and ``"true"`` are ``"true"``; ``None`` is ``"null"``. A string that is not a
      number stays as written (case and spaces count).
    - Lists keep their order; objects are compared by key, in any order.
    - With ``labels`` (a label -> a name for the call it labels), references in strings are
      rewritten to that name, so that two sequences that label their calls differently but
      reference the same call compare equal.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return _number_text(value)
    if isinstance(value, str):
        text = _replace_references(value, labels) if labels else value
        if _NUMBER.fullmatch(text.strip()):
            return _number_text(float(text.strip()))
        return text
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), canonical_value(v, labels)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("__list__", *(canonical_value(item, labels) for item in value))
    return str(value)


def _number_text(number: float) -> str:
    if isinstance(number, float) and number.is_integer() and abs(number) < 1e16:
        return str(int(number))
    return json.dumps(number)


@dataclass(frozen=True)
class CanonicalCall:
    """A call as it is compared: its name and its arguments in :func:`canonical_value` form."""

    name: str
    arguments: tuple[tuple[str, Any], ...]


def call_names(calls: Iterable[Call]) -> dict[str, str]:
    """Each label -> ``name#k``: the called function and which of its calls in the sequence this
    is (1 for the first). References are compared by that, never by the label as written."""
    seen: Counter[str] = Counter()
    names: dict[str, str] = {}
    for call in calls:
        seen[call.name] += 1
        if call.label is not None and call.label not in names:
            names[call.label] = f"{call.name}#{seen[call.name]}"
    return names


def canonical(calls: Iterable[Call]) -> list[CanonicalCall]:
    """The sequence in the form it is scored in: references name the call they read
    (:func:`call_names`), values are in :func:`canonical_value` form."""
    calls = list(calls)
    names = call_names(calls)
    return [
        CanonicalCall(
            call.name,
            tuple(sorted((k, canonical_value(v, names)) for k, v in call.arguments.items())),
        )
        for call in calls
    ]


def _map_strings(value: Any, change: Any) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {k: _map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_map_strings(v, change) for v in value]
    return value


def relabel(calls: Iterable[Call]) -> list[Call]:
    """The calls labelled ``var1``, ``var2``... in order, their references rewritten to match:
    NESTFUL's form, which its scorer needs (it follows only references that start ``$var``)."""
    calls = list(calls)
    new: dict[str, str] = {}
    for n, call in enumerate(calls, 1):
        if call.label is not None:
            new.setdefault(call.label, f"var{n}")

    def change(text: str) -> str:
        return _replace_references(text, new)

    return [
        Call(c.name, _map_strings(dict(c.arguments), change), f"var{n}")
        for n, c in enumerate(calls, 1)
    ]


def without_defaults(
    calls: Iterable[Call], defaults: Mapping[str, Mapping[str, Any]]
) -> list[Call]:
    """``calls`` with every argument dropped that equals its function's declared default
    (``defaults``: function -> argument -> value), compared as :func:`canonical_value` does.
    A call that passes a declared default is the same call as one that leaves it out."""
    out = []
    for call in calls:
        declared = defaults.get(call.name, {})
        kept = {
            name: value
            for name, value in call.arguments.items()
            if name not in declared or canonical_value(value) != canonical_value(declared[name])
        }
        out.append(Call(call.name, kept, call.label))
    return out
