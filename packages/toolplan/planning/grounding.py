"""Grounded literals: a planner check for data a plan makes up instead of taking it from a tool.

Asked "What's the weather in Berlin and Madrid, and which one is warmer?", a small model wrote
``compare_data(data_a={"city": "Berlin", "temp": 34.4, ...}, data_b={...})`` with ``dependsOn``
on the two ``get_weather`` steps and no template. Every schema accepts it; it runs, "succeeds",
and its answer contradicts the tools. A value the plan passes is *grounded* when it is in the
request (the query, and a replan's context with the earlier results), or comes from a tool
through a template; this check refuses the literals that are neither and that a step's tool
output would supply, and names the template to write instead.

Four rules, each narrow, because a literal from the request is the normal case (BENCHMARKS.md
measures the false refusals on public function-calling answers, whose values all are):

* **A literal object where an output fits.** An argument that is a literal object (or a list of
  them), with a value that is not in the request, where the step depends on a step whose declared
  output is an object sharing its keys (two of them, or its only one), or with a number that is
  not in the request when that output has numeric fields. Also when the step does not depend on
  it at all, if the object has that output's keys and a number not in the request (the same
  model, without the ``dependsOn``).
* **A literal number where an output's number fits.** A number argument not in the request
  (``0`` and ``1`` aside: indices, flags, defaults), where the step depends on a step whose
  output is a number or has numeric fields: ``check_threshold(value=72.5)`` after
  ``query_metric``. An argument whose declared default is a whole number is an option
  (``limit=5``, ``page=2``): a whole number given to it is the caller's choice, and no output
  supplies it (NESTFUL executable-10 was refused for a reviews ``limit`` after a business
  search).
* **A ``dependsOn`` edge no template uses**, when the dependent step passes a string that is not
  in the request to an argument the dependency's output has a field for (the same name, or an
  id argument and the ``_id``/``id`` of a step whose tool names that kind of thing).
* **A literal ``forEach`` list where an output's list fits**: a map over objects written out
  (``[{"_id": "post-1"}, ...]``) whose ids the request does not hold, where the step depends on
  a step whose output lists objects with that id field (``listBlogs``' ``blogs``). Names,
  numbers and dates the user gave ("Carol and Dan", pages 1 to 5) are theirs to map over.

A number is in the request when the text holds it in digits (``1,000``; ``5%`` for ``0.05``); a
string when the text holds it or every word of it (case aside). No word list of any language
takes part: each rule needs structural evidence (a dependency whose declared output fits the
literal, a ``dependsOn`` edge no template uses), and the request's text only excuses a literal. A hint never names a step that depends on the step it would feed (a cycle) or
whose output does not have the argument's shape.

The id-by-name check (:mod:`toolplan.planning.id_by_name`) is the special case of an id written
as the name a creating step was given; :func:`check_grounding` runs it too and reports each
argument once. Both run on the
planner's plans
(:mod:`toolplan.planning.graph`), where the request is known and the model can fix what they
find; a document a person submits is not checked (it is theirs, and its literals need not come
from any text), and parametric reuse (:mod:`toolplan.planning.reuse`) applies them to a stored
plan with the new query.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolplan.errors import ValidationIssue
from toolplan.plan_format.json_schema import declared_types, is_list, object_properties
from toolplan.plan_format.names import is_id_argument
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import contains_template, leaves, references
from toolplan.planning.id_by_name import find_ids_by_name, id_kind
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.returns import compact_shape
from toolplan.validation.edges import dependencies, descendants

__all__ = ["Grounds", "check_grounding", "literal_numbers"]

_NUMBER = re.compile(r"(?<![\d.])-?(?:\d[\d,_]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_WORD = re.compile(r"\w+")


_TRIVIAL = (0.0, 1.0)
"""Numbers grounded by themselves: an index, a flag, a count of one, a default offset."""
_SHOWN_FIELDS = 3


def _numbers(text: str) -> set[float]:
    """Every number the text holds, in digits (``1,000``, ``-1.7``, ``3.5``). Numbers in words
    are not read: that takes one language's word list, and no such list decides whether a plan
    is valid (a literal a request says in words is refused only where a dependency's declared
    output holds a number, and the model writes the template instead)."""
    text = text.replace("\u2212", "-")  # a typographic minus
    found: set[float] = set()
    for match in _NUMBER.finditer(text):
        token = match.group(0).rstrip(",_")
        parts = [token.replace(",", "").replace("_", ""), *token.split(",")]
        for part in parts:
            try:
                found.add(float(part))
            except ValueError:
                continue
    return found


@dataclass(frozen=True)
class Grounds:
    """The text a plan's literals may come from: the request, and whatever a replan was told
    (earlier results included)."""

    text: str

    @property
    def _folded(self) -> str:
        return self.text.casefold()

    def has_number(self, value: float) -> bool:
        """Whether ``value`` is in the text (as a percentage too: ``5%`` for ``0.05``)."""
        if any(math.isclose(value, trivial) for trivial in _TRIVIAL):
            return True
        for number in _numbers(self.text):
            for scaled in (number, number / 100, number * 100):
                if math.isclose(abs(value), abs(scaled), rel_tol=1e-9, abs_tol=1e-9):
                    return True
        return False

    def has_string(self, value: str) -> bool:
        """Whether ``value`` is in the text, whole or every word of it (case aside)."""
        folded = value.strip().casefold()
        if not folded or folded in self._folded:
            return True
        words = set(_WORD.findall(self._folded))
        return all(word in words for word in _WORD.findall(folded))

    def has(self, value: Any) -> bool:
        """Whether a scalar literal is in the text (``None`` and booleans always are)."""
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, int | float):
            return self.has_number(float(value))
        if isinstance(value, str):
            return self.has_string(value)
        return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def literal_numbers(value: Any) -> list[float]:
    """Every number in a JSON value (objects and lists included), booleans aside."""
    return [float(leaf) for leaf in leaves(value) if _is_number(leaf)]


def _is_numeric(schema: Any) -> bool:
    return bool(declared_types(schema) & {"number", "integer"})


def _numeric_fields(schema: Any) -> list[str]:
    return [name for name, sub in object_properties(schema).items() if _is_numeric(sub)]


def _fold(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.casefold())


def _shown(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _in_neither(values: list[Any]) -> str:
    """``"a", "b" are in neither the request nor any tool's output`` (the first three)."""
    shown = ", ".join(_shown(value, 20) for value in values[:3])
    verb = "is" if len(values) == 1 else "are"
    return f"{shown} {verb} in neither the request nor any tool's output"


def _options(schema: Mapping[str, Any]) -> set[str]:
    """The arguments a tool declares a whole number as the default of: options (``limit``,
    ``page``) whose number is the caller's choice, not data a tool's output would supply. An
    argument that defaults to nothing (``value: float | None = None``) or to a fraction
    (``threshold: float = 0.5``) is still data."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return set()
    return {
        name
        for name, sub in properties.items()
        if isinstance(sub, Mapping) and _whole(sub.get("default"))
    }


def _template(step_id: str, field: str | None = None) -> str:
    return '"{{' + step_id + (f".{field}" if field else "") + '}}"'


class _Checker:
    """One plan's grounding check: the plan's outputs, dependencies and the request text."""

    def __init__(self, plan: Plan, catalog: ToolCatalog, grounds: Grounds) -> None:
        self.plan, self.grounds = plan, grounds
        self.steps = {step.id: step for step in plan.steps}
        self.outputs: dict[str, dict[str, Any]] = {}
        self.options: dict[str, set[str]] = {}
        for step in plan.steps:
            info = catalog.info(step.tool) if step.tool in catalog else None
            if info is not None and info.returns:
                # a tool that declares no output is never the source of a refusal
                self.outputs[step.id] = info.returns
            if info is not None:
                self.options[step.id] = _options(info.parameters)

    def _shape(self, step_id: str) -> str:
        return compact_shape(self.outputs[step_id])

    def _strings(self, step_id: str) -> set[str]:
        """The literal strings a step is given, folded (the city a ``get_weather`` asks for)."""
        return {
            leaf.strip().casefold()
            for leaf in leaves(self.steps[step_id].parameters)
            if isinstance(leaf, str) and leaf.strip() and "{{" not in leaf
        }

    def check(self, skip: set[tuple[str, str]]) -> list[ValidationIssue]:
        issues: list[ValidationIssue] = []
        for step in self.plan.steps:
            if not isinstance(step.parameters, dict):
                continue
            deps = [d for d in dependencies(step) if d in self.steps]
            # a hint never names the step itself or one downstream of it: that is a cycle
            upstream = set(self.steps) - descendants(self.plan, step.id) - {step.id}
            taken = set(references(step.parameters))  # outputs the step already uses
            for name, value in step.parameters.items():
                if (step.id, name) in skip or contains_template(value):
                    continue
                issue = None
                if (isinstance(value, dict) and value) or _list_of_objects(value):
                    issue = self._objects(step, name, value, deps, upstream, taken)
                elif _is_number(value) and not (
                    _whole(value) and name in self.options.get(step.id, ())
                ):
                    issue = self._number(step, name, float(value), deps)
                elif isinstance(value, str):
                    issue = self._unused_edge(step, name, value)
                if issue is not None:
                    issues.append(issue)
            if isinstance(step.for_each, list) and step.for_each:
                issue = self._literal_map(step, step.for_each, deps)
                if issue is not None:
                    issues.append(issue)
        return issues

    def _literal_map(self, step: Step, items: list[Any], deps: list[str]) -> ValidationIssue | None:
        """A ``forEach`` over literal objects whose ids the request does not hold, where the
        step depends on a step whose output lists objects with that id field."""
        if not all(isinstance(item, dict) for item in items):
            return None  # numbers, dates, names: a list the user gave, written their way
        for source in deps:
            for field, key in self._listed_ids(source):
                made_up = [
                    item[key] for item in items if key in item and not self.grounds.has(item[key])
                ]
                if not made_up:
                    continue
                fix = _template(source, field or None)
                return ValidationIssue(
                    "ungrounded",
                    f"step {step.id!r}: its forEach is a literal list ({_shown(items)}), but "
                    f"the step depends on {source!r} ({self.steps[source].tool}), whose output "
                    f"is {self._shape(source)}; the {key} {_in_neither(made_up)}: map over the "
                    f'output instead of making the list up: "forEach": {fix}',
                    step.id,
                )
        return None

    def _listed_ids(self, step_id: str) -> list[tuple[str, str]]:
        """Where ``step_id``'s output lists objects with an id: ``(field, id key)``, the
        field ``""`` when the output is the list itself."""
        schema = self.outputs.get(step_id)
        lists = [("", schema)] if is_list(schema) else list(object_properties(schema).items())
        found: list[tuple[str, str]] = []
        for field, sub in lists:
            if not is_list(sub):
                continue
            items = sub.get("items") if isinstance(sub, Mapping) else None
            keys = object_properties(items)
            found += [(field, key) for key in ("_id", "id") if key in keys][:1]
        return found

    def _objects(
        self,
        step: Step,
        name: str,
        value: dict[str, Any] | list[dict[str, Any]],
        deps: list[str],
        upstream: set[str],
        taken: set[str],
    ) -> ValidationIssue | None:
        items = value if isinstance(value, list) else [value]
        chosen: list[str] = []
        invented: list[Any] = []
        for item in items:
            source = self._source(item, deps, upstream, taken | set(chosen))
            if source is None:
                return None  # one item with nothing to take it from: the list is the user's
            chosen.append(source)
            invented += [leaf for leaf in leaves(item) if not self.grounds.has(leaf)]
        what = "a literal object" if isinstance(value, dict) else "a list of literal objects"
        depends = all(source in deps for source in chosen)
        sources = ", ".join(f"{s!r} ({self.steps[s].tool})" for s in dict.fromkeys(chosen))
        relation = "the step depends on" if depends else "this plan has"
        whose = "whose output is" if len(set(chosen)) == 1 else "whose outputs are"
        if isinstance(value, dict):
            fix = _template(chosen[0])
            fields = object_properties(self.outputs[chosen[0]])
            shared = [key for key in value if key in fields]
            made_up = [key for key in shared if not self.grounds.has(value[key])]
            field = next(iter(made_up or shared or list(fields)), None)
            if field is not None:
                fix += f" (or one field of it, e.g. {_template(chosen[0], field)})"
        else:
            fix = "[" + ", ".join(_template(s) for s in chosen) + "]"
        return ValidationIssue(
            "ungrounded",
            f"step {step.id!r}: argument {name!r} of tool {step.tool!r} is {what} "
            f"({_shown(value)}), but {relation} {sources}, {whose} "
            f"{self._shape(chosen[0])}; {_in_neither(invented)}: pass the output instead of "
            f"making it up: {fix}",
            step.id,
        )

    def _source(
        self, item: dict[str, Any], deps: list[str], upstream: set[str], taken: set[str]
    ) -> str | None:
        """The step whose output ``item`` imitates, or ``None`` when it looks like data of
        the user's own."""
        invented = [leaf for leaf in leaves(item) if not self.grounds.has(leaf)]
        if not invented:
            return None
        numbers = [leaf for leaf in invented if _is_number(leaf)]
        candidates: list[str] = []
        for source in list(deps) + sorted(upstream - set(deps), key=self.plan.step_ids.index):
            if source not in self.outputs or source not in upstream:
                continue
            fields = object_properties(self.outputs[source])
            if not fields:
                continue
            shared = set(item) & set(fields)
            fits = len(shared) >= min(2, len(item))
            numeric = bool(numbers and _numeric_fields(self.outputs[source]))
            # a dependency: the same keys, or numbers where it has some; any other step of
            # the plan: the same keys and a made-up number (the model forgot the edge too)
            if (fits or numeric) if source in deps else (fits and numbers):
                candidates.append(source)
        if not candidates:
            return None
        # the step asked for what the object names ("Berlin"), else one not used yet
        strings = {
            leaf.strip().casefold() for leaf in leaves(item) if isinstance(leaf, str) and leaf
        }
        for source in candidates:
            if strings & self._strings(source):
                return source
        fresh = [source for source in candidates if source not in taken]
        return (fresh or candidates)[0]

    def _number(
        self, step: Step, name: str, value: float, deps: list[str]
    ) -> ValidationIssue | None:
        if self.grounds.has_number(value):
            return None
        for source in deps:
            schema = self.outputs.get(source)
            if schema is None:
                continue
            if _is_numeric(schema):
                fixes = [_template(source)]
            else:
                fields = _numeric_fields(schema)
                if not fields:
                    continue
                same = [f for f in fields if _fold(f) == _fold(name)]
                fixes = [_template(source, f) for f in (same or fields)[:_SHOWN_FIELDS]]
            return ValidationIssue(
                "ungrounded",
                f"step {step.id!r}: argument {name!r} of tool {step.tool!r} is {value:g}, "
                f"which is in neither the request nor any tool's output, and the step depends "
                f"on {source!r} ({self.steps[source].tool}), whose output is "
                f"{self._shape(source)}: take the number from it, e.g. {' or '.join(fixes)}",
                step.id,
            )
        return None

    def _unused_edge(self, step: Step, name: str, value: str) -> ValidationIssue | None:
        """A string argument the step's ``dependsOn`` (unused by its templates) would supply."""
        if self.grounds.has_string(value):
            return None
        unused = [d for d in step.depends_on if d in self.steps]
        unused = [d for d in unused if d not in references(step.parameters)]
        for source in unused:
            fields = object_properties(self.outputs.get(source))
            field = next((f for f in fields if _fold(f) == _fold(name)), None)
            if field is None and is_id_argument(name):
                kind = id_kind(name)
                if not kind or kind in _fold(self.steps[source].tool):
                    field = next((f for f in ("_id", "id") if f in fields), None)
            if field is None:
                continue
            return ValidationIssue(
                "ungrounded",
                f"step {step.id!r}: argument {name!r} of tool {step.tool!r} is {value!r}, "
                f"which is in neither the request nor any tool's output, and the step depends "
                f"on {source!r} ({self.steps[source].tool}) without using its output "
                f"({self._shape(source)}): pass {_template(source, field)}",
                step.id,
            )
        return None


def _list_of_objects(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and item for item in value)
    )


def check_grounding(
    plan: Plan, catalog: ToolCatalog, request: str, *, context: str | None = None
) -> list[ValidationIssue]:
    """One issue per argument whose literal a tool's output should supply (with the template
    to write), ids passed by name included (:func:`~toolplan.planning.id_by_name.find_ids_by_name`).
    ``request`` is the query; ``context`` what else the planner was told (a replan's results)."""
    by_name = find_ids_by_name(plan, catalog)
    grounds = Grounds("\n".join(part for part in (request, context) if part))
    checked = _Checker(plan, catalog, grounds).check({(f.step, f.argument) for f in by_name})
    return [found.issue for found in by_name] + checked
