"""The agent loop end to end: ``toolplan run "QUERY"`` plans, executes and answers through the
real CLI and the real ChatOpenAI client, against the scripted OpenAI-compatible server. The
server records every request, so the tests see what the respond node and a replan send."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, orphan_blog_plan


def answer(text: str, usage: tuple[int, int] = (30, 8)) -> Reply:
    return Reply.structured({"action": "answer", "answer": text}, usage=usage)


def replan(reason: str) -> Reply:
    return Reply.structured({"action": "replan", "reason": reason})


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "user")


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "system")


def test_run_answers_last_with_two_llm_calls(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script(
        [Reply.structured(blog_plan(), usage=(100, 20)), answer("Alice now has a blog, Hello.")]
    )
    done = cli_llm("run", QUERY)
    assert done.code == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "answer: Alice now has a blog, Hello."
    assert "2 LLM call(s), 130 input / 28 output tokens" in done.stdout
    respond = llm.requests[1]
    assert respond["tool_choice"]["function"]["name"] == "Respond"
    assert "last step of a plan-then-execute agent" in system_text(respond)
    shown_to_model = user_text(respond)
    assert QUERY in shown_to_model and '"title": "Hello"' in shown_to_model
    assert "Failed and skipped steps:\n(none)" in shown_to_model

    request_id = done.stdout.split("toolplan show ", 1)[1].split()[0]
    shown = cli_llm("show", request_id)
    assert shown.code == 0 and "answer: Alice now has a blog, Hello." in shown.stdout
    data = cli_llm("show", request_id, "--json").json()
    assert data["answer"] == "Alice now has a blog, Hello."
    assert data["answers"][0]["llmCalls"] == 2


def test_run_json_has_answer_plans_llm_calls_and_usage(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan(), usage=(100, 20)), answer("done", usage=(40, 3))])
    done = cli_llm("run", QUERY, "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert data["answer"] == "done" and data["status"] == "succeeded"
    assert data["llmCalls"] == 2
    assert data["usage"] == {"inputTokens": 140, "outputTokens": 23}
    (version,) = data["plans"]
    assert version["planId"] == data["planId"] and version["status"] == "succeeded"
    assert version["replanOf"] is None and version["planStatus"] == "planned"
    assert data["outputs"]["blog"]["title"] == "Hello"
    # the plan's estimate, as run --no-answer --json and show print it
    shown = cli_llm("show", data["planId"], "--json").json()
    assert set(data["estimate"]) == {"durationMs", "costUsd", "basis"}
    assert data["estimate"] == shown["estimate"]


def test_a_failed_step_is_replanned_as_a_second_version(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script(
        [
            Reply.structured(orphan_blog_plan("alice")),
            replan("author alice does not exist; create the author first, then the blog"),
            Reply.structured(blog_plan()),
            answer("Alice now has a blog, Hello."),
        ]
    )
    done = cli_llm("run", QUERY, "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert data["answer"] == "Alice now has a blog, Hello." and data["llmCalls"] == 4
    first, second = data["plans"]
    assert first["status"] == "failed" and second["status"] == "succeeded"
    # the estimate is the last version's (two steps in a chain, not the first plan's one)
    estimates = [cli_llm("show", p["planId"], "--json").json()["estimate"] for p in data["plans"]]
    assert data["estimate"] == estimates[1] != estimates[0]
    assert second["replanOf"] == first["planId"] and data["planId"] == second["planId"]
    assert data["outputs"]["blog"]["title"] == "Hello"

    # the first respond call saw the step's error; the replanning call saw the previous plan,
    # what its step did, and the reason
    assert "author 'alice' does not exist" in user_text(llm.requests[1])
    replanning = user_text(llm.requests[2])
    assert QUERY in replanning and '"authorId": "alice"' in replanning
    assert "create the author first, then the blog" in replanning and "failed" in replanning

    shown = cli_llm("show", data["requestId"], "--json").json()
    assert [p["planId"] for p in shown["plans"]] == [first["planId"], second["planId"]]
    assert shown["plans"][1]["meta"]["replanOf"] == first["planId"]
    assert shown["plans"][0]["execution"]["status"] == "failed"
    text = cli_llm("show", data["requestId"]).stdout
    assert f"replan of {first['planId']}" in text and "answer: Alice now has a blog, Hello." in text

    # the same query later reuses the version that worked, not the one that failed
    llm.script([answer("Alice has a blog.")])
    again = cli_llm("run", QUERY, "--json")
    assert again.code == 0, again.stderr
    assert again.json()["reusedFrom"] == second["planId"]


def test_replans_are_bounded_and_the_answer_says_what_failed(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script(
        [
            Reply.structured(orphan_blog_plan("alice")),
            replan("no author alice"),
            Reply.structured(orphan_blog_plan("Alice")),
            replan("no author Alice either"),  # not allowed any more
        ]
    )
    done = cli_llm("run", QUERY)
    assert done.code == 1, done.stderr  # the last plan failed, even with an answer
    last = done.stdout.strip().splitlines()
    answer_text = done.stdout.split("answer: ", 1)[1]
    assert "could not be completed (failed)" in answer_text
    assert "no author Alice either" in answer_text
    assert "author 'Alice' does not exist" in answer_text
    assert last[-1].startswith("- blog: createBlog failed")
    assert len(llm.requests) == 4 and llm.remaining == 0
    assert "Replanning allowed: yes" in user_text(llm.requests[1])
    assert "Replanning allowed: no" in user_text(llm.requests[3])


def test_max_replans_zero_answers_after_the_first_plan(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script(
        [
            Reply.structured(orphan_blog_plan("alice")),
            answer("There is no author alice, so no blog was created."),
        ]
    )
    done = cli_llm("run", QUERY, "--max-replans", "0", "--json")
    assert done.code == 1
    data = done.json()
    assert data["answer"].startswith("There is no author alice")
    assert len(data["plans"]) == 1 and data["status"] == "failed"


def test_respond_model_down_exits_3_and_keeps_the_executed_steps(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script([Reply.structured(blog_plan())])  # nothing left for the respond call: 500
    done = cli_llm("run", QUERY)
    assert done.code == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "no scripted reply left" in done.stderr
    shown = cli_llm("show", _plan_id(cli_llm), "--json").json()
    assert shown["execution"]["status"] == "succeeded"
    assert [s["status"] for s in shown["execution"]["steps"]] == ["succeeded", "succeeded"]


def test_an_answer_cut_off_at_the_output_limit_exits_3_and_says_so(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script(
        [Reply.structured(blog_plan()), answer("Alice now has").with_(finish_reason="length")]
    )
    done = cli_llm("run", QUERY, "--json")
    assert done.code == 3, done.stdout + done.stderr
    data = done.json()
    assert "before finishing the answer" in data["error"] and "steps are stored" in data["error"]
    assert data["llmCalls"] == 2  # the usage so far, as for a cut-off plan
    shown = cli_llm("show", _plan_id(cli_llm), "--json").json()
    assert shown["execution"]["status"] == "succeeded"


def _plan_id(cli: Cli) -> str:
    import sqlite3

    with sqlite3.connect(cli.tmp / "toolplan.db") as db:
        (plan_id,) = db.execute("SELECT plan_id FROM tp_plans").fetchone()
    return str(plan_id)


def test_no_answer_keeps_the_plain_run(cli_llm: Cli, llm: FakeOpenAIServer) -> None:
    llm.script([Reply.structured(blog_plan())])
    done = cli_llm("run", QUERY, "--no-answer", "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert "answer" not in data and data["llmCalls"] == 1 and len(llm.requests) == 1


async def test_python_api_answer_query(
    llm: FakeOpenAIServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolplan

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    llm.script(
        [
            Reply.structured(orphan_blog_plan("alice")),
            replan("create the author first"),
            Reply.structured(blog_plan()),
            answer("Done."),
        ]
    )
    outcome = await toolplan.answer_query(
        QUERY, tools=["blog"], store=f"sqlite:///{tmp_path / 'api.db'}"
    )
    assert outcome.answer == "Done." and outcome.exit_code == 0 and outcome.llm_calls == 4
    assert [p["status"] for p in outcome.plans] == ["failed", "succeeded"]
    assert outcome.plans[1]["replanOf"] == outcome.plans[0]["planId"]


async def test_python_api_create_plan_is_reused_by_answer_query(
    llm: FakeOpenAIServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan made by ``create_plan`` (which itself never reuses) and executed successfully is
    reused by ``answer_query``: only the answer costs a call."""
    import toolplan

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
    monkeypatch.delenv("TOOLPLAN_MODEL", raising=False)
    monkeypatch.delenv("TOOLPLAN_PLAN_REUSE", raising=False)
    store = f"sqlite:///{tmp_path / 'api.db'}"
    llm.script([Reply.structured(blog_plan())])
    planned = await toolplan.create_plan(QUERY, tools=["blog"], store=store)
    result = await toolplan.execute_plan(planned.ref.plan_id, tools=["blog"], store=store)
    assert result.status == "succeeded"

    llm.script([answer("Alice has a blog.")])
    outcome = await toolplan.answer_query(QUERY, tools=["blog"], store=store)
    assert outcome.answer == "Alice has a blog." and outcome.llm_calls == 1
    assert outcome.reused_from == planned.ref.plan_id
    assert len(llm.requests) == 2


def test_reuse_under_the_agent_loop_plans_nothing_and_still_answers(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    llm.script([Reply.structured(blog_plan()), answer("Alice now has a blog, Hello.")])
    first = cli_llm("run", QUERY, "--json")
    assert first.code == 0, first.stderr

    llm.script([answer("Again: Alice has a blog.", usage=(25, 6))])
    again = cli_llm("run", QUERY, "--json")
    assert again.code == 0, again.stderr
    data = again.json()
    assert [r["tool_choice"]["function"]["name"] for r in llm.requests[2:]] == ["Respond"]
    assert data["reusedFrom"] == first.json()["planId"] and data["reuse"] == "exact"
    assert data["llmCalls"] == 1 and data["usage"] == {"inputTokens": 25, "outputTokens": 6}
    (version,) = data["plans"]
    assert version["reusedFrom"] == first.json()["planId"] and version["llmCalls"] == 0
    assert (
        data["answer"] == "Again: Alice has a blog." and data["outputs"]["blog"]["title"] == "Hello"
    )

    human = cli_llm("run", QUERY, "--no-reuse", "--max-replans", "0")
    assert human.code == 3  # planned anew: the server has no reply left for it
    llm.script([answer("Reused once more.")])
    shown = cli_llm("run", QUERY)
    assert shown.code == 0 and "0 LLM calls" in shown.stderr
    assert "reused from" in shown.stdout and shown.stdout.rstrip().endswith("Reused once more.")
