"""The plan reader keeps what the model wrote (issue 50): nested calls, conversions, asked
repeats, every fenced block, tool names that are not Python names, problems said in Python; and
it is bounded: linear in the text, each value checked before it is built."""

from __future__ import annotations

import ast
import time
import tracemalloc
from typing import Any

import pytest
from langchain_core.tools import StructuredTool, tool

from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import parse_plan
from toolplan.plan_format.python_plan import parse_python_plan
from toolplan.plan_format.python_print import render_python_plan
from toolplan.plan_format.python_source import SourceSplitter
from toolplan.plan_format.python_tools import PythonTools, python_name
from toolplan.planning.python_format import (
    PythonAnswerReader,
    read_python_answer,
    render_signatures,
)
from toolplan.tools import ToolCatalog, tagged


@tool
def calculate_route(start: str, end: str) -> dict[str, Any]:
    """The route between two places: its distance and time."""
    return {"distance": 300, "time": 4}


@tool
def calculate_pace(distance: float, time: float) -> dict[str, Any]:
    """Pace over a distance."""
    return {"pace": distance / time}


@tool
def roll_die(sides: int) -> dict[str, Any]:
    """Roll a die."""
    return {"value": 1}


@tool
def encrypt_data(data: str) -> dict[str, Any]:
    """Encrypt text."""
    return {"cipher": data}


@tool
def calculate_bmi(weight: float, height: float) -> dict[str, Any]:
    """Body mass index."""
    return {"BMI": 22.5}


@tool
def repeat(times: int, text: str = "x") -> dict[str, Any]:
    """Repeat text."""
    return {"text": text * times}


@tool
def put(key: str, value: str) -> dict[str, Any]:
    """Set a key."""
    return {"key": key}


@tool
def get(key: str) -> dict[str, Any]:
    """Read a key."""
    return {"value": key}


def _named(name: str) -> Any:
    return StructuredTool.from_function(
        lambda q="": {"q": q}, name=name, description=f"The tool {name}."
    )


tagged(calculate_route, "read-only", resource="maps")
tagged(calculate_bmi, "read-only")
tagged(get, "read-only", resource="kv")
tagged(put, resource="kv")
CATALOG = ToolCatalog(
    [
        calculate_route,
        calculate_pace,
        roll_die,
        encrypt_data,
        calculate_bmi,
        repeat,
        put,
        get,
        _named("Real-Time_Search"),
        _named("weather.current"),
        _named("get-weather"),
    ]
)


def read(text: str, catalog: ToolCatalog = CATALOG) -> list[dict[str, Any]]:
    reading = read_python_answer(text, catalog)
    assert reading.data is not None, [i.message for i in reading.issues]
    steps: list[dict[str, Any]] = reading.data["steps"]
    return steps


def problems(text: str, catalog: ToolCatalog = CATALOG) -> list[str]:
    reading = read_python_answer(text, catalog)
    assert reading.data is None, reading.data
    return [issue.message for issue in reading.issues]


# -- faithful reading -------------------------------------------------------------------------


def test_identical_nested_reads_are_one_step() -> None:
    steps = read(
        'pace = calculate_pace(calculate_route(start="NY", end="Boston")["distance"], '
        'calculate_route(start="NY", end="Boston")["time"])\n'
    )
    assert [s["tool"] for s in steps] == ["calculate_route", "calculate_pace"]
    assert steps[1]["parameters"] == {
        "distance": "{{calculate_route.distance}}",
        "time": "{{calculate_route.time}}",
    }


def test_identical_calls_with_side_effects_are_kept_as_written() -> None:
    steps = read("roll_die(sides=20)\nroll_die(sides=20)\nroll_die(sides=20)\n")
    assert [s["id"] for s in steps] == ["roll_die", "roll_die_2", "roll_die_3"]


def test_a_read_after_a_write_on_its_resource_is_a_read_of_its_own() -> None:
    steps = read('a = get(key="k")\nput(key="k", value="v")\nb = get(key="k")\nc = get(key="k")\n')
    # b reads after the put: another step; c is b again (nothing written between)
    assert [s["id"] for s in steps] == ["a", "put", "b"]


def test_conversions_are_read_as_the_language_means_them() -> None:
    steps = read(
        "bmi = calculate_bmi(weight=70, height=1.75)\n"
        'encrypt_data(data=str(bmi["BMI"]))\n'
        'repeat(times=int(bmi["BMI"]), text=str(42))\n'
        'calculate_pace(distance=float(3), time=int("5"))\n'
    )
    assert steps[1]["parameters"] == {"data": "{{bmi.BMI}}"}  # as f"{bmi['BMI']}" is
    assert steps[2]["parameters"] == {"times": "{{bmi.BMI}}", "text": "42"}
    assert steps[3]["parameters"] == {"distance": 3.0, "time": 5}


def test_a_conversion_the_argument_cannot_take_is_refused_saying_how() -> None:
    [message] = problems(
        'bmi = calculate_bmi(weight=70, height=1.75)\nencrypt_data(data=int(bmi["BMI"]))\n'
    )
    assert message.startswith("line 2, column 19:")
    assert "int(bmi['BMI']) makes a int, but the argument takes string" in message
    assert "pass bmi['BMI'] as it is" in message
    [bad] = problems('repeat(times=int("five"))\n')
    assert "invalid literal for int()" in bad


def test_every_fenced_block_is_read_in_order() -> None:
    answer = (
        "First the route:\n```python\nroute = calculate_route(start='NY', end='Boston')\n```\n"
        "Then roll:\n```python\nroll_die(sides=6)\n```\nAnd encrypt:\n```py\n"
        "encrypt_data(data=f\"{route['distance']} km\")\n```\n"
    )
    steps = read(answer)
    assert [s["tool"] for s in steps] == ["calculate_route", "roll_die", "encrypt_data"]


def test_blocks_that_conflict_are_refused_saying_so() -> None:
    twice = (
        "```python\nroute = calculate_route(start='NY', end='LA')\n```\n"
        "or rather\n```python\nroute = calculate_route(start='NY', end='SF')\n```\n"
    )
    [message] = problems(twice)
    assert "its blocks conflict" in message and "block 1" in message
    again = "```python\nroll_die(sides=6)\n```\n```python\nroll_die(sides=6)\n```\n"
    [repeated] = problems(again)
    assert "block 2 makes the same calls as its block 1" in repeated
    [other] = problems("```python\nroll_die(sides=6)\n```\n```bash\nls\n```\n")
    assert "block 2 is bash, not Python" in other


def test_prose_before_the_first_block_is_not_read_as_code() -> None:
    answer = (
        "a = roll_die(sides=4)\nis what I would do, but:\n```python\na = roll_die(sides=6)\n```"
    )
    reader = PythonAnswerReader(CATALOG)
    seen = []
    for position in range(0, len(answer), 3):
        seen += reader.feed(answer[position : position + 3])
    seen += reader.feed("", final=True)
    reading = reader.finish()
    assert reader.restarts == 1
    assert reading.data is not None and reading.data["steps"] == [
        {"id": "a", "tool": "roll_die", "parameters": {"sides": 6}}
    ]
    assert seen[-1]["parameters"] == {"sides": 6}


def test_tools_whose_names_are_not_python_are_called_by_their_alias() -> None:
    assert python_name("Real-Time_Search") == "Real_Time_Search"
    assert python_name("weather.current") == "weather_current"
    assert python_name("2fa") == "_2fa" and python_name("class") == "class_"
    steps = read(
        'Real_Time_Search(q="laptops")\nweather_current(q="Oslo")\n'
        'weather.current(q="Rome")\nget_weather(q="Bergen")\n'
    )
    assert [s["tool"] for s in steps] == [
        "Real-Time_Search",
        "weather.current",
        "weather.current",
        "get-weather",
    ]
    signatures = render_signatures(CATALOG.infos(), tools=CATALOG.python_tools)
    assert "def Real_Time_Search(q" in signatures and 'def "Real' not in signatures
    assert "def weather_current(q" in signatures


def test_aliases_that_collide_are_refused_naming_both_tools() -> None:
    catalog = ToolCatalog([_named("get-weather"), _named("get.weather")])
    assert catalog.python_tools.collisions == {"get_weather": ("get-weather", "get.weather")}
    [message] = problems('get_weather(q="x")\n', catalog)
    assert "would name each of the tools 'get-weather', 'get.weather'" in message
    assert read('get.weather(q="x")\n', catalog)[0]["tool"] == "get.weather"  # as written
    own = PythonTools.from_signatures({"get_weather": ["q"], "get-weather": ["q"]})
    assert own.tool("get_weather") is not None and own.tool("get_weather").name == "get_weather"  # type: ignore[union-attr]


def _converter() -> Any:
    converter = StructuredTool.from_function(
        lambda **kw: {},
        name="convert",
        description="Convert an amount between currencies.",
        args_schema={
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "from": {"type": "string", "description": "The currency it is in."},
                "to": {"type": "string"},
                "content-type": {"type": "string"},
            },
            "required": ["amount", "from", "to"],
        },
    )
    converter.metadata = {
        "returns": {
            "type": "object",
            "properties": {"Exchange Rate": {"type": "string"}, "from": {"type": "string"}},
        }
    }
    return converter


def test_the_signatures_the_model_is_shown_are_python() -> None:
    # NESTFUL's specs: an argument named class, a required one after an optional one (glaive's
    # create_todo), an output key with a space (Alpha Vantage's "Exchange Rate")
    todo = StructuredTool.from_function(
        lambda **kw: {},
        name="create_todo",
        description="A to-do.",
        args_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "description": {"type": "string"},
                "due_date": {"type": "string"},
            },
            "required": ["title", "due_date"],
        },
    )
    catalog = ToolCatalog([_converter(), todo])
    signatures = render_signatures(catalog.infos(), tools=catalog.python_tools)
    compile(signatures, "<signatures>", "exec")
    assert '-> {"Exchange Rate": string, "from": string}' in signatures
    assert "def create_todo(title: str, description: str = None, *, due_date: str)" in signatures
    [step] = read('t = create_todo("Milk", "2 l", "today")\n', catalog)  # positions as declared
    assert step["parameters"] == {"title": "Milk", "description": "2 l", "due_date": "today"}


def test_arguments_whose_names_are_not_python_are_written_by_their_alias() -> None:
    catalog = ToolCatalog([_converter()])
    signatures = render_signatures(catalog.infos(), tools=catalog.python_tools)
    assert "def convert(amount: float, from_: str, to: str, content_type: str" in signatures
    assert "from_: The currency it is in." in signatures
    [step] = read('c = convert(amount=5, from_="USD", to="EUR", content_type="json")\n', catalog)
    assert step["parameters"] == {"amount": 5, "from": "USD", "to": "EUR", "content-type": "json"}
    [step] = read('c = convert(5, "USD", "EUR")\n', catalog)
    assert step["parameters"] == {"amount": 5, "from": "USD", "to": "EUR"}
    [message] = problems('c = convert(5, "USD", "EUR", "json", 7)\n', catalog)
    assert "the positions mean convert(amount=5, from_='USD', to='EUR', content_type='json')" in (
        message
    )


def test_a_plan_printed_with_its_tools_writes_the_aliases_and_reads_back() -> None:
    catalog = ToolCatalog([_converter()])
    plan = parse_plan(
        {
            "steps": [
                {
                    "id": "c",
                    "tool": "convert",
                    "parameters": {"amount": 5, "from": "USD", "to": "EUR", "content-type": "x"},
                }
            ]
        }
    )
    text = render_python_plan(plan, catalog.python_tools)
    assert "convert(amount=5, from_='USD', to='EUR', content_type='x')" in text.replace('"', "'")
    assert "cannot say" not in text
    [step] = read(text, catalog)
    assert step["parameters"] == {"amount": 5, "from": "USD", "to": "EUR", "content-type": "x"}
    assert "**{" in render_python_plan(plan)  # without the tools, no alias is known


def test_an_argument_written_as_a_keyword_is_told_its_alias() -> None:
    [message] = problems(
        'c = convert(amount=5, from="USD", to="EUR")\n', ToolCatalog([_converter()])
    )
    assert "'from' is a Python keyword" in message and "is written from_=" in message


def test_a_syntax_error_quotes_its_line() -> None:
    [message] = problems('a = roll_die(sides=6)\nb = roll_die(sides=4 text="x")\n')
    assert message.startswith("line 2, column")
    assert message.endswith('the line reads: b = roll_die(sides=4 text="x")')


def test_a_refused_line_does_not_make_later_lines_fail_for_its_names() -> None:
    messages = problems(
        'route = calculate_route(start="NY", end="LA")\n'
        'total = route["distance"] * 2\n'
        "encrypt_data(data=str(total))\n"
    )
    assert len(messages) == 1 and "arithmetic" in messages[0]
    assert not any("not defined" in m for m in messages)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[roll_die(sides=s) for s in [4, 6] if s > 4]", "a comprehension's if has no meaning"),
        ("route, d = calculate_route(start='a', end='b')", "unpacking"),
        ("x = [roll_die(sides=s) for s in [1] for t in [2]]", "one list only"),
        ("for s in [1]:\n    for t in [2]:\n        roll_die(sides=t)", "exactly one tool call"),
        ("x = lambda: 1", "lambda"),
        ("x = 1 if True else 2", "a conditional expression"),
        ("x = {roll_die(sides=1)}", "a set"),
        ("x = {k: 1 for k in 'ab'}", "a dict comprehension"),
        ("while True:\n    roll_die(sides=1)", "a while loop"),
        ("with open('f') as f:\n    pass", "with"),
        ("try:\n    roll_die(sides=1)\nexcept Exception:\n    pass", "try"),
        ("del x", "del"),
        ("roll_die(*[1])", "*arguments"),
        ("roll_die(**{'sides': 1})", "**arguments"),
        ("x = roll_die(sides=1)\nx += 1", "augmented assignment"),
        ("roll_die(sides=f'{1!r}')", "format specs"),
        ("x = roll_die(sides=1)['a'][-1]", "a literal key or position, not -1"),
        ("x = 'a' * 3", "joins text with +"),
        ("x = 2 ** 3", "computes + - * /"),
    ],
)
def test_each_construct_the_reader_refuses_is_refused_with_its_place(
    text: str, expected: str
) -> None:
    messages = problems(text)
    assert any(expected in message for message in messages), messages
    assert all(message.startswith("line ") for message in messages), messages


# -- bounded reading --------------------------------------------------------------------------


def _bounded(text: str) -> list[str]:
    """Read ``text``; its problems, read in less than 200 MB (what each costs in CPU is
    measured by ``python -m bench.reader``, not here: a timed test fails on a busy machine)."""
    tracemalloc.start()
    try:
        with pytest.raises(PlanInvalid) as refused:
            parse_python_plan(text, tools=CATALOG.python_tools, max_steps=50)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MB"
    messages = [issue.message for issue in refused.value.issues]
    assert messages and all(m.startswith("line ") for m in messages), messages
    return messages


def test_squaring_on_and_on_is_refused_before_the_number_grows() -> None:
    text = "a0 = 7\n" + "".join(f"a{i + 1} = a{i} * a{i}\n" for i in range(23))
    text += "roll_die(sides=a23)\n"
    assert any("digits" in m for m in _bounded(text))


def test_doubling_text_is_refused_before_the_string_is_built() -> None:
    text = 's0 = "xxxxxxxxxx"\n' + "".join(f"s{i + 1} = s{i} + s{i}\n" for i in range(27))
    text += "encrypt_data(data=s27)\n"
    assert any("characters" in m for m in _bounded(text))


def test_a_name_holding_a_large_value_used_everywhere_is_refused() -> None:
    text = 'big = "' + "x" * 90_000 + '"\n' + "".join("encrypt_data(data=big)\n" for _ in range(40))
    assert any("add up to more than" in m for m in _bounded(text))


@pytest.fixture
def looked_at(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of each line of code the source splitter looks at, in order."""
    lines: list[int] = []
    scan = SourceSplitter._scan

    def counted(self: SourceSplitter, line: str) -> Any:
        lines.append(len(line))
        return scan(self, line)

    monkeypatch.setattr(SourceSplitter, "_scan", counted)
    return lines


_AT_THE_LIMIT = (
    "line 51, column 1: the plan has more than 50 steps, the limit (TOOLPLAN_MAX_STEPS, "
    "--max-steps): split it, or raise the limit if this is intended"
)


def test_many_calls_stop_at_the_step_limit_and_the_rest_is_not_looked_at(
    looked_at: list[int],
) -> None:
    assert _bounded("roll_die(sides=6)\n" * 16_000) == [_AT_THE_LIMIT]
    assert len(looked_at) <= 53  # the 51st statement ends where the 52nd line begins


def test_a_long_statement_past_the_step_limit_is_not_looked_at(looked_at: list[int]) -> None:
    text = "roll_die(sides=6)\n" * 51 + "numbers = [\n" + "1,\n" * 100_000 + "]\n"
    assert _bounded(text) == [_AT_THE_LIMIT]
    assert len(looked_at) <= 53


def test_a_streamed_answer_stops_being_looked_at_at_the_step_limit(looked_at: list[int]) -> None:
    text = "```python\n" + "roll_die(sides=6)\n" * 16_000 + "```\n"
    reader = PythonAnswerReader(CATALOG, max_steps=50)
    for position in range(0, len(text), 4):
        reader.feed(text[position : position + 4])
    reading = reader.finish()
    at_the_limit = _AT_THE_LIMIT.replace("line 51", "line 52")  # line 1 is the fence
    assert reading.data is None and [i.message for i in reading.issues] == [at_the_limit]
    assert len(looked_at) <= 53


def test_a_long_word_is_read_in_linear_time_and_quoted_briefly() -> None:
    """A name 100,000 letters long: the tool-name respeller's first look tried a word from each
    of its letters (20,000 took 7.8 s); the problem quoted it whole, into the repair."""
    started = time.process_time()
    [message] = problems("x = " + "a" * 100_000 + "\n")
    spent = time.process_time() - started
    assert message.startswith("line 1, column 5: name 'aaaa") and "(100,000 characters)" in message
    assert len(message) < 300
    assert spent < 10, f"{spent:.1f} s of CPU"  # a guard, not a measure: quadratic takes minutes


@pytest.mark.parametrize(
    "text",
    [
        "x = list_blogs \\\n    (q='a1')\n",  # a backslash before the call's bracket
        "x = [list_blogs  # the author's\n    (q='a1')]\n",  # a comment before it
        "x = \uff4c\uff49\uff53\uff54_blogs(q='a1')\n",  # full-width, which Python reads as ASCII
    ],
)
def test_a_tool_name_spelled_otherwise_is_respelled_however_the_call_is_written(
    text: str,
) -> None:
    catalog = ToolCatalog([_named("listBlogs")])
    [step] = read(text, catalog)
    assert step["tool"] == "listBlogs"


def test_numbers_too_large_are_refused_with_their_place() -> None:
    [message] = _bounded("calculate_pace(distance=" + "9" * 400 + " * 1.5, time=1)\n")
    assert message.startswith("line 1, column 25:") and "digits" in message
    [large] = _bounded("calculate_pace(distance=1e308 * 10, time=1)\n")
    assert "finite" in large or "too large" in large


def test_a_nul_byte_and_deep_nesting_are_refused_with_their_place() -> None:
    [nul] = _bounded("roll_die(sides=1)\nroll_die(sides=\x002)\n")
    assert nul.startswith("line 2, column 16:") and "NUL" in nul
    [deep] = _bounded("roll_die(sides=" + "-" * 100_000 + "1)\n")
    assert deep.startswith("line 1, column") and "nest more than 64 deep" in deep
    [brackets] = _bounded("roll_die(sides=" + "[" * 70 + "]" * 70 + ")\n")
    assert "nest more than 64 deep" in brackets


def test_streamed_reading_looks_at_each_character_once_and_parses_each_statement_once(
    looked_at: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scanner before issue 50 looked at the whole text again on every chunk: quadratic
    # (5.2 s for these 100 statements; the cost now is in `python -m bench.reader`).
    parsed: list[str] = []
    parse = ast.parse

    def counted(source: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(source)
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    text = "".join(f"r{i} = roll_die(sides={i + 1})\n" for i in range(100))
    reader = PythonAnswerReader(CATALOG, max_steps=200)
    told = []
    for position in range(0, len(text), 4):
        told += reader.feed(text[position : position + 4])
    told += reader.feed("", final=True)
    assert len(told) == 100 and reader.finish().data is not None
    assert sum(looked_at) == len(text)
    assert "".join(parsed) == text


def test_a_key_with_a_space_or_a_dot_is_read_quoted_and_printed_back() -> None:
    # NESTFUL's executable split: an API returns {"Exchange Rate": ...} (issue 51)
    steps = read(
        'rate = calculate_route(start="USD", end="EUR")\n'
        'pace = calculate_pace(distance=rate["Exchange Rate"], time=rate["a.b"]["c"])\n'
        "encrypt_data(data=f\"rate {rate['Exchange Rate']}\")\n"
    )
    assert steps[1]["parameters"] == {
        "distance": '{{rate["Exchange Rate"]}}',
        "time": '{{rate["a.b"].c}}',
    }
    assert steps[2]["parameters"] == {"data": 'rate {{rate["Exchange Rate"]}}'}
    printed = render_python_plan(parse_plan({"steps": steps}))
    assert 'rate["Exchange Rate"]' in printed
    assert read(printed) == steps


def test_a_key_no_template_can_name_is_refused_with_its_place() -> None:
    (problem,) = problems('r = calculate_route(start="a", end="b")\nencrypt_data(data=r["x{y}"])\n')
    assert problem.startswith("line 2, column 21: the key 'x{y}' cannot be read in a plan")


def test_two_outputs_added_are_refused_not_joined_as_text() -> None:
    # what the real model wrote on BFCL's parallel_69: read as text, "{{a}}{{b}}", the sum of
    # two areas silently became a concatenation
    (problem,) = problems(
        "a = calculate_bmi(weight=70, height=1.8)\nb = calculate_bmi(weight=60, height=1.7)\n"
        'encrypt_data(data=a["BMI"] + b["BMI"])\n'
    )
    assert problem.startswith("line 3, column 19: a['BMI'] + b['BMI'] adds two steps' outputs")
    joined = read(
        "a = calculate_bmi(weight=70, height=1.8)\n"
        'encrypt_data(data="BMI " + a["BMI"] + " and " + f"{a[\'BMI\']}")\n'
    )
    assert joined[1]["parameters"] == {"data": "BMI {{a.BMI}} and {{a.BMI}}"}


def test_none_for_an_optional_argument_means_its_default() -> None:
    # the signature shows `dt: str = None`; the real model wrote dt=None (NESTFUL, issue 51)
    forecast = StructuredTool.from_function(
        lambda **kw: {},
        name="forecast",
        description="A forecast.",
        args_schema={
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "dt": {"type": "string"},
                "units": {"type": "string", "default": "metric"},
            },
            "required": ["q"],
        },
    )
    catalog = ToolCatalog([forecast])
    assert "dt: str = None" in render_signatures([catalog.info("forecast")])
    reading = read_python_answer('forecast(q="Mumbai", dt=None)\n', catalog)
    assert reading.data is not None
    assert reading.data["steps"][0]["parameters"] == {"q": "Mumbai"}
    assert [(c.rule, c.step) for c in reading.changes] == [("nulls", "forecast")]
    # a required argument, or one whose default is not None, keeps what was written
    kept = read_python_answer("forecast(q=None, units=None)\n", catalog)
    assert kept.data is not None
    assert kept.data["steps"][0]["parameters"] == {"q": None, "units": None}
    as_written = read_python_answer('forecast(q="M", dt=None)\n', catalog, rewrites="none")
    assert as_written.data is not None
    assert as_written.data["steps"][0]["parameters"] == {"q": "M", "dt": None}


def test_a_list_of_calls_is_refused_saying_to_write_each_call() -> None:
    # BFCL's answer form; a plan does not read it (the bench's prompting mode has its own reader)
    (problem,) = problems("[roll_die(sides=6), roll_die(sides=20)]\n")
    assert problem.startswith("line 1, column 1: the list [roll_die(sides=6), roll_die(sides=20)]")
    assert problem.endswith("write each call as a statement of its own")


def test_a_problem_names_each_step_as_the_text_does() -> None:
    """A problem's steps are said as the model can write them: a bound name, a bare call's id,
    and a nested call as written (its id is in no line of the text; NESTFUL glaive-42 and -152
    wrote the id they were shown and were told it is not defined)."""
    from toolplan.errors import ValidationIssue
    from toolplan.plan_format.python_plan import read_python_plan
    from toolplan.plan_format.python_print import in_python

    text = (
        'r = calculate_route(start="a", end="b")\n'
        'r = calculate_route(start="b", end="c")\n'
        'calculate_pace(distance=calculate_route(start="c", end="d"), time=r["time"])\n'
        "calculate_pace(distance=1, time=2)\n"
        f'roll_die(sides=calculate_route(start="{"x" * 200}", end="y")["distance"])\n'
    )
    sources = read_python_plan(text).sources
    ids = list(sources)
    assert ids == ["r", "r_2", "calculate_route", "calculate_pace", "calculate_pace_2",
                   "calculate_route_2", "roll_die"]  # fmt: skip

    def said(step: str, message: str) -> str:
        return in_python([ValidationIssue("types", message, step)], sources, CATALOG.python_tools)[
            0
        ].message

    about_pace = said(
        "calculate_pace",
        "step 'calculate_pace' of tool 'calculate_pace': argument 'distance' takes a number, "
        "but '{{calculate_route}}' is an object; use a field of it: {{calculate_route.distance}}"
        " (step 'calculate_route' (calculate_route) returns it), not {{r_2.time}}",
    )
    where, problem = about_pace.split("): ", 1)
    assert where.startswith("line 3, column 1 (calculate_pace(distance=calculate_route(")
    assert problem == (
        "argument 'distance' takes a number, but "
        "'calculate_route(start='c', end='d')' is an object; use a field of it: "
        "calculate_route(start='c', end='d')[\"distance\"] "
        "(calculate_route(start='c', end='d') returns it), not r[\"time\"]"
    )
    # a bare call's output is read by its id (the reader takes it), so the id is said
    assert said("r", "{{calculate_pace_2.pace}}").endswith('calculate_pace_2["pace"]')
    assert said("r", "{{calculate_pace.pace}}").endswith('calculate_pace["pace"]')
    # a call too long to repeat is named by its tool
    assert said("roll_die", "{{calculate_route_2.distance}}").endswith(
        'calculate_route(...)["distance"]'
    )


def test_a_problem_about_an_argument_given_by_position_says_its_place() -> None:
    """The real model gave a party size third, where the signature has the price range, and
    repeated it told only that the value is not one of the price ranges (NESTFUL sgd-11)."""
    from toolplan.plan_format.python_print import in_python
    from toolplan.validation import analyze

    reading = read_python_answer(
        'repeat(3, "x")\nrepeat("twice", "y")\nrepeat(text=4, times=2)\nrepeat("once")\n',
        CATALOG,
    )
    assert reading.data is not None
    with pytest.raises(PlanInvalid) as invalid:
        analyze(parse_plan(reading.data), CATALOG)
    said = [
        issue.message
        for issue in in_python(invalid.value.issues, reading.sources, CATALOG.python_tools)
    ]
    assert said == [
        "line 2, column 1 (repeat('twice', 'y')): argument 'times' (the 1st given by position: "
        "write each argument by name) of tool 'repeat' is invalid: 'twice' is not of type "
        "'integer'",
        "line 3, column 1 (repeat(text=4, times=2)): argument 'text' of tool 'repeat' is invalid: "
        "4 is not of type 'string'; write \"4\" (a string, in quotes)",
        # one argument by position cannot be in the wrong place
        "line 4, column 1 (repeat('once')): argument 'times' of tool 'repeat' is invalid: "
        "'once' is not of type 'integer'",
    ]


def test_a_problem_names_each_tool_by_the_name_a_plan_calls_it() -> None:
    """A tool whose name is not Python (``get-weather``) is called by its alias; a problem that
    named it as the catalog does would have the model write ``get-weather(...)``, a
    subtraction. A dotted name is Python as written and stays."""
    from toolplan.plan_format.python_print import in_python
    from toolplan.validation import analyze

    reading = read_python_answer(
        'get_weather(city="Oslo")\nweather.current(city="Rome")\nroll_die(q="x")\n', CATALOG
    )
    assert reading.data is not None
    with pytest.raises(PlanInvalid) as invalid:
        analyze(parse_plan(reading.data), CATALOG)
    issues = invalid.value.issues
    said = [i.message for i in in_python(issues, reading.sources, CATALOG.python_tools)]
    assert said == [
        "line 1, column 1 (get_weather(city='Oslo')): unknown argument 'city' for tool "
        "'get_weather' (it takes: q)",
        "line 2, column 1 (weather.current(city='Rome')): unknown argument 'city' for tool "
        "'weather.current' (it takes: q)",
        "line 3, column 1 (roll_die(q='x')): missing required argument 'sides' for tool "
        "'roll_die' (it takes: sides; required: sides)",
        "line 3, column 1 (roll_die(q='x')): unknown argument 'q' for tool 'roll_die' (it takes: "
        "sides)",  # three tools take q: none is named
    ]
    # tools the plan does not know keep the catalog's names: what the model was told before
    unknown = PythonTools([])
    assert "for tool 'get-weather'" in in_python(issues, reading.sources, unknown)[0].message
