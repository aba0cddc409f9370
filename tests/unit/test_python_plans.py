"""Plans written as Python statements (issue 43's plan language): parsed with ``ast``, never
run; what each statement means, what is refused (with its line and column), and the printed form
read back into the same plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest

from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import parse_plan
from toolplan.plan_format.python_plan import parse_python_plan
from toolplan.plan_format.python_print import render_python_plan

SIGNATURES = {
    "createAuthor": ["name", "email"],
    "createBlog": ["authorId", "title", "content"],
    "listBlogs": ["authorId"],
    "createComment": ["blogId", "text"],
    "get_weather": ["location", "units"],
    "check_threshold": ["metric", "threshold"],
    "page": ["team"],
    "math.factorial": ["number"],
}


def steps(text: str, signatures: Any = SIGNATURES) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = parse_python_plan(text, signatures=signatures)["steps"]
    return result


def refused(text: str, signatures: Any = SIGNATURES) -> list[str]:
    with pytest.raises(PlanInvalid) as error:
        parse_python_plan(text, signatures=signatures)
    return [issue.message for issue in error.value.issues]


def test_assignments_are_steps_and_references_are_templates() -> None:
    plan = steps(
        """
author = createAuthor(name="Ada", email="ada@x.io")
blog = createBlog(authorId=author["_id"], title="Tips", content=f"by {author['name']}!")
createComment(blogId=blog._id, text="Nice")
"""
    )
    assert plan == [
        {
            "id": "author",
            "tool": "createAuthor",
            "parameters": {"name": "Ada", "email": "ada@x.io"},
        },
        {
            "id": "blog",
            "tool": "createBlog",
            "parameters": {
                "authorId": "{{author._id}}",
                "title": "Tips",
                "content": "by {{author.name}}!",
            },
        },
        {
            "id": "createComment",
            "tool": "createComment",
            "parameters": {"blogId": "{{blog._id}}", "text": "Nice"},
        },
    ]


def test_positional_arguments_follow_the_signature() -> None:
    [step] = steps('get_weather("Madrid", "metric")')
    assert step["parameters"] == {"location": "Madrid", "units": "metric"}
    [message] = refused('get_weather("Madrid", "metric", 3)')
    assert message.startswith("line 1, column 33:")
    assert "get_weather takes 2 arguments (location, units), and 3 were given" in message
    # the fix written out: told only the counts, the real model gave ten for eight again
    assert message.endswith(
        "; by name, the positions mean get_weather(location='Madrid', units='metric'), "
        "and 3 matches no argument: leave it out"
    )
    [message] = refused(f'get_weather("{"x" * 500}", "metric", 3)')
    assert message.endswith(
        "; write each argument by name, and leave out what the tool does not take"
    )
    # without a catalog there is no order to read them in
    [message] = refused('get_weather("Madrid")', signatures=None)
    assert "write get_weather's arguments by name" in message


def test_a_rebound_name_is_a_new_step_and_earlier_references_keep_the_old_one() -> None:
    plan = steps(
        """
author = createAuthor(name="A")
first = createBlog(authorId=author["_id"], title="1")
author = createAuthor(name=author["name"])
second = createBlog(authorId=author["_id"], title="2")
"""
    )
    assert [s["id"] for s in plan] == ["author", "first", "author_2", "second"]
    assert plan[1]["parameters"]["authorId"] == "{{author._id}}"
    assert plan[2]["parameters"]["name"] == "{{author.name}}"  # read before it was rebound
    assert plan[3]["parameters"]["authorId"] == "{{author_2._id}}"


def test_literals_are_folded_and_print_comments_and_strings_are_ignored() -> None:
    plan = steps(
        '''
"""Check the CPU."""
# a comment
threshold = 80
limits = {"cpu": threshold, "names": ["a", "b"]}
check = check_threshold(metric="cpu", threshold=limits["cpu"] + 5)
print(check)
page(team=limits["names"][1])
'''
    )
    assert plan[0]["parameters"] == {"metric": "cpu", "threshold": 85}
    assert plan[1]["parameters"] == {"team": "b"}


def test_loops_and_comprehensions_are_for_each_steps() -> None:
    plan = steps(
        """
posts = listBlogs(authorId="a1")
for post in posts["blogs"]:
    createComment(blogId=post["_id"], text="Nice")
notes = [createComment(blogId=p["_id"], text=f"#{i}") for i, p in enumerate(posts["blogs"])]
for city in ["Paris", "Oslo"]:
    weather = get_weather(location=city)
"""
    )
    assert plan[1] == {
        "id": "createComment",
        "tool": "createComment",
        "parameters": {"blogId": "{{$item._id}}", "text": "Nice"},
        "forEach": "{{posts.blogs}}",
    }
    assert plan[2]["id"] == "notes" and plan[2]["forEach"] == "{{posts.blogs}}"
    assert plan[2]["parameters"] == {"blogId": "{{$item._id}}", "text": "#{{$index}}"}
    assert plan[3] == {
        "id": "weather",
        "tool": "get_weather",
        "parameters": {"location": "{{$item}}"},
        "forEach": ["Paris", "Oslo"],
    }


def test_if_sets_when_and_a_call_in_the_test_is_a_step() -> None:
    plan = steps(
        """
check = check_threshold(metric="cpu", threshold=80)
if check["exceeded"]:
    page(team="ops")
else:
    createComment(blogId="b", text="all fine")
if not check_threshold(metric="mem", threshold=90)["exceeded"]:
    page(team="none")
"""
    )
    assert plan[1]["when"] == "{{check.exceeded}}"
    assert plan[2]["when"] == {"not": "{{check.exceeded}}"}
    assert plan[3] == {
        "id": "check_threshold",
        "tool": "check_threshold",
        "parameters": {"metric": "mem", "threshold": 90},
    }
    assert plan[4]["when"] == {"not": "{{check_threshold.exceeded}}"}


def test_nested_calls_and_dotted_tool_names() -> None:
    plan = steps(
        'blog = createBlog(authorId=createAuthor(name="A")["_id"], title="T")\nmath.factorial(5)'
    )
    assert [s["id"] for s in plan] == ["createAuthor", "blog", "math_factorial"]
    assert plan[1]["parameters"]["authorId"] == "{{createAuthor._id}}"
    assert plan[2] == {
        "id": "math_factorial",
        "tool": "math.factorial",
        "parameters": {"number": 5},
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import os", "line 1, column 1: import is not part of the plan language"),
        ("while True:\n    page(team='x')", "a while loop is not part of the plan language"),
        ("def f():\n    pass", "def is not part of the plan language"),
        ("x = lambda: 1", "lambda"),
        ("a = check_threshold(metric='c', threshold=1)\nb = page(team=a['n'] * 2)", "arithmetic"),
        ("open('/etc/passwd')", "'open' is not a tool"),
        ("total = 0\ntotal += 1", "augmented assignment"),
        ("page(team=nobody)", "name 'nobody' is not defined"),
        ("createBlg(authorId='a')", "did you mean 'createBlog'"),
        (
            "x = check_threshold(metric='c', threshold=1)\nif x['v'] > 3:\n    page(team='a')",
            "computes a value",
        ),
        ("for p in [1, 2]:\n    page(team='a')\n    page(team='b')", "exactly one tool call"),
        ("page(team=", "the plan is not valid Python"),
    ],
)
def test_anything_else_is_refused_with_its_line_and_column(text: str, expected: str) -> None:
    messages = refused(text)
    assert any(expected in message for message in messages), messages
    assert all(message.startswith("line ") for message in messages), messages


HOTELS = {
    "Hotels_BookHouse": ["where_to", "number_of_adults", "check_in_date", "check_out_date"],
    "Hotels_SearchHotel": ["destination", "star_rating"],
    "Hotels_ReserveHotel": [
        "hotel_name",
        "check_in_date",
        "number_of_days",
        "destination",
        "number_of_rooms",
    ],
}


@pytest.mark.parametrize(
    ("call", "offered"),
    [
        # by spelling alone, the house booking is closest
        (
            "Hotels_BookHotel()",
            "'Hotels_BookHouse' or 'Hotels_SearchHotel' or 'Hotels_ReserveHotel'",
        ),
        # the call's keywords are the reservation's: it comes first
        (
            "Hotels_BookHotel(hotel_name='Ritz', number_of_days='2')",
            "'Hotels_ReserveHotel' or 'Hotels_BookHouse' or 'Hotels_SearchHotel'",
        ),
        # five arguments by position: only the reservation takes five
        (
            "Hotels_BookHotel('Ritz', '2024-01-01', '2', 'Paris', '1')",
            "'Hotels_ReserveHotel' or 'Hotels_BookHouse' or 'Hotels_SearchHotel'",
        ),
        # a keyword only the search takes
        (
            "Hotels_BookHotel('Paris', star_rating='4')",
            "'Hotels_SearchHotel' or 'Hotels_BookHouse' or 'Hotels_ReserveHotel'",
        ),
    ],
)
def test_an_unknown_tool_offers_first_the_tools_that_take_its_arguments(
    call: str, offered: str
) -> None:
    """A model that mixes two tools' names up takes the first name offered; spelling alone
    offered a tool that cannot take the call (NESTFUL's ``sgd-14``, ``sgd-27``)."""
    (message,) = refused(call, HOTELS)
    assert message.endswith(f"'Hotels_BookHotel' is not a tool; did you mean {offered}?"), message


def test_every_problem_is_reported_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"import pathlib\npathlib.Path({str(marker)!r}).touch()\nopen({str(marker)!r}, 'w')"
    messages = refused(text)
    assert len(messages) == 3
    assert messages[0].startswith("line 1,") and messages[2].startswith("line 3,")
    assert not marker.exists()


EXAMPLES: list[dict[str, Any]] = [
    {
        "steps": [
            {"id": "author", "tool": "createAuthor", "parameters": {"name": "Ada", "email": "a@x"}},
            {
                "id": "blog",
                "tool": "createBlog",
                "parameters": {
                    "authorId": "{{author._id}}",
                    "title": "T",
                    "content": 'say "{hi}" {{author.name}}',
                },
            },
            {
                "id": "comments",
                "tool": "createComment",
                "forEach": "{{blog.tags}}",
                "parameters": {"blogId": "{{blog._id}}", "text": "#{{$index}} {{$item.name}}"},
            },
            {
                "id": "check",
                "tool": "check_threshold",
                "parameters": {"metric": "cpu", "threshold": -1.5},
            },
            {
                "id": "item",
                "tool": "page",
                "parameters": {"team": None},
                "when": "{{check.exceeded}}",
            },
            {
                "id": "calm",
                "tool": "page",
                "parameters": {"team": [True, {"k": 1}]},
                "when": {"not": "{{check.exceeded}}"},
            },
            {
                "id": "cities",
                "tool": "get_weather",
                "forEach": ["Paris", "Oslo"],
                "parameters": {"location": "{{$item}}"},
            },
        ]
    }
]


@pytest.mark.parametrize("plan", EXAMPLES)
def test_the_printed_form_reads_back_as_the_same_plan(plan: dict[str, Any]) -> None:
    text = render_python_plan(parse_plan(plan))
    back = parse_python_plan(text, signatures=SIGNATURES)
    original = parse_plan(plan).to_json()
    renamed = {"item": "item_"}  # a step named like the loop variable is renamed in print
    for step in original["steps"]:
        step["id"] = renamed.get(step["id"], step["id"])
    assert parse_plan(back).to_json() == original, text


def test_the_printed_form_notes_what_python_cannot_say() -> None:
    plan = parse_plan(
        {
            "steps": [
                {"id": "a", "tool": "page", "parameters": {"team": "x"}},
                {
                    "id": "b-2",
                    "tool": "page",
                    "parameters": {"team": "{{a}}"},
                    "dependsOn": ["a"],
                    "timeout": 5,
                    "fallback": {"tool": "page", "parameters": {"team": "backup"}},
                },
            ],
            "outputSteps": ["b-2"],
        }
    )
    text = render_python_plan(plan)
    assert 'b_2 = page(team=a)  # after a; fallback page(team="backup"); timeout 5 s' in text
    assert text.rstrip().endswith("# outputs: b_2")


def test_the_shipped_example_plan_prints_and_reads_back() -> None:
    from importlib import resources

    data = json.loads(resources.files("toolplan.examples").joinpath("blog_chain.json").read_text())
    plan = parse_plan(data)
    text = render_python_plan(plan)
    assert text.startswith(
        "# Python cannot say: fallback (blog); timeout (blog); maxAttempts (blog); outputSteps"
    )
    assert "# Create the author first" in text
    back = parse_plan(parse_python_plan(text))
    # ids, tools and arguments come back; the fallback, timeout and attempts are comments
    assert [(s.id, s.tool, s.parameters) for s in back.steps] == [
        (s.id, s.tool, s.parameters) for s in plan.steps
    ]
    assert '# fallback createDraft(title="Hello"); timeout 30 s; maxAttempts 3' in text


def test_the_catalog_as_python_signatures() -> None:
    from langchain_core.tools import tool

    from toolplan.planning.python_format import PythonAnswerReader, render_signatures
    from toolplan.tools import ToolCatalog, load_tool_modules

    blog = render_signatures(load_tool_modules(["blog"]).infos())
    assert blog.startswith(
        "def createAuthor(name: str, email: str) -> {_id: string, name: string, email: string}:"
        '\n    """Create an author'
    )

    @tool
    def forecast(city: str, units: Literal["metric", "imperial"] = "metric", days: int = 3) -> str:
        """The forecast for a city."""
        return ""

    text = render_signatures(ToolCatalog([forecast]).infos())
    assert text == (
        'def forecast(city: str, units: Literal["metric", "imperial"] = "metric", days: int = 3)'
        ':\n    """The forecast for a city."""'
    )

    # Defaults are Python literals (a code model copies `false` into its calls), and what each
    # argument means is in the docstring, where a code model looks for it.
    from langchain_core.tools import StructuredTool

    depreciation = StructuredTool.from_function(
        lambda **_: "",
        name="depreciation",
        description="Depreciated value of a property.",
        args_schema={
            "type": "object",
            "properties": {
                "rate": {"type": "integer", "description": "The annual rate  in percentage."},
                "monthly": {"type": "boolean", "default": False},
                "basis": {"type": "string", "enum": [True, "x"], "default": None},
            },
            "required": ["rate"],
        },
    )
    assert render_signatures(ToolCatalog([depreciation]).infos()) == (
        'def depreciation(rate: int, monthly: bool = False, basis: Literal[True, "x"] = None):\n'
        '    """Depreciated value of a property.\n\n'
        "    Args:\n"
        "        rate: The annual rate in percentage.\n"
        '    """'
    )

    scanner = PythonAnswerReader(ToolCatalog([forecast]))
    assert scanner.feed('a = forecast(city="Oslo")\nb = forecast(') == [
        {"id": "a", "tool": "forecast", "parameters": {"city": "Oslo"}}
    ]
    assert scanner.feed('city="Rome")\n') == []  # complete only once another line starts
    assert [s["id"] for s in scanner.feed("", final=True)] == ["b"]


def test_a_bare_calls_output_is_read_by_its_id() -> None:
    plan = steps(
        'createAuthor(name="A", email="a@x")\n'
        'createBlog(authorId=createAuthor["_id"], title="T")\n'
        'for p in listBlogs(authorId="a1")["blogs"]:\n'
        '    createComment(blogId=p["_id"], text="ok")\n'
        'page(team=createComment[0]["_id"])\n'
    )
    assert plan[1]["parameters"]["authorId"] == "{{createAuthor._id}}"
    assert plan[3]["id"] == "createComment" and plan[3]["forEach"] == "{{listBlogs.blogs}}"
    assert plan[4]["parameters"] == {"team": "{{createComment[0]._id}}"}
    # a name bound by an assignment keeps its meaning
    assert steps('createAuthor = createAuthor(name="A")\ncreateAuthor(name=createAuthor["name"])')[
        1
    ]["parameters"] == {"name": "{{createAuthor.name}}"}


def test_a_loop_body_of_several_calls_names_the_ones_to_move() -> None:
    """The real model nested an unrelated check inside a loop; told only "move other calls out"
    it wrote the same loop twice more. The problem now names the statement and says why."""
    nested = (
        "for blog in listBlogs()['blogs']:\n"
        "    createComment(blogId=blog['_id'], text='Thanks')\n"
        "    if check(metric='p95')['exceeded']:\n"
        "        createDraft(title='Slow')\n"
    )
    with pytest.raises(PlanInvalid) as refused:
        parse_python_plan(nested)
    (issue,) = refused.value.issues
    assert "(line 3) does not use blog: move it before or after the loop" in issue.message
    twice = "for b in xs['items']:\n    f(a=b)\n    g(a=b)\n"
    with pytest.raises(PlanInvalid) as both:
        parse_python_plan("xs = h()\n" + twice)
    assert "write one loop per call" in both.value.issues[0].message


def test_a_loop_that_only_prints_is_ignored_as_its_prints_are() -> None:
    """NESTFUL executable-45: the model searched, then printed each result's fields in a loop.
    The prints were ignored and the loop was refused as having no call, so the planning failed
    twice on display code. A loop with nothing but prints (or comments) does nothing a plan does;
    a call in what it goes over is still a step."""
    printed = (
        "found = listBlogs()\n"
        "for blog in found['blogs']:\n"
        "    print(f\"Title: {blog['title']}\")\n"
        "    'shown'\n"
        "    pass\n"
    )
    assert [s["tool"] for s in steps(printed)] == ["listBlogs"]
    nested = "for blog in listBlogs()['blogs']:\n    print(blog)\n"
    assert [(s["tool"], s.get("forEach")) for s in steps(nested)] == [("listBlogs", None)]
    with pytest.raises(PlanInvalid, match="a loop goes over a list"):  # the tool call is read
        steps("for b in listBlogs()['blogs'][0]['title'] + 'x':\n    print(b)\n")
    # a method of a value makes no step: the loop is display code
    assert len(steps("found = listBlogs()\nfor k in found.keys():\n    print(k)\n")) == 1
    # a body with a call in it is read as before
    looped = steps(
        "found = listBlogs()\nfor b in found['blogs']:\n    print(b)\n    page(team=b['title'])\n"
    )
    assert looped[1]["forEach"] == "{{found.blogs}}"
