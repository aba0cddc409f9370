"""``TOOLPLAN_MODEL=test``: a model that plans and answers offline, by fixed rules.

:class:`TestModel` is a :class:`~toolplan.planning.scripted.ScriptedModel`: the planner asks it as
it asks any model (the prompt, the schema or the Python format, streamed), and validates, stores
and runs what it answers. Its plan is deterministic, made from the tool catalog and the request:

- **the tools**: each tool every word of whose name the request names (``createAuthor`` for
  "create ... author"; a word matches the same word, or one that begins with it, of 4 letters or
  more: "blogs", "titled"), in the order the request names them, once each. When no tool is named
  in full, the one with the most of its name's words; when none at all, no step (the planner
  then declines, as it does for a model that finds no tool);
- **the arguments**, each tool's in its schema's order: a value the request gives right after the
  argument's name ("email alice@test.com", "titled 'Hello'"); for an ID (``authorId``), the
  ``_id`` or ``id`` that an earlier step's tool returns when that tool names the thing
  (``createAuthor``); a listed value the request names (``cpu_usage``); then, for the arguments a
  tool requires, the first name written with a capital after the tool's last word ("author
  Alice") for its first text argument, a quoted text, a number the request gives, else a
  placeholder that fits the schema (the argument's name, ``0``, ``false``, ``[]``, the first
  listed value). Optional arguments the request does not state are left to their defaults;
- **the outputs**: the steps no other step uses.

The respond call is answered with the execution's outputs (never a replan), and any other
structured call with a sample of its schema. For answers of your own, use
:class:`~toolplan.planning.scripted.FunctionModel`.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolplan.plan_format.names import name_words, starts_alike
from toolplan.plan_format.plan import parse_plan
from toolplan.plan_format.python_print import render_python_plan
from toolplan.planning.scripted import Answer, ModelRequest, ScriptedModel
from toolplan.tools.catalog import ToolCatalog, ToolInfo

__all__ = ["TEST_MODEL", "TestModel", "offline_plan", "sample_value"]

TEST_MODEL = "test"
"""The model name that chooses :class:`TestModel` (``TOOLPLAN_MODEL=test``, ``--model test``)."""

_TOKEN = re.compile(
    r"""(?<!\w)(?:"(?P<dq>[^"]+)"|“(?P<cq>[^”]+)”|'(?P<sq>[^']+)'(?!\w))"""  # quoted text
    r"|(?P<email>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
    r"|(?P<number>-?\d+(?:\.\d+)?)"
    r"|(?P<word>\w+)"
)
_MIN_PREFIX = 4


@dataclass(frozen=True)
class _Token:
    text: str
    kind: str  # quoted, email, number, word

    @property
    def word(self) -> str:
        return self.text.lower() if self.kind == "word" else ""


def _tokens(text: str) -> list[_Token]:
    found = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "word"
        value = match.group(kind)
        found.append(_Token(value, "quoted" if kind in ("dq", "cq", "sq") else kind))
    return found


def _matches(name_word: str, word: str) -> bool:
    return starts_alike(name_word, word, shortest=_MIN_PREFIX)


def _first(words: list[str], name_word: str, start: int = 0) -> int | None:
    for index in range(start, len(words)):
        if _matches(name_word, words[index]):
            return index
    return None


def _chosen(catalog: ToolCatalog, words: list[str]) -> list[ToolInfo]:
    """The tools the request names, in the order it names them."""
    scored: list[tuple[float, int, int, ToolInfo]] = []
    for order, info in enumerate(catalog.infos()):
        name = name_words(info.name)
        seen = [_first(words, word) for word in name]
        found = [index for index in seen if index is not None]
        if found and name:
            scored.append((len(found) / len(name), max(found), order, info))
    full = [entry for entry in scored if entry[0] == 1]
    if full:
        return [info for _, _, _, info in sorted(full, key=lambda e: (e[1], e[2]))]
    if not scored:
        return []
    best = max(scored, key=lambda e: (e[0], -e[2]))
    return [best[3]]


def _branches(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        return [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
    return [schema]


def _kind(schema: Mapping[str, Any]) -> str | None:
    for branch in _branches(schema):
        if "enum" in branch:
            return "enum"
        kind = branch.get("type")
        if isinstance(kind, str):
            return kind
    return None


def _enum(schema: Mapping[str, Any]) -> list[Any]:
    for branch in _branches(schema):
        if isinstance(branch.get("enum"), list):
            return list(branch["enum"])
    return []


def sample_value(schema: Mapping[str, Any], name: str = "value") -> Any:
    """A value that fits ``schema`` (a JSON schema), as simple as can be: ``name`` for text, the
    first listed value, the minimum or ``0``, ``false``, an empty list or object (filled in as
    far as they must be)."""
    choices = _enum(schema)
    if choices:
        return choices[0]
    kind = _kind(schema)
    branch = _branches(schema)[0] if _branches(schema) else {}
    if kind == "string":
        return name
    if kind in ("integer", "number"):
        low = branch.get("minimum", branch.get("exclusiveMinimum", 0))
        value = low + (1 if "exclusiveMinimum" in branch and "minimum" not in branch else 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "array":
        found = branch.get("items")
        items: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        return [sample_value(items, name) for _ in range(int(branch.get("minItems", 0)))]
    if kind == "object":
        properties = branch.get("properties") or {}
        return {
            key: sample_value(properties.get(key, {}), key) for key in branch.get("required", [])
        }
    return name


class _Writer:
    """One plan, step by step."""

    def __init__(self, request: str) -> None:
        self.tokens = _tokens(request)
        self.words = [token.word for token in self.tokens]
        self.steps: list[dict[str, Any]] = []
        self.made_by: list[ToolInfo] = []

    def step(self, info: ToolInfo) -> None:
        used: set[int] = set()
        schema = info.parameters
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        values: dict[str, Any] = {}
        for name, spec in properties.items():
            value = self._stated(name, spec, used)
            if value is None:
                value = self._flow(name)
            if value is None and _kind(spec) == "enum":
                value = self._listed(spec)
            if value is not None:
                values[name] = value
        first_text = next(
            (
                n
                for n in properties
                if n in required and _kind(properties[n]) == "string" and not _is_id(n)
            ),
            None,
        )
        for name, spec in properties.items():
            if name in values or name not in required:
                continue
            value = self._named(info) if name == first_text else None
            if value is None and _kind(spec) == "string" and "mail" in name.lower():
                value = self._next(("email",), used)
            if value is None and _kind(spec) == "string" and not _is_id(name):
                value = self._next(("quoted",), used)
            if value is None and _kind(spec) in ("integer", "number"):
                number = self._next(("number",), used)
                value = None if number is None else _number(number, _kind(spec))
            values[name] = value if value is not None else sample_value(spec, name)
        self.steps.append(
            {
                "id": self._id(info),
                "tool": info.name,
                "parameters": {name: values[name] for name in properties if name in values},
            }
        )
        self.made_by.append(info)

    def _stated(self, name: str, spec: Mapping[str, Any], used: set[int]) -> Any:
        """The token right after the argument's name in the request, if it fits."""
        words = name_words(name)
        if not words:
            return None
        for start in range(len(self.words)):
            if all(
                start + k < len(self.words) and _matches(word, self.words[start + k])
                for k, word in enumerate(words)
            ):
                index = start + len(words)
                if index < len(self.tokens) and index not in used:
                    value = _fitting(self.tokens[index], spec)
                    if value is not None:
                        used.add(index)
                        return value
        return None

    def _flow(self, name: str) -> str | None:
        """``{{step._id}}`` for an ID argument named after what an earlier step's tool makes."""
        words = name_words(name)
        if len(words) < 2 or not _is_id(name):
            return None
        noun = words[-2]
        for step, info in reversed(list(zip(self.steps, self.made_by, strict=True))):
            if not any(_matches(noun, word) for word in name_words(info.name)):
                continue
            returned = (info.returns or {}).get("properties") or {}
            for key in ("_id", "id"):
                if key in returned:
                    return "{{" + f"{step['id']}.{key}" + "}}"
        return None

    def _listed(self, spec: Mapping[str, Any]) -> Any:
        lowered = [token.text.lower() for token in self.tokens]
        for choice in _enum(spec):
            if str(choice).lower() in lowered:
                return choice
        return None

    def _named(self, info: ToolInfo) -> str | None:
        """The first capitalised word after the tool's last name word ("author Alice")."""
        last = name_words(info.name)[-1:]
        start = _first(self.words, last[0]) if last else None
        if start is None:
            return None
        for token in self.tokens[start + 1 :]:
            if token.kind == "quoted" or (token.kind == "word" and token.text[:1].isupper()):
                return token.text
        return None

    def _next(self, kinds: tuple[str, ...], used: set[int]) -> str | None:
        for index, token in enumerate(self.tokens):
            if token.kind in kinds and index not in used:
                used.add(index)
                return token.text
        return None

    def _id(self, info: ToolInfo) -> str:
        words = name_words(info.name)
        base = words[-1] if words else "step"
        if not base[:1].isalpha() or keyword.iskeyword(base):
            base = f"s_{base}"
        taken = {step["id"] for step in self.steps} | {i.name for i in self.made_by} | {info.name}
        name, n = base, 1
        while name in taken:  # a step is not named as a tool is (``lookup_1 = lookup(...)``)
            name, n = f"{base}_{n}", n + 1
        return name

    def plan(self) -> dict[str, Any]:
        used = {
            ref.split(".")[0]
            for step in self.steps
            for value in step["parameters"].values()
            if isinstance(value, str)
            for ref in re.findall(r"\{\{\s*([\w-]+)", value)
        }
        return {
            "reasoning": "The tools the request names, in the order it names them (test model).",
            "steps": self.steps,
            "outputSteps": [step["id"] for step in self.steps if step["id"] not in used],
        }


def _is_id(name: str) -> bool:
    """Whether an argument takes an ID (``authorId``, ``blog_id``, ``id``)."""
    words = name_words(name)
    return bool(words) and words[-1] == "id"


def _number(text: str, kind: str | None) -> int | float:
    value = float(text)
    return int(value) if kind == "integer" and value.is_integer() else value


def _fitting(token: _Token, spec: Mapping[str, Any]) -> Any:
    """``token`` as a value of ``spec``, or ``None`` when it does not fit."""
    choices = _enum(spec)
    if choices:
        return next((c for c in choices if str(c).lower() == token.text.lower()), None)
    kind = _kind(spec)
    if kind in ("integer", "number"):
        return _number(token.text, kind) if token.kind == "number" else None
    if kind == "string" or kind is None:  # text, or any value
        return token.text
    return None


def offline_plan(request: str, catalog: ToolCatalog) -> dict[str, Any]:
    """The plan :class:`TestModel` writes for ``request`` (a JSON plan; no step when the request
    names no tool)."""
    writer = _Writer(request)
    for info in _chosen(catalog, writer.words):
        writer.step(info)
    return writer.plan()


class TestModel(ScriptedModel):
    """Plans from the catalog and the request, and answers from the results, by fixed rules
    (the module's docstring); ``TOOLPLAN_MODEL=test`` chooses it. Deterministic and offline::

        Toolplan(model="test", tools=["blog"]).answer("Create author Alice with email a@b.c")
    """

    __test__ = False  # not a pytest test class, whatever its name says

    @property
    def _llm_type(self) -> str:
        return "toolplan-test"

    def answer(self, request: ModelRequest) -> Answer:
        """A plan, the answer to the request, or a sample of the schema."""
        if request.kind == "plan":
            return self._plan(request)
        if request.kind == "respond":
            return {"action": "answer", "answer": _answer_text(request)}
        if request.schema is not None:
            return sample_value(request.schema, "value")
        return "ok"

    def _plan(self, request: ModelRequest) -> Answer:
        told = request.request or _last_human_text(request)
        catalog = request.catalog or ToolCatalog()
        plan = offline_plan(told, catalog)
        if request.schema is None:  # the Python format
            if not plan["steps"]:
                return "# None of the tools does what the request asks.\n"
            return render_python_plan(parse_plan(plan), catalog.python_tools)
        steps = [
            {
                **step,
                "parameters": json.dumps(step["parameters"])
                if _parameters_as_text(request.schema)
                else step["parameters"],
                "dependsOn": [],
                "confidence": 1.0,
            }
            for step in plan["steps"]
        ]
        if not steps:
            plan["reasoning"] = "None of the tools does what the request asks."
        return {**plan, "steps": steps}


def _parameters_as_text(schema: Mapping[str, Any]) -> bool:
    """Whether the plan schema carries a step's parameters as a JSON string (the generic one)."""
    steps = (schema.get("properties") or {}).get("steps") or {}
    items = steps.get("items") or {}
    parameters = (items.get("properties") or {}).get("parameters") or {}
    return parameters.get("type") == "string"


def _last_human_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.type == "human":
            return str(message.text)
    return ""


def _answer_text(request: ModelRequest) -> str:
    """The execution's status and outputs, in one paragraph."""
    parts = [f"The plan {request.status or 'ran'}."]
    for step, output in request.outputs.items():
        text = json.dumps(output, ensure_ascii=False, default=str)
        parts.append(f"{step}: {text if len(text) <= 200 else text[:199] + '…'}")
    if request.failures:
        parts.append("Failed or skipped: " + "; ".join(request.failures))
    return " ".join(parts)
