"""Templates checked against what tools return, before anything runs.

A template walks into another step's output: ``{{metrics.metrics[0].name}}``. When the referenced
tool declares its output (:mod:`toolplan.tools.returns`), the validator can tell, without running
anything, that

- a path does not exist: ``{{metrics[0]}}`` where ``list_metrics`` returns an object, or
  ``{{weather.temperature}}`` where ``get_weather`` returns ``temp``;
- a whole-value template has the wrong type for its argument: ``"value": "{{cpu}}"`` passes an
  object where ``check_threshold`` takes a number. A number or boolean where text is expected is
  not a problem: it is resolved as its text.

Each problem names the fix (the path that exists, a field of the right type), so one repair round
can correct it. An output that is unknown (``None``), open (an object without declared keys) or a
union of shapes is not checked: only definite mismatches are reported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolplan.errors import ValidationIssue
from toolplan.plan_format.json_schema import accepted_types, inline_refs
from toolplan.plan_format.names import alike_name
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import (
    ITEM,
    PathSegment,
    Template,
    find_templates,
    reference_text,
)
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation.makers import Makers

__all__ = [
    "check_template_types",
    "declared_schema",
    "fits_path",
    "list_in_output",
    "schema_kind",
]

_KIND_NAMES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "null": "null",
}


class _Mismatch(Exception):
    """A path step that cannot exist in the declared output."""

    def __init__(self, message: str, *, missing: str | None = None) -> None:
        super().__init__(message)
        self.missing = missing
        """The key the output lacks at its top, when the message names no fix: another tool
        may make it (:mod:`toolplan.validation.makers`)."""


@dataclass(frozen=True)
class _Output:
    """The declared output schema of one step, when it is certain."""

    step: str
    tool: str
    schema: Mapping[str, Any]
    label: str | None = None
    """How the output is named in messages when not ``step 'id' (tool)``."""


def _one_shape(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``schema`` without a ``null`` branch; ``None`` when several shapes remain (not checked)."""
    branches = schema.get("anyOf") or schema.get("oneOf")
    if not branches:
        return schema
    shapes = [b for b in branches if isinstance(b, Mapping) and b.get("type") != "null"]
    return shapes[0] if len(shapes) == 1 else None


def _kind(schema: Mapping[str, Any]) -> str | None:
    types = accepted_types(schema)
    if types is None:
        return "object" if "properties" in schema else None
    types.discard("null")
    return next(iter(types)) if len(types) == 1 else None


def _describe(schema: Mapping[str, Any]) -> str:
    kind = _kind(schema)
    if kind == "object" and schema.get("properties"):
        return f"an object with keys {', '.join(schema['properties'])}"
    return _KIND_NAMES.get(kind or "", "a value")


def _written(step: str, path: tuple[PathSegment, ...]) -> str:
    try:
        return reference_text(step, path)
    except ValueError:  # a key no template names: said as Python would
        return step + "".join(f"[{s!r}]" for s in path)


def _walk(
    output: _Output, template: Template, *, listing: bool = False
) -> Mapping[str, Any] | None:
    """The schema at ``template``'s path, ``None`` when it cannot be known; raises
    :class:`_Mismatch` when the path cannot exist. ``listing``: the template is where a list
    goes (a ``forEach``, an argument that takes one), so a missing key may be a list's name."""
    current: Mapping[str, Any] | None = output.schema
    walked: tuple[PathSegment, ...] = ()
    for segment in template.path:
        if current is None:
            return None
        shape = _one_shape(current)
        if shape is None:
            return None
        kind = _kind(shape)
        here = _written(output.step, walked)
        what = f"{here!r}" if walked else (output.label or f"step {output.step!r} ({output.tool})")
        if isinstance(segment, int) or (kind == "array" and segment.isdigit()):
            if kind == "array":
                items = shape.get("items")
                current = items if isinstance(items, Mapping) and items else None
            elif kind is None:
                return None
            else:
                rest = template.path[len(walked) :]
                hint = _list_hint(output.step, walked, shape, rest) or _value_hint(
                    output.step, walked, kind, rest
                )
                raise _Mismatch(
                    f"{what} returns {_describe(shape)}, not a list, so [{segment}] does not "
                    f"exist{hint}"
                )
        elif kind == "object":
            properties = shape.get("properties") or {}
            if segment in properties:
                current = properties[segment]
            elif properties and not shape.get("additionalProperties"):
                # only a key spelled like it, that begins with its words: told "did you mean
                # phone_number?" of a missing hotel_name (or number), the model would take a
                # phone number for a name
                close = alike_name(segment, properties, leading=True)
                rest = template.path[len(walked) + 1 :]
                if close:
                    meant = _written(output.step, (*walked, close, *rest))
                    hint = f"; did you mean {{{{{meant}}}}}?"
                elif _element_of_a_list_it_is_not(rest, shape):
                    meant = _written(output.step, (*walked, *rest[1:]))
                    hint = f"; it is one object, not a list: did you mean {{{{{meant}}}}}?"
                elif listing or (rest and isinstance(rest[0], int)):
                    # a list asked for by a name of its own (``{{s.items}}``, ``{{s.items[0]}}``)
                    hint = _list_hint(output.step, walked, shape, rest)
                elif _listed_key(shape, segment):
                    hint = _list_hint(output.step, walked, shape, (0, segment, *rest))
                else:
                    # a value the object does not hold is not in its one list either: told "the
                    # list is under 'cardPhotos'" of a hotel's missing rating, the model would
                    # take photos for it
                    hint = ""
                raise _Mismatch(
                    f"{what} returns an object with keys {', '.join(properties)}, "
                    f"without {segment!r}{hint}",
                    missing=segment if not walked and not hint else None,
                )
            else:
                return None
        elif kind == "array":
            rest = template.path[len(walked) :]
            fixed = _written(output.step, (*walked, 0, *rest))
            raise _Mismatch(
                f"{what} returns a list, so it has no key {segment!r}; pick an element, "
                f"e.g. {{{{{fixed}}}}}"
            )
        elif kind is None:
            return None
        else:
            raise _Mismatch(f"{what} returns {_KIND_NAMES[kind]}, so it has no key {segment!r}")
        walked = (*walked, segment)
    return current


def _element_of_a_list_it_is_not(rest: tuple[PathSegment, ...], shape: Mapping[str, Any]) -> bool:
    """``{{s.items[0].id}}`` where ``s`` returns one object with ``id``: the path took the object
    for a list of such objects (NESTFUL's search outputs are the first result, flattened). Not
    when the object's only list holds items with that key: the list is then the one meant."""
    properties = shape.get("properties") or {}
    if not (
        len(rest) >= 2
        and isinstance(rest[0], int)
        and isinstance(rest[1], str)
        and rest[1] in properties
    ):
        return False
    return not _listed_key(shape, rest[1])


def _list_hint(
    step: str,
    walked: tuple[PathSegment, ...],
    shape: Mapping[str, Any],
    rest: tuple[PathSegment, ...],
) -> str:
    """When the object holds exactly one list, the path through it."""
    only = _only_list(shape)
    if only is None:
        return ""
    return f"; the list is under {only!r}: {{{{{_written(step, (*walked, only, *rest))}}}}}"


def _value_hint(
    step: str, walked: tuple[PathSegment, ...], kind: str, rest: tuple[PathSegment, ...]
) -> str:
    """``{{s.id[0]}}`` or ``{{s.id[0].id}}`` where ``s.id`` is one value (a string, a number):
    the value itself is what the path means (NESTFUL executable-45 wrote
    ``{{search.restaurantsId[0].restaurantsId}}``)."""
    if kind == "object" or not walked or rest[0] not in (0, "0"):
        return ""  # [1] of one value means a second one, which nothing offers
    after = rest[1:]
    repeated = len(after) == 1 and isinstance(walked[-1], str) and after[0] == walked[-1]
    if after and not repeated:
        return ""
    return f"; it is one value: {{{{{_written(step, walked)}}}}}"


def _listed_key(shape: Mapping[str, Any], key: str) -> bool:
    """The items of the object's only list have ``key``."""
    only = _only_list(shape)
    if only is None:
        return False
    listed = _one_shape((shape.get("properties") or {})[only]) or {}
    items = _one_shape(listed.get("items") or {}) or {}
    return key in (items.get("properties") or {})


def _only_list(shape: Mapping[str, Any]) -> str | None:
    """The key of an object schema's only list-typed property; ``None`` for none or several."""
    properties = shape.get("properties") or {}
    lists = [name for name, sub in properties.items() if _kind(_one_shape(sub) or {}) == "array"]
    return lists[0] if len(lists) == 1 else None


def list_in_output(
    step: str, returns: Mapping[str, Any] | None, *, mapped: bool = False
) -> tuple[str, Mapping[str, Any] | None] | None:
    """The one list a step's declared output offers to map over, as ``(template, item schema)``:
    the whole output when it is a list (always, for a ``forEach`` step: ``mapped``; its items are
    then ``returns``), else the object's only list-typed key. ``None`` when there is none, or
    more than one. The item schema is ``None`` when unknown."""
    if mapped:
        return f"{{{{{step}}}}}", returns
    shape = _one_shape(inline_refs(dict(returns))) if returns else None
    if shape is None:
        return None
    kind = _kind(shape)
    if kind == "array":
        return f"{{{{{step}}}}}", _items(shape)
    if kind != "object":
        return None
    name = _only_list(shape)
    if name is None:
        return None
    return f"{{{{{step}.{name}}}}}", _items(_one_shape(shape["properties"][name]) or {})


def _items(shape: Mapping[str, Any]) -> Mapping[str, Any] | None:
    items = shape.get("items")
    return items if isinstance(items, Mapping) and items else None


def fits_path(schema: Mapping[str, Any] | None, path: tuple[PathSegment, ...]) -> bool:
    """Whether ``path`` can exist in a value of ``schema`` (``True`` when it cannot be known)."""
    if schema is None or not path:
        return True
    try:
        _walk(_Output("x", "x", schema), Template("{{x}}", "x", path))
    except _Mismatch:
        return False
    return True


def declared_schema(
    plan: Plan, catalog: ToolCatalog, template: Template
) -> Mapping[str, Any] | None:
    """The declared schema of the value ``template`` names, when certain; else ``None``."""
    step = next((s for s in plan.steps if s.id == template.step), None)
    output = _declared_output(step, catalog) if step is not None else None
    if output is None:
        return None
    try:
        at = _walk(output, template)
    except _Mismatch:
        return None
    return _one_shape(at) if at is not None else None


def schema_kind(schema: Mapping[str, Any]) -> str | None:
    """``object``, ``array``, ``string``, ``number``, ``integer``, ``boolean``, ``null``, or
    ``None`` when the schema allows several."""
    return _kind(schema)


def _compatible(expected: set[str], actual: str) -> bool:
    if actual in expected:
        return True
    numeric = {"number", "integer"}
    return actual in numeric and bool(expected & numeric)


def _fields_of(
    step: str, path: tuple[PathSegment, ...], shape: Mapping[str, Any], kinds: set[str]
) -> list[str]:
    """Templates of the object's fields whose type fits ``kinds``."""
    found = []
    for name, sub in (shape.get("properties") or {}).items():
        kind = _kind(_one_shape(sub) or {})
        if kind is not None and _compatible(kinds, kind):
            found.append("{{" + _written(step, (*path, name)) + "}}")
    return found


def _type_issue(
    template: Template, at: Mapping[str, Any], expected: Mapping[str, Any], argument: str
) -> str | None:
    """A message when a whole-value template's type cannot fit the argument's schema."""
    kinds = accepted_types(expected)
    shape = _one_shape(at)
    if kinds is None or shape is None:
        return None
    actual = _kind(shape)
    if actual is None or _compatible(kinds, actual):
        return None
    if "string" in kinds and actual in ("number", "integer", "boolean"):
        return None  # resolved as its text (toolplan.plan_format.templates.resolve)
    wanted = " or ".join(_KIND_NAMES.get(k, k) for k in sorted(kinds - {"null"}) or sorted(kinds))
    message = f"argument {argument} takes {wanted}, but {template.text!r} is {_describe(shape)}"
    fields = _fields_of(template.step, template.path, shape, kinds) if actual == "object" else []
    as_text = ""
    if "string" in kinds:
        example = _text_example(template, shape)
        as_text = (
            f'; or write it inside a sentence, where any value becomes text: "... {example} ..."'
        )
    if fields:
        return message + f"; use a field of it: {' or '.join(fields[:3])}" + as_text
    items = _one_shape(shape.get("items") or {}) if actual == "array" else None
    if items is not None and _compatible(kinds, _kind(items) or ""):
        element = _written(template.step, (*template.path, 0))
        return message + f"; use one element: {{{{{element}}}}}" + as_text
    if as_text:
        return message + as_text.replace("; or write", "; write", 1)
    if template.path and "object" in kinds:
        parent = "{{" + _written(template.step, template.path[:-1]) + "}}"
        return message + f"; did you mean {parent!r}?"
    return message


def _text_example(template: Template, shape: Mapping[str, Any]) -> str:
    """The template to show inside a sentence: the object's first scalar field, or itself."""
    scalars = [
        (name, _kind(_one_shape(sub) or {}))
        for name, sub in (shape.get("properties") or {}).items()
    ]
    for wanted in (("number", "integer", "boolean"), ("string",)):
        for name, kind in scalars:
            if kind in wanted:
                return "{{" + _written(template.step, (*template.path, name)) + "}}"
    return template.text


def _positions(
    value: Any, schema: Mapping[str, Any], where: str
) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """Every string in ``value`` with the argument schema at its position."""
    if isinstance(value, str):
        yield where, value, schema
    elif isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, item in value.items():
            yield from _positions(item, properties.get(key) or {}, f"{where}.{key}")
    elif isinstance(value, list):
        items = schema.get("items")
        for index, item in enumerate(value):
            yield from _positions(
                item, items if isinstance(items, Mapping) else {}, f"{where}[{index}]"
            )


def _declared_output(step: Step, catalog: ToolCatalog) -> _Output | None:
    """What ``step`` returns, when its tool declares it and no fallback tool may answer instead
    (then the output may come from either tool)."""
    if step.tool not in catalog:
        return None
    if step.fallback is not None and step.fallback.tool != step.tool:
        return None
    returns = catalog.info(step.tool).returns
    if not returns:
        return None
    # A forEach step's output is the list of its per-item outputs.
    schema = {"type": "array", "items": returns} if step.for_each is not None else returns
    return _Output(step.id, step.tool, schema)


def check_template_types(plan: Plan, catalog: ToolCatalog) -> list[ValidationIssue]:
    """Problems of templates against the declared outputs of the steps they reference."""
    steps = {step.id: step for step in plan.steps}
    outputs: dict[str, _Output] = {}
    for step in plan.steps:
        output = _declared_output(step, catalog)
        if output is not None:
            outputs[step.id] = output

    makers = Makers(plan, catalog)
    issues: list[ValidationIssue] = []
    for step in plan.steps:
        visible: Mapping[str, _Output] = outputs
        if step.for_each is not None:
            item, problem = _item_output(step, outputs, steps)
            if problem is not None:
                issues.append(problem)
            if item is not None:
                visible = {**outputs, ITEM: item}
        issues.extend(
            _check_call(
                step,
                step.tool,
                step.parameters,
                f"step {step.id!r}",
                catalog,
                visible,
                steps,
                makers,
            )
        )
        if step.fallback is not None:
            issues.extend(
                _check_call(
                    step,
                    step.fallback.tool,
                    step.fallback.parameters,
                    f"step {step.id!r} fallback",
                    catalog,
                    visible,
                    steps,
                    makers,
                )
            )
    return issues


def _item_output(
    step: Step, outputs: Mapping[str, _Output], steps: Mapping[str, Step]
) -> tuple[_Output | None, ValidationIssue | None]:
    """The declared type of one item of ``step``'s ``forEach`` list, when it is known, and the
    problem of a ``forEach`` over something that cannot be a list."""
    if isinstance(step.for_each, list):
        return None, None
    text = (step.for_each or "").strip()
    template = Template.parse(text) if text.startswith("{{") else None
    if template is None or template.is_loop or template.step not in steps:
        return None, None  # reported by toolplan.validation.control_flow
    output = outputs.get(template.step)
    if output is None or template.step == step.id:
        return None, None
    where = f"step {step.id!r}: forEach {template.text!r}"
    try:
        at = _walk(output, template, listing=True)
    except _Mismatch as mismatch:
        return None, ValidationIssue("template-type", f"{where}: {mismatch}", step.id)
    shape = _one_shape(at) if at is not None else None
    if shape is None:
        return None, None
    kind = _kind(shape)
    if kind is None:
        return None, None
    if kind != "array":
        hint = _list_hint(template.step, template.path, shape, ()) if kind == "object" else ""
        return None, ValidationIssue(
            "template-type",
            f"{where} is {_describe(shape)}, not a list, so there is nothing to call the tool "
            f"for item by item{hint or '; forEach needs a template that resolves to a list'}",
            step.id,
        )
    items = shape.get("items")
    if not isinstance(items, Mapping) or not items:
        return None, None
    return _Output(ITEM, step.tool, items, f"an item of {template.text!r}"), None


def _check_call(
    step: Step,
    tool: str,
    parameters: Any,
    label: str,
    catalog: ToolCatalog,
    outputs: Mapping[str, _Output],
    steps: Mapping[str, Step],
    makers: Makers,
) -> list[ValidationIssue]:
    if tool not in catalog or not isinstance(parameters, dict):
        return []
    schema = inline_refs(catalog.info(tool).parameters)
    issues = []
    properties = schema.get("properties") or {}
    for name, value in parameters.items():
        for where, text, expected in _positions(value, properties.get(name) or {}, name):
            whole = Template.parse(text.strip()) if text.strip().startswith("{{") else None
            for template in find_templates(text):
                output = outputs.get(template.step)
                if output is None or template.step == step.id:
                    continue
                if template.step not in steps and not template.is_loop:
                    continue
                listing = (
                    whole is not None
                    and whole.text == template.text
                    and "array" in (accepted_types(expected) or ())
                )
                try:
                    at = _walk(output, template, listing=listing)
                except _Mismatch as mismatch:
                    hint = ""
                    if mismatch.missing is not None and not template.is_loop:
                        key, rest = mismatch.missing, template.path[1:]
                        hint = makers.hint(step, tool, key, rest)
                    issues.append(
                        ValidationIssue(
                            "template-type",
                            f"{label}: template {template.text!r}: {mismatch}{hint}",
                            step.id,
                        )
                    )
                    continue
                if whole is not None and whole.text == template.text and at is not None:
                    message = _type_issue(template, at, expected, repr(where))
                    if message:
                        issues.append(
                            ValidationIssue(
                                "template-type", f"{label} of tool {tool!r}: {message}", step.id
                            )
                        )
    return issues
