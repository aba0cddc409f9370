"""Parse and resolve ``{{stepId.path[0].key}}`` templates in step parameters.

Grammar::

    template := "{{" ws? source segment* ws? "}}"
    source   := step-id | "$item" | "$index"
    step-id  := [A-Za-z_][A-Za-z0-9_-]*
    segment  := "." key | "[" digits "]" | '["' quoted '"]' | "['" single "']"
    key      := one or more characters other than . [ ] { } and whitespace   (so ``_id`` works)
    quoted   := one or more characters other than " \\ [ ] { }   (``{{rate["Exchange Rate"]}}``)
    single   := one or more characters other than ' \\ [ ] { }   (``{{rate['Exchange Rate']}}``,
                as JSONPath and Python write it; inside a JSON string it needs no escaping)

:func:`reference_text` writes a path back in this grammar, quoting a key only when it must.

Resolution rules:

- A string that is *exactly* one template keeps the referenced JSON type (object, list, number,
  bool, string, null). Given the argument schema, a number or boolean that lands where only text
  is accepted (``"content": "{{cpu.current}}"``) is written as text, as it would be in a sentence.
- Templates inside a longer string are interpolated as text; objects and lists become compact JSON,
  ``null``/``true``/``false`` are written the JSON way.
- ``{{$item}}``, ``{{$item.path}}`` and ``{{$index}}`` are the current item of a ``forEach`` step
  and its position (from 0): the engine resolves them with the item in ``outputs`` under those
  names. They reference no step, so they imply no dependency (:func:`references`).
- A path that does not exist in the actual output raises :class:`~toolplan.errors.TemplateError`
  naming the template and the missing key. An unresolved template is never passed through.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolplan.errors import TemplateError
from toolplan.plan_format.json_schema import accepted_types

__all__ = [
    "INDEX",
    "ITEM",
    "LOOP_NAMES",
    "Template",
    "contains_template",
    "exact_template",
    "find_templates",
    "key_writable",
    "leaves",
    "malformed_templates",
    "map_strings",
    "quoted_reading",
    "reference_text",
    "references",
    "rename_sources",
    "resolve",
    "strings_in",
    "template_spans",
    "to_text",
]

ITEM = "$item"
"""The current item of a ``forEach`` step, as a template source: ``{{$item.title}}``."""
INDEX = "$index"
"""The current item's position in a ``forEach`` list, counted from 0: ``{{$index}}``."""
LOOP_NAMES = frozenset({ITEM, INDEX})
"""Template sources that name a ``forEach`` item rather than a step."""

_STEP_ID = r"[A-Za-z_][A-Za-z0-9_\-]*"
_KEY = r"[^.\[\]{}\s]+"
_QUOTED = r'[^"\\\[\]{}]+'
_SINGLE = r"[^'\\\[\]{}]+"
_REFERENCE = re.compile(
    rf"""^\s*({_STEP_ID}|\$item|\$index)((?:\.{_KEY}|\[\d+\]|\["{_QUOTED}"\]|\['{_SINGLE}'\])*)\s*$"""
)
_SEGMENT = re.compile(rf"""\.({_KEY})|\[(\d+)\]|\["({_QUOTED})"\]|\['({_SINGLE})'\]""")
_PLAIN_KEY = re.compile(rf"{_KEY}")
_QUOTED_KEY = re.compile(_QUOTED)
_SINGLE_KEY = re.compile(_SINGLE)

PathSegment = str | int


def template_spans(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each ``{{...}}``: from a ``{{`` to the first ``}}`` after it, left to
    right, without overlaps.

    The same matches as the regex ``\\{\\{(.*?)\\}\\}`` (DOTALL), in linear time: that regex
    scans to the end of the text again for every unclosed ``{{``, which is quadratic (20,000
    unclosed ``{{`` took minutes). Here, once no ``}}`` follows a ``{{``, none follows any later
    one either, and the scan stops.
    """
    position = 0
    while (start := text.find("{{", position)) != -1:
        end = text.find("}}", start + 2)
        if end == -1:
            return
        position = end + 2
        yield start, position


def key_writable(key: str) -> bool:
    """Whether a template can name ``key``: plainly (``.distance``) or quoted
    (``["Exchange Rate"]``, ``['say "hi"']``); a key holding both quotes, a backslash, brackets
    or braces cannot be."""
    return bool(
        _PLAIN_KEY.fullmatch(key) or _QUOTED_KEY.fullmatch(key) or _SINGLE_KEY.fullmatch(key)
    )


def reference_text(source: str, path: Sequence[PathSegment] = ()) -> str:
    """``source`` and ``path`` as a template's inside: ``route.distance``, ``items[0]``,
    ``rate["Exchange Rate"]`` (a key quoted only when it must be); ``ValueError`` for a key no
    template can name (:func:`key_writable`)."""
    out = [source]
    for segment in path:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif _PLAIN_KEY.fullmatch(segment):
            out.append(f".{segment}")
        elif _QUOTED_KEY.fullmatch(segment):
            out.append(f'["{segment}"]')
        elif _SINGLE_KEY.fullmatch(segment):
            out.append(f"['{segment}']")
        else:
            raise ValueError(f"the key {segment!r} cannot be named in a template")
    return "".join(out)


@dataclass(frozen=True)
class Template:
    """One parsed template: the text as written, the step it references and the path into it."""

    text: str
    step: str
    path: tuple[PathSegment, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Template | None:
        """Parse ``{{...}}`` text; ``None`` when the inside does not follow the grammar."""
        inner = text[2:-2]
        match = _REFERENCE.match(inner)
        if match is None:
            return None
        path: list[PathSegment] = []
        for key, index, quoted, single in _SEGMENT.findall(match.group(2)):
            path.append(int(index) if index else key or quoted or single)
        return cls(text=text, step=match.group(1), path=tuple(path))

    @property
    def is_loop(self) -> bool:
        """Whether it names the current ``forEach`` item or index rather than a step."""
        return self.step in LOOP_NAMES

    def lookup(self, outputs: Mapping[str, Any]) -> Any:
        """Walk the path through ``outputs[self.step]``; raise :class:`TemplateError` if absent."""
        if self.step not in outputs:
            raise TemplateError(
                f"template {self.text!r}: step {self.step!r} has no output "
                "(it has not run or did not succeed)",
                template=self.text,
            )
        current = outputs[self.step]
        for depth, segment in enumerate(self.path):
            current = _step_into(current, segment, self, depth)
        return current


def _step_into(current: Any, segment: PathSegment, template: Template, depth: int) -> Any:
    """``current[segment]``, the ``depth``-th step of ``template``'s path; the errors name the
    path walked so far (written only when one is raised: lookups run for every resolution)."""
    text = template.text
    if isinstance(segment, int) or (isinstance(current, list) and segment.isdigit()):
        index = int(segment)
        if not isinstance(current, list):
            raise TemplateError(
                f"template {text!r}: {_walked(template, depth)!r} is {_describe(current)}, "
                f"not a list, so index [{index}] does not exist",
                template=text,
            )
        if index >= len(current):
            raise TemplateError(
                f"template {text!r}: index [{index}] is out of range for "
                f"{_walked(template, depth)!r} (a list of {len(current)})",
                template=text,
            )
        return current[index]
    if not isinstance(current, dict):
        raise TemplateError(
            f"template {text!r}: {_walked(template, depth)!r} is {_describe(current)}, "
            f"so it has no key {segment!r}",
            template=text,
        )
    if segment not in current:
        keys = ", ".join(sorted(map(str, current))) or "none"
        raise TemplateError(
            f"template {text!r}: missing key {segment!r} in the output of "
            f"{_walked(template, depth)!r} (available keys: {keys})",
            template=text,
        )
    return current[segment]


def _walked(template: Template, depth: int) -> str:
    """The path ``template`` walked before its ``depth``-th step, as a template writes it."""
    return reference_text(template.step, template.path[:depth])


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def leaves(value: Any) -> Iterator[Any]:
    """Every scalar in a JSON value, inside objects and lists."""
    if isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from leaves(item)
    else:
        yield value


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a JSON value, inside objects and lists."""
    return (leaf for leaf in leaves(value) if isinstance(leaf, str))


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A copy of a JSON value with every string, inside objects and lists, passed through
    ``change`` (object keys are left as they are)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]
    return value


def rename_sources(value: Any, rename: Callable[[str], str | None]) -> Any:
    """A copy of a JSON value whose well-formed step templates name ``rename(step)`` instead of
    ``step`` where it gives a name (``{{ old.x }}`` becomes ``{{ new.x }}``, spacing and path
    kept); loop templates and everything else are left as written."""

    def one(text: str) -> str:
        template = Template.parse(text)
        new = None if template is None or template.is_loop else rename(template.step)
        if template is None or new is None:
            return text
        inner = text[2:-2]
        start = inner.index(template.step)
        return "{{" + inner[:start] + new + inner[start + len(template.step) :] + "}}"

    def change(text: str) -> str:
        out, position = [], 0
        for start, end in template_spans(text):
            out += [text[position:start], one(text[start:end])]
            position = end
        return "".join(out) + text[position:]

    return map_strings(value, change)


def find_templates(value: Any) -> Iterator[Template]:
    """Every well-formed template anywhere in a JSON value (strings inside objects and lists)."""
    for text in strings_in(value):
        for start, end in template_spans(text):
            template = Template.parse(text[start:end])
            if template is not None:
                yield template


_SPACED_KEY = r'[^.\[\]{}"\\]+'
_SPACED = re.compile(
    rf'^\s*({_STEP_ID}|\$item|\$index)((?:\.{_SPACED_KEY}|\[\d+\]|\["{_QUOTED}"\])*)\s*$'
)
_SPACED_LONGEST = 200
"""The longest malformed template offered a quoted reading."""
_SPACED_SEGMENT = re.compile(rf'\.({_SPACED_KEY})|\[(\d+)\]|\["({_QUOTED})"\]')


def quoted_reading(text: str) -> str | None:
    """A malformed ``{{...}}`` that names a key with a space plainly
    (``{{rate.Exchange Rate}}``), written as the grammar has it (``{{rate["Exchange Rate"]}}``);
    ``None`` for any other text. For a problem's "did you mean": the model that wrote it saw
    the key in a tool's output sketch."""
    if len(text) > _SPACED_LONGEST:  # the pattern backtracks over spaces: bounded
        return None
    match = _SPACED.match(text[2:-2])
    if match is None:
        return None
    path: list[PathSegment] = []
    for key, index, quoted in _SPACED_SEGMENT.findall(match.group(2)):
        path.append(int(index) if index else key.strip() if key else quoted)
    if any(segment == "" for segment in path):
        return None
    written = "{{" + reference_text(match.group(1), path) + "}}"
    return written if Template.parse(written) is not None and written != text else None


def malformed_templates(value: Any) -> list[str]:
    """Every ``{{...}}`` that does not follow the template grammar, as written."""
    return [
        text[start:end]
        for text in strings_in(value)
        for start, end in template_spans(text)
        if Template.parse(text[start:end]) is None
    ]


def references(value: Any) -> set[str]:
    """The step IDs referenced by templates in ``value`` (``$item``/``$index`` are not steps)."""
    return {template.step for template in find_templates(value) if not template.is_loop}


def contains_template(value: Any) -> bool:
    """Whether ``value`` holds at least one ``{{...}}``, well-formed or not."""
    return any(next(template_spans(text), None) is not None for text in strings_in(value))


def to_text(value: Any) -> str:
    """How a resolved value is written inside a longer string."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def resolve(value: Any, outputs: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> Any:
    """Return ``value`` with every template replaced by data from ``outputs`` (step id → output).

    ``schema`` is the JSON schema of ``value`` (a tool's arguments, ``$ref``s inlined). Where it
    accepts text but not numbers or booleans, a whole-value template resolving to a number or a
    boolean becomes its text: a model writing ``"content": "{{cpu.current}}"`` means the number
    as text, and the tool would reject the bare number.
    """
    if isinstance(value, str):
        resolved = _resolve_string(value, outputs)
        if schema and resolved is not value and _text_only(schema) and _is_scalar(resolved):
            return to_text(resolved)
        return resolved
    if isinstance(value, dict):
        properties = (schema or {}).get("properties") or {}
        return {key: resolve(item, outputs, properties.get(key)) for key, item in value.items()}
    if isinstance(value, list):
        items = (schema or {}).get("items")
        return [
            resolve(item, outputs, items if isinstance(items, Mapping) else None) for item in value
        ]
    return value


def _is_scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float)


def _text_only(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` takes a string but no number or boolean."""
    types = accepted_types(schema)
    return types is not None and "string" in types and not types & _NON_TEXT_SCALARS


_NON_TEXT_SCALARS = frozenset({"number", "integer", "boolean"})


def exact_template(text: str) -> Template | None:
    """The template ``text`` is, with nothing around it (a value :func:`resolve` keeps as the
    referenced JSON value, not text); ``None`` for any other text."""
    if len(text) <= _CACHED_TEXT:
        return _exact_template(text)
    return _exact_template.__wrapped__(text)


_CACHED_TEXT = 256
"""Texts up to this long are parsed once per process: a step's parameters are resolved on
every call (the cache holds at most a few MB)."""


@functools.lru_cache(maxsize=4096)
def _exact_template(text: str) -> Template | None:
    if list(template_spans(text)) != [(0, len(text))]:
        return None
    return Template.parse(text)


def _resolve_string(text: str, outputs: Mapping[str, Any]) -> Any:
    if "{{" not in text:
        return text
    exact = exact_template(text)
    if exact is not None:
        return exact.lookup(outputs)
    spans = list(template_spans(text))
    if not spans:
        return text
    parts: list[str] = []
    position = 0
    for start, end in spans:
        written = text[start:end]
        template = Template.parse(written)
        if template is None:  # validation rejects these; never pass one through silently
            raise TemplateError(f"template {written!r} is malformed", template=written)
        parts.append(text[position:start])
        parts.append(to_text(template.lookup(outputs)))
        position = end
    parts.append(text[position:])
    return "".join(parts)
