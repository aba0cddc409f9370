"""The respond node's input: bounded by a token budget, truncation visible to the model; its
decision read leniently."""

from __future__ import annotations

from typing import Any

from toolplan._tokens import count_tokens
from toolplan.agent.budget import truncate_tokens
from toolplan.agent.respond import read_decision, replan_context, respond_messages, unanswered
from toolplan.engine.result import ExecutionResult
from toolplan.plan_format.plan import parse_plan
from toolplan.store.protocol import StepRecord


def result(outputs: dict[str, Any], steps: list[StepRecord], status: str) -> ExecutionResult:
    plan = parse_plan(
        {"steps": [{"id": s.step_id, "tool": s.tool, "parameters": {}} for s in steps]}
    )
    return ExecutionResult("req_x", "plan_x", status, steps, outputs, plan)


def test_a_large_output_is_cut_to_the_budget_and_the_model_is_told() -> None:
    big = {"rows": [{"id": i, "text": "lorem ipsum dolor " * 5} for i in range(2000)]}
    steps = [StepRecord("rows", "list_rows", "succeeded", output=big)]
    messages, cut = respond_messages(
        "List the rows", result({"rows": big}, steps, "succeeded"), replan_allowed=True, budget=500
    )
    text = str(messages[1].content)
    assert cut and "[truncated: about" in text and "truncated to fit 500 tokens" in text
    assert count_tokens(text) < 800  # the budget plus the fixed template


def test_small_results_are_shown_whole() -> None:
    steps = [
        StepRecord("a", "get", "succeeded", output={"x": 1}),
        StepRecord("b", "put", "failed", error="tool put failed: no such id"),
        StepRecord("c", "post", "skipped", error="skipped: b failed"),
    ]
    messages, cut = respond_messages(
        "q", result({"c": None}, steps, "partial"), replan_allowed=False
    )
    text = str(messages[1].content)
    assert not cut and "truncated" not in text
    assert "- b: put failed: tool put failed: no such id" in text
    assert "- c: post skipped: skipped: b failed" in text
    assert "Replanning allowed: no" in text


def test_truncate_tokens_keeps_short_text() -> None:
    assert truncate_tokens("hello", 10) == ("hello", False)
    cut, was_cut = truncate_tokens("word " * 1000, 20)
    assert was_cut and count_tokens(cut) < 40


def test_decisions_are_read_leniently() -> None:
    assert read_decision({"action": "answer", "answer": "42"}) == ("answer", "42")
    assert read_decision('{"action": "replan", "reason": "bad id"}') == ("replan", "bad id")
    assert read_decision("just prose") == ("answer", "just prose")
    assert read_decision({"action": "answer", "reason": "only a reason"}) == (
        "answer",
        "only a reason",
    )


def test_the_unanswered_text_names_the_failures() -> None:
    steps = [StepRecord("b", "put", "failed", error="no such id")]
    text = unanswered(result({}, steps, "failed"), "the id does not exist")
    assert "could not be completed (failed): the id does not exist" in text
    assert "- b: put failed: no such id" in text


def test_the_replan_message_shows_paths_and_failing_arguments_and_ends_with_the_request() -> None:
    steps = [
        StepRecord("author", "createAuthor", "succeeded", output={"_id": "a1", "name": "Carol"}),
        StepRecord(
            "lookup",
            "getAuthor",
            "failed",
            resolved_parameters={"authorId": "Carol"},
            error="author 'Carol' does not exist",
        ),
    ]
    plan = {"steps": [{"id": "author"}, {"id": "lookup"}], "outputSteps": ["lookup"]}
    text = replan_context(
        "Create author Carol and get her back",
        plan,
        result({}, steps, "partial"),
        "look her up by her _id",
    )
    assert "{{author._id}}, {{author.name}}" in text
    assert 'getAuthor) failed with arguments {"authorId": "Carol"}' in text
    assert "look her up by her _id" in text
    # the request comes last: a small model acts on the last thing it reads
    assert text.rstrip().endswith("Create author Carol and get her back")
