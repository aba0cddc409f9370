"""No silence while planning (issue 28): ``toolplan plan`` and ``run`` print what the planner is
doing on stderr while the model works, through the real CLI and the local OpenAI-compatible
server: each step as soon as the streamed answer has it, repairs, answers; ``--json`` prints
nothing until the end, and a closed stderr never fails a run."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import ATTEMPTS, QUERY, blog_plan, broken_blog_plan

PLANNING = "planning with openai:gpt-4o-mini…"


@pytest.mark.usefixtures("json_plans")  # a model scripted to answer JSON
def test_plan_prints_progress_on_stderr_only(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script(
        [Reply.structured(broken_blog_plan(), usage=(100, 20)), Reply.structured(blog_plan())]
    )
    done = cli_llm("plan", QUERY)
    assert done.code == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == PLANNING
    # each answer's steps as they were written, then the answer; the repaired one again
    assert lines[1].startswith('  + createAuthr(name="Alice", email="alice@test.com")  ')
    assert lines[2].startswith('  + createBlog(authorId="{{writer._id}}", title="Hello", ')
    assert (
        lines[3].startswith("answered after ")
        and "2 step(s); 1 LLM call(s), 100 input" in (lines[3])
    )
    assert lines[4].startswith(f"repairing (attempt 2 of {ATTEMPTS}): step 'author': unknown tool")
    assert lines[4].endswith("(+1 more)")
    assert lines[5].startswith('  + createAuthor(name="Alice", email="alice@test.com")  ')
    assert lines[6].startswith("  + createBlog(")
    assert lines[7].startswith("answered after ") and "2 LLM call(s)" in lines[7]
    assert "planning with" not in done.stdout and "stored plan_" in done.stdout


def test_json_output_stays_silent_until_the_end(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan())])
    done = cli_llm("plan", QUERY, "--json")
    assert done.code == 0, done.stderr
    assert "planning" not in done.stderr and "answered" not in done.stderr
    assert done.json()["llmCalls"] == 1  # stdout is exactly one JSON object

    llm.script(
        [Reply.structured(blog_plan()), Reply.structured({"action": "answer", "answer": "ok"})]
    )
    ran = cli_llm("run", QUERY, "--json")
    assert ran.code == 0, ran.stderr
    assert "planning" not in ran.stderr and ran.json()["answer"] == "ok"


@pytest.mark.usefixtures("json_plans")  # a model scripted to answer JSON
def test_run_prints_progress_before_the_plan(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script(
        [Reply.structured(blog_plan()), Reply.structured({"action": "answer", "answer": "ok"})]
    )
    done = cli_llm("run", QUERY)
    assert done.code == 0, done.stderr
    assert done.stderr.startswith(PLANNING + '\n  + createAuthor(name="Alice"')
    assert done.stderr.index("  + createBlog(") < done.stderr.index("answered after")
    assert done.stderr.index("answered after") < done.stderr.index("critical path")

    llm.script([Reply.structured(blog_plan())])
    plain = cli_llm("run", QUERY, "--no-answer", "--no-reuse")
    assert plain.code == 0, plain.stderr
    assert plain.stderr.startswith(PLANNING)


def test_a_closed_stderr_never_fails_planning(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(broken_blog_plan()), Reply.structured(blog_plan())])
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader of stderr is gone before the CLI starts: every write fails
    process = subprocess.Popen(
        cli_llm.argv("plan", QUERY),
        env=cli_llm.env,
        cwd=cli_llm.tmp,
        stdout=subprocess.PIPE,
        stderr=write_end,
    )
    os.close(write_end)
    try:
        out, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, out
    text = out.decode()
    assert "stored plan_" in text and "2 LLM call(s)" in text
    for noise in ("Traceback", "BrokenPipeError", "error:"):
        assert noise not in text


def test_a_python_plan_prints_each_statement_as_it_is_read(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    """The default format: each step as soon as its statement is complete, then the answer."""
    answer = (
        'author = createAuthor(name="Alice", email="alice@test.com")\n'
        'blog = createBlog(authorId=author["_id"], title="Hello", content="world")\n'
    )
    llm.script([Reply.content(answer).with_(pieces=len(answer) // 3)])
    done = cli_llm("plan", QUERY)
    assert done.code == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == PLANNING
    assert lines[1].startswith('  + createAuthor(name="Alice", email="alice@test.com")  ')
    assert lines[2].startswith('  + createBlog(authorId="{{author._id}}", title="Hello", ')
    assert lines[3].startswith("answered after ") and "2 step(s); 1 LLM call(s)" in lines[3]
