"""A later version of a request never repeats a side effect that already succeeded, and a replan
identical to the plan that failed is not run again (issue 28), through the real CLI."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Cli
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import QUERY, blog_plan, orphan_blog_plan


def _calls_of(cli: Cli, step: str) -> int:
    return sum(1 for call in cli.calls() if call["step"] == step)


def _step(result: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(step for step in result["steps"] if step["id"] == step_id)


def test_a_later_version_reuses_a_succeeded_side_effect_instead_of_calling_it_again(
    cli: Cli,
) -> None:
    first = {
        "steps": [
            {"id": "made", "tool": "echo", "parameters": {"value": {"user": "Grace"}}},
            {"id": "broke", "tool": "business_error", "parameters": {"message": "no mail"}},
        ]
    }
    ran = cli("run", "--file", cli.write_plan(first, "v1.json"), "--json")
    assert ran.code == 1, ran.stderr  # partial: the user was made, the mail failed
    v1 = ran.json()
    assert _calls_of(cli, "made") == 1

    second = {
        "steps": [
            {"id": "made", "tool": "echo", "parameters": {"value": {"user": "Grace"}}},
            {"id": "other", "tool": "echo", "parameters": {"value": {"user": "Ada"}}},
            {"id": "mail", "tool": "echo", "parameters": {"value": "{{made.user}}"}},
        ]
    }
    again = cli(
        "run",
        "--file",
        cli.write_plan(second, "v2.json"),
        "--request-id",
        v1["requestId"],
        "--json",
    )

    assert again.code == 0, again.stderr
    v2 = again.json()
    assert _calls_of(cli, "made") == 1  # Grace was not made twice
    assert _step(v2, "made")["reusedFrom"] == f"{v1['planId']}:made"
    assert _step(v2, "made")["output"] == {"user": "Grace"}
    assert v2["outputs"]["mail"] == "Grace"  # its output feeds the steps after it
    assert _calls_of(cli, "other") == 1  # other arguments: a new call
    assert "reusedFrom" not in _step(v2, "other")
    shown = cli("show", v2["planId"])
    assert f"reused from {v1['planId']}:made" in shown.stdout

    # a plan of another request is not a version of this one: it calls the tool
    other_request = cli("run", "--file", cli.write_plan(second, "v3.json"), "--json")
    assert other_request.code == 0, other_request.stderr
    assert _calls_of(cli, "made") == 2


def test_read_only_tools_are_not_reused_across_versions(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "look", "tool": "lookup", "parameters": {"key": "k"}},
            {"id": "broke", "tool": "business_error", "parameters": {"message": "no"}},
        ]
    }
    ran = cli("run", "--file", cli.write_plan(plan), "--json", "--no-cache")
    request_id = ran.json()["requestId"]
    again = cli(
        "run", "--file", cli.write_plan(plan), "--request-id", request_id, "--json", "--no-cache"
    )
    assert again.code == 1, again.stderr
    assert _calls_of(cli, "look") == 2  # read-only: exempt (the result cache is its reuse)
    assert "reusedFrom" not in _step(again.json(), "look")


def _answer(text: str) -> Reply:
    return Reply.structured({"action": "answer", "answer": text})


def _replan(reason: str) -> Reply:
    return Reply.structured({"action": "replan", "reason": reason})


def _failing() -> Reply:
    """A plan that runs and fails (its author does not exist)."""
    return Reply.structured(orphan_blog_plan("alice"))


def _declining(reason: str) -> Reply:
    return Reply.structured({"reasoning": reason, "steps": [], "outputSteps": []})


def _run_replanning(cli_llm: Cli, llm: FakeOpenAIServer, *replanned: Reply) -> Any:
    """``toolplan run QUERY --json`` where the first plan fails and the model asks for a
    replan; ``replanned`` are the model's answers after that. The finished command."""
    llm.script([_failing(), _replan("author alice does not exist"), *replanned])
    return cli_llm("run", QUERY, "--json")


def test_an_identical_replan_is_not_run_and_the_planner_is_told_so_once(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    done = _run_replanning(
        cli_llm,
        llm,
        _failing(),  # the same calls again
        _failing(),  # and again, after being told
    )

    assert done.code == 1, done.stderr
    data = done.json()
    assert [p["status"] for p in data["plans"]] == ["failed", "identical", "identical"]
    first = data["plans"][0]["planId"]
    assert data["planId"] == first  # the outcome is the last version that ran
    assert "same as" in data["answer"] and first in data["answer"]
    assert len(llm.requests) == 4 and data["llmCalls"] == 4  # no respond call after the stop
    told = "\n".join(str(m["content"]) for m in llm.requests[3]["messages"])
    assert f"exactly the plan {first}" in told and "will not be run again" in told
    shown = cli_llm("show", data["requestId"], "--json").json()
    assert [p["execution"] is None for p in shown["plans"]] == [False, True, True]
    assert shown["answer"] == data["answer"]  # stored like a respond call's answer


def test_an_identical_replan_then_a_different_one_runs_the_different_one(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    done = _run_replanning(
        cli_llm,
        llm,
        _failing(),
        Reply.structured(blog_plan()),
        _answer("Alice now has a blog, Hello."),
    )

    assert done.code == 0, done.stderr
    data = done.json()
    assert [p["status"] for p in data["plans"]] == ["failed", "identical", "succeeded"]
    assert data["answer"] == "Alice now has a blog, Hello." and data["llmCalls"] == 5


def test_a_replan_that_finds_no_tool_ends_the_loop_with_the_reason(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    reason = "no tool creates the author alice's blog needs"
    done = _run_replanning(cli_llm, llm, _declining(reason))

    assert done.code == 1, done.stderr  # the outcome is the version that ran, and failed
    data = done.json()
    assert [p["status"] for p in data["plans"]] == ["failed"]
    assert data["planId"] == data["plans"][0]["planId"]
    assert "found no tool" in data["answer"] and reason in data["answer"]
    assert len(llm.requests) == 3 and data["llmCalls"] == 3
    assert cli_llm("show", data["requestId"], "--json").json()["answer"] == data["answer"]


def test_an_identical_replan_then_a_declined_one_ends_the_loop_with_the_reason(
    cli_llm: Cli, llm: FakeOpenAIServer
) -> None:
    done = _run_replanning(
        cli_llm,
        llm,
        _failing(),  # the same calls again: told so, asked once more
        _declining("nothing fits"),
    )

    assert done.code == 1, done.stderr
    data = done.json()
    assert [p["status"] for p in data["plans"]] == ["failed", "identical"]
    assert "found no tool" in data["answer"] and "nothing fits" in data["answer"]
    assert len(llm.requests) == 4 and data["llmCalls"] == 4
    assert cli_llm("show", data["requestId"], "--json").json()["answer"] == data["answer"]
