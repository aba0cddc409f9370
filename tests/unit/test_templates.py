"""Template resolution: typing, interpolation, paths and errors."""

from __future__ import annotations

import time
from typing import Any

import pytest

from toolplan.errors import TemplateError
from toolplan.plan_format.templates import (
    Template,
    find_templates,
    key_writable,
    malformed_templates,
    quoted_reading,
    reference_text,
    references,
    resolve,
)

OUTPUTS: dict[str, Any] = {
    "author": {"_id": "a1", "name": "Alice", "age": 30, "active": True, "tags": ["x", "y"]},
    "list": [{"id": 1, "items": [{"c": "deep"}]}, {"id": 2}],
    "text": "plain words",
    "num": 42,
    "nothing": None,
    "flag": False,
    "nested": {"a": {"b": [{"c": {"d": 3.5}}]}},
    "rate": {"Exchange Rate": 1.08, "weather.current": {"temp c": [21]}},
}

CASES = [
    # whole-value templates keep the JSON type
    ("{{author}}", OUTPUTS["author"]),
    ("{{author._id}}", "a1"),
    ("{{author.age}}", 30),
    ("{{author.active}}", True),
    ("{{author.tags}}", ["x", "y"]),
    ("{{author.tags[1]}}", "y"),
    ("{{list[0].items[0].c}}", "deep"),
    ("{{list[1].id}}", 2),
    ("{{nothing}}", None),
    ("{{flag}}", False),
    ("{{num}}", 42),
    ("{{text}}", "plain words"),
    ("{{nested.a.b[0].c.d}}", 3.5),
    ("{{ author.name }}", "Alice"),
    # interpolation inside longer strings
    ("by {{author.name}}", "by Alice"),
    ("{{author.name}} ({{author._id}})", "Alice (a1)"),
    ("age={{author.age}}", "age=30"),
    ("tags={{author.tags}}", 'tags=["x","y"]'),
    ("obj={{list[1]}}", 'obj={"id":2}'),
    ("n={{nothing}} f={{flag}} t={{author.active}}", "n=null f=false t=true"),
    ("{{text}}!", "plain words!"),
    # no templates
    ("no templates here", "no templates here"),
    (17, 17),
    (None, None),
]


@pytest.mark.parametrize(("value", "expected"), CASES)
def test_resolve_cases(value: Any, expected: Any) -> None:
    assert resolve(value, OUTPUTS) == expected


def test_templates_nested_in_objects_and_lists() -> None:
    params = {"a": {"b": ["{{author._id}}", {"c": "x-{{num}}"}]}, "d": "{{author.tags}}"}
    assert resolve(params, OUTPUTS) == {"a": {"b": ["a1", {"c": "x-42"}]}, "d": ["x", "y"]}


def test_resolution_does_not_mutate_input() -> None:
    params = {"a": "{{author._id}}"}
    resolve(params, OUTPUTS)
    assert params == {"a": "{{author._id}}"}


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        ("{{author.missing}}", ["{{author.missing}}", "'missing'", "available keys: _id"]),
        ("x {{author.missing}}", ["{{author.missing}}", "'missing'"]),
        ("{{author.tags[5]}}", ["out of range", "[5]"]),
        ("{{author.name.first}}", ["is a string", "'first'"]),
        ("{{text[0]}}", ["not a list"]),
        ("{{ghost}}", ["'ghost' has no output"]),
        ("{{nothing.x}}", ["is null"]),
    ],
)
def test_missing_paths_raise_and_name_template_and_key(value: str, fragments: list[str]) -> None:
    with pytest.raises(TemplateError) as caught:
        resolve({"p": value}, OUTPUTS)
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_references_and_parsing() -> None:
    params = {"x": "{{a._id}} and {{b}}", "y": ["{{c.items[0].name}}"], "z": 3}
    assert references(params) == {"a", "b", "c"}
    parsed = {t.text: t for t in find_templates(params)}
    assert parsed["{{c.items[0].name}}"].path == ("items", 0, "name")
    assert parsed["{{a._id}}"].path == ("_id",)


@pytest.mark.parametrize(
    "text", ["{{}}", "{{author.}}", "{{1abc}}", "{{a..b}}", "{{a[x]}}", "{{a b}}"]
)
def test_malformed_templates_are_detected(text: str) -> None:
    assert malformed_templates({"p": f"pre {text}"}) == [text]


def test_with_the_argument_schema_a_scalar_where_only_text_goes_becomes_text() -> None:
    outputs = {"cpu": {"current": 42.5, "ok": False, "n": 3, "name": "cpu", "tags": [1]}}
    schema = {
        "properties": {
            "text": {"type": "string"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "number": {"type": "number"},
            "either": {"type": ["string", "integer"]},
            "any": {},
            "lines": {"type": "array", "items": {"type": "string"}},
            "nested": {"type": "object", "properties": {"label": {"type": "string"}}},
        }
    }
    parameters = {
        "text": "{{cpu.current}}",
        "maybe": "{{cpu.ok}}",
        "number": "{{cpu.current}}",
        "either": "{{cpu.n}}",
        "any": "{{cpu.n}}",
        "lines": ["{{cpu.n}}", "{{cpu.name}}"],
        "nested": {"label": "{{cpu.n}}"},
        "unknown": "{{cpu.n}}",
    }
    assert resolve(parameters, outputs, schema) == {
        "text": "42.5",
        "maybe": "false",
        "number": 42.5,
        "either": 3,
        "any": 3,
        "lines": ["3", "cpu"],
        "nested": {"label": "3"},
        "unknown": 3,
    }
    # objects and lists are not turned into text: that is a mistake the tool should report
    assert resolve({"text": "{{cpu.tags}}"}, outputs, schema) == {"text": [1]}
    # without a schema every whole-value template keeps its type
    assert resolve({"text": "{{cpu.current}}"}, outputs) == {"text": 42.5}


def test_rename_sources_renames_step_templates_only_and_keeps_their_spelling() -> None:
    from toolplan.plan_format.templates import rename_sources

    value = {
        "a": "{{ old.x }} and {{old[0]}} but not {{older}}, {{$item.old}} or {{old..bad}}",
        "b": ["{{old}}", 3, {"old": "{{other.old}}"}],
    }
    renamed = rename_sources(value, {"old": "new"}.get)
    assert renamed == {
        "a": "{{ new.x }} and {{new[0]}} but not {{older}}, {{$item.old}} or {{old..bad}}",
        "b": ["{{new}}", 3, {"old": "{{other.old}}"}],
    }
    assert value["b"][0] == "{{old}}"  # a copy


def test_a_key_with_spaces_or_dots_is_named_quoted() -> None:
    # APIs return keys like "Exchange Rate" (NESTFUL's executable split): a plan must name them
    assert resolve({"p": '{{rate["Exchange Rate"]}}'}, OUTPUTS) == {"p": 1.08}
    text = '{{ rate["weather.current"]["temp c"][0] }}'
    assert resolve({"p": text}, OUTPUTS) == {"p": 21}
    assert Template.parse(text) == Template(text, "rate", ("weather.current", "temp c", 0))
    assert references({"p": f"x {text}"}) == {"rate"}
    with pytest.raises(TemplateError) as caught:
        resolve({"p": '{{rate["weather.current"].humidity}}'}, OUTPUTS)
    assert "missing key 'humidity' in the output of 'rate[\"weather.current\"]'" in str(
        caught.value
    )


def test_a_key_may_be_quoted_with_single_quotes() -> None:
    # as JSONPath and Python write it, and without escaping inside a JSON string (NESTFUL
    # executable-16 wrote {{ripple_to_usd['Exchange Rate']}} when offered the double-quoted form)
    text = "{{ rate['weather.current'][\"temp c\"][0] }}"
    assert Template.parse(text) == Template(text, "rate", ("weather.current", "temp c", 0))
    assert resolve({"p": "{{rate['Exchange Rate']}}"}, OUTPUTS) == {"p": 1.08}
    assert references({"p": "x {{rate['Exchange Rate']}}"}) == {"rate"}


def test_reference_text_quotes_a_key_only_when_it_must() -> None:
    assert reference_text("author", ("_id",)) == "author._id"
    assert reference_text("list", (0, "items", 1)) == "list[0].items[1]"
    assert reference_text("rate", ("Exchange Rate",)) == 'rate["Exchange Rate"]'
    for path in [("_id",), ("Exchange Rate", 0), ("a.b", "c d", "e"), ('say "hi"',)]:
        written = "{{" + reference_text("s", path) + "}}"
        assert Template.parse(written) == Template(written, "s", path)
    assert reference_text("s", ('say "hi"',)) == "s['say \"hi\"']"
    assert not key_writable('it\'s "x"') and not key_writable("a{b}") and not key_writable("")
    with pytest.raises(ValueError, match="cannot be named"):
        reference_text("s", ("x[0]",))


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("{{rate.Exchange Rate}}", '{{rate["Exchange Rate"]}}'),
        ("{{ s.a b.c[0] }}", '{{s["a b"].c[0]}}'),
        ("{{$item.Bid Price}}", '{{$item["Bid Price"]}}'),
        ("{{a b}}", None),  # a step id has no space
        ("{{a.}}", None),
        ("{{a..b}}", None),
        ("{{a.ok}}", None),  # not malformed: nothing to say
    ],
)
def test_a_key_with_a_space_written_plainly_is_read_quoted(text: str, quoted: str | None) -> None:
    assert quoted_reading(text) == quoted


def test_a_long_malformed_template_is_offered_nothing_at_once() -> None:
    started = time.process_time()
    assert quoted_reading("{{a." + " " * 100_000 + '"}}') is None
    assert time.process_time() - started < 2  # unbounded, the pattern backtracks for minutes


@pytest.mark.parametrize(
    "text", ['{{a[""]}}', '{{a["b"c"]}}', "{{a['']}}", "{{a['it's']}}", '{{a["{x}"]}}']
)
def test_malformed_quoted_keys_are_detected(text: str) -> None:
    assert malformed_templates({"p": f"pre {text}"}) == [text]
