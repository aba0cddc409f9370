"""The planner's Python format (``TOOLPLAN_PLAN_FORMAT=python``) through the real ChatOpenAI
client and the local OpenAI-compatible server: the catalog goes out as Python signatures with no
schema, the model's text comes back as statements (read, never run), each told while the answer
streams; a statement outside the plan language goes back to the model as its own text with the
line and column; an answer of comments only declines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ON_BOTH_STORES, Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import ATTEMPTS
from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.pipeline.planning import create_plan
from toolplan.planning.context import PlannerContext
from toolplan.planning.planner import PlanningFailed
from toolplan.planning.progress import PlanningEvent

pytestmark = [pytest.mark.e2e]

QUERY = "Create author Bob (bob@test.com) and a post by him titled 'Tips' about testing"

ANSWER = """```python
author = createAuthor(name="Bob", email="bob@test.com")
blog = createBlog(authorId=author["_id"], title="Tips", content=f"testing, by {author['name']}")
```"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.setenv("TOOLPLAN_TOOLS", "blog")
    monkeypatch.setenv("TOOLPLAN_PLAN_FORMAT", "python")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    monkeypatch.delenv("TOOLPLAN_STRUCTURED_METHOD", raising=False)
    with FakeOpenAIServer(api_key="sk-test") as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        yield llm


def planner(tmp_path: Path, **kwargs: Any) -> PlannerContext:
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    return Toolplan(settings=settings).planner_context(**kwargs)


def system_prompt(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "system")


async def test_the_plan_is_python_calls_read_and_never_run(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.script([Reply.content(ANSWER, usage=(500, 40)).with_(pieces=30)])
    events: list[PlanningEvent] = []
    outcome = await create_plan(QUERY, planner(tmp_path, listener=events.append))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 1
    assert outcome.plan["steps"][1]["parameters"] == {
        "authorId": "{{author._id}}",
        "title": "Tips",
        "content": "testing, by {{author.name}}",
    }
    (request,) = server.requests
    assert "tools" not in request and "response_format" not in request
    prompt = system_prompt(request)
    assert "def createAuthor(name: str, email: str)" in prompt
    assert "Write only the Python statements" in prompt
    # each statement is told while the answer streams, before it is complete
    steps = [e for e in events if e.kind == "step"]
    assert [e.step["tool"] for e in steps if e.step] == ["createAuthor", "createBlog"]
    assert steps[0].tokens is not None and steps[0].tokens < 30
    record = outcome.ref.plan_id
    stored = planner(tmp_path).store.get_plan(record)
    assert stored is not None and stored.meta["planSchema"] == "python"
    assert stored.meta["promptVersion"] == "planner-python-v4"


async def test_a_statement_outside_the_language_goes_back_as_the_models_own_text(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    wrong = 'import os\nauthor = createAuthor("Bob", "bob@test.com", "extra")\n'
    server.script([Reply.content(wrong), Reply.content(ANSWER)])
    outcome = await create_plan(QUERY, planner(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 2
    repair = server.requests[1]["messages"][-1]["content"]
    assert wrong.strip() in repair  # its own text, not a rewritten plan
    assert "line 1, column 1: import is not part of the plan language" in repair
    assert "line 2, column 46: createAuthor takes 2 arguments (name, email)" in repair


async def test_a_repair_suggests_python_not_a_template(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The validator suggests ``"{{createAuthor._id}}"``; a model writing Python copied that
    into its call as a string. The Python format's repair says ``createAuthor["_id"]``."""
    wrong = (
        'createAuthor(name="Bob", email="bob@test.com")\n'
        'createBlog(authorId="bob@test.com", title="Tips", content="testing")\n'
    )
    server.script([Reply.content(wrong), Reply.content(ANSWER)])
    outcome = await create_plan(QUERY, planner(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 2
    repair = server.requests[1]["messages"][-1]["content"]
    assert 'pass the id it returns: createAuthor["_id"]' in repair, repair
    assert "{{" not in repair


@pytest.mark.parametrize("rewrites", ["format", "none"])
async def test_a_tool_name_in_snake_case_is_read_as_the_tool(
    server: FakeOpenAIServer, tmp_path: Path, rewrites: str
) -> None:
    """``list_blogs()`` for ``listBlogs`` (the real model wrote it three times over, told the
    right name each time) is the ``tool_names`` format rule, recorded; with rewrites off the
    answer is read as written and goes back to the model."""
    server.script([Reply.content("list_blogs()\n"), Reply.content("listBlogs()\n")])
    ctx = replace(planner(tmp_path), rewrites=rewrites)
    outcome = await create_plan("List all blog posts", ctx)
    assert outcome.ref.status == "planned"
    assert [(s["id"], s["tool"]) for s in outcome.plan["steps"]] == [("listBlogs", "listBlogs")]
    if rewrites == "format":
        assert outcome.llm_calls == 1
        assert outcome.changes == [
            {"rule": "tool_names", "step": None, "before": "list_blogs", "after": "listBlogs"}
        ]
    else:
        assert outcome.llm_calls == 2 and outcome.changes == []
        repair = server.requests[1]["messages"][-1]["content"]
        assert "'list_blogs' is not a tool; did you mean 'listBlogs'?" in repair


@pytest.mark.parametrize("rewrites", ["format", "none"])
async def test_a_loop_over_an_object_holding_one_list_goes_over_the_list(
    server: FakeOpenAIServer, tmp_path: Path, rewrites: str
) -> None:
    """``for blog in listBlogs(...)`` (``listBlogs`` returns ``{blogs: [...], count}``): the
    ``loop_lists`` format rule loops over ``blogs``, recorded; with rewrites off it goes back to
    the model, which is told where the list is, in Python."""
    loop = (
        'for blog in listBlogs(authorId="a1"):\n    createComment(blogId=blog["_id"], text="ok")\n'
    )
    fixed = loop.replace('authorId="a1")', 'authorId="a1")["blogs"]')
    server.script([Reply.content(loop), Reply.content(fixed)])
    ctx = replace(planner(tmp_path), rewrites=rewrites)
    outcome = await create_plan("For every post by author a1, add the comment 'ok'", ctx)
    assert outcome.ref.status == "planned"
    assert outcome.plan["steps"][1]["forEach"] == "{{listBlogs.blogs}}"
    if rewrites == "format":
        assert outcome.llm_calls == 1
        assert outcome.changes == [
            {
                "rule": "loop_lists",
                "step": "createComment",
                "before": "forEach {{listBlogs}}",
                "after": "forEach {{listBlogs.blogs}}",
            }
        ]
    else:
        assert outcome.llm_calls == 2 and outcome.changes == []
        repair = server.requests[1]["messages"][-1]["content"].split("Problems:")[1]
        # the loop's source as written: the id the reader gave it is no name in the text
        assert "the list is under 'blogs': listBlogs(authorId='a1')[\"blogs\"]" in repair, repair


async def test_python_is_the_default_and_a_json_answer_is_still_read(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``TOOLPLAN_PLAN_FORMAT`` unset the planner asks for Python statements (the format
    measured ahead: BENCHMARKS); a server that answers a JSON plan whatever it is asked (text, or
    JSON content where no schema was asked) is still read, as the JSON format reads it."""
    monkeypatch.delenv("TOOLPLAN_PLAN_FORMAT")
    assert Settings.from_env().planner.plan_format == "python"
    plan = {
        "steps": [
            {"id": "a", "tool": "createAuthor", "parameters": {"name": "Bob", "email": "b@x"}}
        ]
    }
    server.script([Reply.content("```json\n" + json.dumps(plan) + "\n```"), Reply.structured(plan)])
    for _ in range(2):
        outcome = await create_plan(QUERY, planner(tmp_path))
        assert outcome.ref.status == "planned" and outcome.llm_calls == 1
        assert [s["tool"] for s in outcome.plan["steps"]] == ["createAuthor"]
    assert all("response_format" not in r and "tools" not in r for r in server.requests)
    assert "def createAuthor(" in system_prompt(server.requests[0])


WRONG = 'author = createAuthor("Bob", "bob@test.com", "extra")\n'
JSON_PLAN = {
    "reasoning": "the post needs the author's id",
    "steps": [
        {"id": "author", "tool": "createAuthor", "parameters": {"name": "Bob", "email": "b@x"}},
        {
            "id": "blog",
            "tool": "createBlog",
            "parameters": {"authorId": "{{author._id}}", "title": "Tips", "content": "testing"},
        },
    ],
}


def asks_json(request: dict[str, Any]) -> bool:
    return "tools" in request or "response_format" in request


async def test_the_attempt_after_the_python_repair_asks_afresh_for_a_json_plan(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The formats fail on different requests (BENCHMARKS, *Data flow*): after the last Python
    repair, the model is asked for a JSON plan afresh, as the JSON format asks first: its own
    prompt and schema, no Python answer and no Python problems. The plan records the schema it
    came in, and the CLI's event says what is asked."""
    server.script([Reply.content(WRONG), Reply.content(WRONG), Reply.structured(JSON_PLAN)])
    events: list[PlanningEvent] = []
    outcome = await create_plan(QUERY, planner(tmp_path, listener=events.append))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 3
    assert [s["tool"] for s in outcome.plan["steps"]] == ["createAuthor", "createBlog"]
    first, repair, last = server.requests
    assert not asks_json(first) and not asks_json(repair) and asks_json(last)
    assert "def createAuthor(" in system_prompt(repair)
    assert "def createAuthor(" not in system_prompt(last)
    assert [m["content"] for m in last["messages"] if m["role"] == "user"] == [QUERY]
    afresh = [e.afresh for e in events if e.kind == "repairing"]
    assert afresh == [None, "json"]
    stored = planner(tmp_path).store.get_plan(outcome.ref.plan_id)
    assert stored is not None and stored.meta["planSchema"] in ("typed", "generic")


async def test_a_json_plan_asked_afresh_is_judged_and_its_problems_reported(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    wrong_json = {"steps": [{"id": "a", "tool": "createAuthr", "parameters": {"name": "Bob"}}]}
    server.script([Reply.content(WRONG), Reply.content(WRONG), Reply.structured(wrong_json)])
    with pytest.raises(PlanningFailed) as failed:  # the JSON attempt is the last one
        await create_plan(QUERY, replace(planner(tmp_path), max_repairs=2))
    assert failed.value.details["llmCalls"] == 3
    assert "createAuthr" in str(failed.value)  # the last answer's problems, as written
    assert len(server.requests) == 3


@pytest.mark.parametrize("schema_fallback", [False, True])
async def test_an_endpoint_that_refuses_the_schema_gets_the_python_repair_instead(
    server: FakeOpenAIServer, tmp_path: Path, schema_fallback: bool
) -> None:
    """A server that takes text only answers the JSON request with an error naming the schema:
    the JSON attempt is then the Python repair it was before (streamed and told as one), not a
    failure to reach the model, also where the generic schema was already in use; the context
    remembers, and a later planning is not asked for the schema again."""
    refused = Reply.error(400, "response_format and tools are not supported by this server")
    streamed = Reply.content(ANSWER).with_(pieces=30)
    server.script([Reply.content(WRONG), Reply.content(WRONG), refused, streamed])
    events: list[PlanningEvent] = []
    ctx = replace(planner(tmp_path, listener=events.append), schema_fallback=schema_fallback)
    outcome = await create_plan(QUERY, ctx)
    assert outcome.ref.status == "planned" and outcome.llm_calls == 3
    assert [asks_json(r) for r in server.requests] == [False, False, True, False]
    repair = server.requests[3]["messages"][-1]["content"]
    assert WRONG.strip() in repair and "createAuthor takes 2 arguments" in repair
    stored = planner(tmp_path).store.get_plan(outcome.ref.plan_id)
    assert stored is not None and stored.meta["planSchema"] == "python"
    third = [e for e in events if e.attempt == 3]
    assert [e.afresh for e in third if e.kind == "repairing"] == ["json", None]
    assert [e.step["tool"] for e in third if e.kind == "step" and e.step] == [
        "createAuthor",
        "createBlog",
    ]
    server.script([Reply.content(WRONG), Reply.content(WRONG), Reply.content(ANSWER)])
    again = await create_plan(QUERY, ctx)
    assert again.ref.status == "planned" and again.llm_calls == 3
    assert [asks_json(r) for r in server.requests[4:]] == [False, False, False]


async def test_after_a_refused_schema_every_later_attempt_is_a_python_repair(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    refused = Reply.error(400, "response_format and tools are not supported by this server")
    replies = [Reply.content(WRONG), Reply.content(WRONG), refused, Reply.content(WRONG)]
    server.script([*replies, Reply.content(ANSWER)])
    outcome = await create_plan(QUERY, planner(tmp_path))
    assert outcome.ref.status == "planned" and outcome.llm_calls == 4
    assert [asks_json(r) for r in server.requests] == [False, False, True, False, False]
    assert WRONG.strip() in server.requests[4]["messages"][-1]["content"]  # a Python repair


@pytest.mark.parametrize(
    ("repairs", "formats"),
    [
        (0, "P"),
        (1, "PJ"),
        (2, "PPJ"),
        (3, "PPJj"),
        (5, "PPJjjj"),
    ],
)
async def test_the_formats_of_the_attempts(
    server: FakeOpenAIServer, tmp_path: Path, repairs: int, formats: str
) -> None:
    """Python (P), one Python repair, JSON asked afresh (J), then repairs of that JSON plan
    (j), as many as ``max_repairs`` allows; ``max_repairs=0`` is one answer as written. Every
    attempt fails here, so each one is asked."""
    wrong_json = {"steps": [{"id": "a", "tool": "createAuthr", "parameters": {"name": "Bob"}}]}
    replies = {"P": Reply.content(WRONG), "J": Reply.structured(wrong_json)}
    server.script([replies[f.upper()] for f in formats])
    events: list[PlanningEvent] = []
    ctx = replace(planner(tmp_path, listener=events.append), max_repairs=repairs)
    with pytest.raises(PlanningFailed):
        await create_plan(QUERY, ctx)
    assert [asks_json(r) for r in server.requests] == [f != "P" for f in formats]
    repairs_told = [e.afresh for e in events if e.kind == "repairing"]
    assert repairs_told == ["json" if f == "J" else None for f in formats[1:]]
    for request, written in zip(server.requests, formats, strict=True):
        repair = request["messages"][-1]["content"]
        assert (written == "j") == ("createAuthr" in repair)  # a JSON repair carries its plan


async def test_attempts_after_the_json_one_repair_it(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """With a third repair allowed, the JSON plan asked afresh is repaired in JSON, not thrown
    away for another Python answer: the fourth request asks for the schema, carries the JSON
    answer and its problems, and is told as a plain repair."""
    wrong_json = {"steps": [{"id": "a", "tool": "createAuthr", "parameters": {"name": "Bob"}}]}
    replies = [Reply.content(WRONG), Reply.content(WRONG), Reply.structured(wrong_json)]
    server.script([*replies, Reply.structured(JSON_PLAN)])
    events: list[PlanningEvent] = []
    ctx = replace(planner(tmp_path, listener=events.append), max_repairs=3)
    outcome = await create_plan(QUERY, ctx)
    assert outcome.ref.status == "planned" and outcome.llm_calls == 4
    assert [asks_json(r) for r in server.requests] == [False, False, True, True]
    repair = server.requests[3]["messages"][-1]["content"]
    assert "createAuthr" in repair and "def createAuthor(" not in system_prompt(server.requests[3])
    assert [e.afresh for e in events if e.kind == "repairing"] == [None, "json", None]


async def test_the_json_format_repairs_every_attempt(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    wrong_json = {"steps": [{"id": "a", "tool": "createAuthr", "parameters": {"name": "Bob"}}]}
    server.script([Reply.structured(wrong_json)] * 2 + [Reply.structured(JSON_PLAN)])
    ctx = replace(planner(tmp_path), plan_format="json")
    outcome = await create_plan(QUERY, ctx)
    assert outcome.ref.status == "planned" and outcome.llm_calls == 3
    assert all(asks_json(r) for r in server.requests)
    assert "createAuthr" in server.requests[2]["messages"][-1]["content"]  # a repair


async def test_an_answer_of_comments_only_declines(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.script([Reply.content("# no function can convert currencies")])
    with pytest.raises(PlanningFailed) as failed:
        await create_plan("Convert 5 EUR to JPY", planner(tmp_path))
    assert "no function can convert currencies" in str(failed.value)


def test_cli_runs_a_python_planned_query(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    cli_llm.env["TOOLPLAN_PLAN_FORMAT"] = "python"
    llm.script([Reply.content(ANSWER)])
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    result = done.json()
    assert result["status"] == "succeeded"
    assert [step["tool"] for step in result["steps"]] == ["createAuthor", "createBlog"]
    bad = cli_llm.env | {"TOOLPLAN_PLAN_FORMAT": "yaml"}
    cli_llm.env = bad
    refused = cli_llm("run", QUERY, "--no-answer")
    assert refused.code == 2 and "TOOLPLAN_PLAN_FORMAT" in refused.stderr


def test_cli_says_when_it_asks_afresh_for_a_json_plan(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.content(WRONG), Reply.content(WRONG), Reply.structured(JSON_PLAN)])
    done = cli_llm("plan", QUERY)
    assert done.code == 0, done.stderr
    assert f"repairing (attempt 2 of {ATTEMPTS}): line 1, column" in done.stderr
    assert f"a JSON plan (attempt 3 of {ATTEMPTS}) after: line 1, column" in done.stderr


@ON_BOTH_STORES
def test_the_agent_answers_from_a_python_plan_on_both_stores(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """``toolplan run "QUERY"`` (the agent graph: plan, execute, respond) with the Python format,
    on SQLite and on MongoDB: the stored plan is the statements read, and ``show`` prints it back
    as Python."""
    cli_llm.env["TOOLPLAN_PLAN_FORMAT"] = "python"
    llm.script(
        [
            Reply.content(ANSWER),
            Reply.structured({"action": "answer", "answer": "Bob now has a post, Tips."}),
        ]
    )
    done = cli_llm("run", QUERY, "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert data["answer"] == "Bob now has a post, Tips." and data["status"] == "succeeded"
    assert "schema" not in str(llm.requests[0].get("response_format") or "")
    shown = cli_llm("show", data["plans"][0]["planId"])
    assert shown.code == 0, shown.stderr
    assert 'author = createAuthor(name="Bob", email="bob@test.com")' in shown.stdout
