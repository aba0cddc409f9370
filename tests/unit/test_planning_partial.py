"""The steps of a plan still being written (issue 28, no silence): :class:`StepScanner` returns
each step's JSON text as soon as its object closes, however the answer arrives in pieces and
whatever is around the plan."""

from __future__ import annotations

import json

import pytest

from toolplan.planning.partial import StepScanner

PLAN = {
    "reasoning": 'needs "quotes", {braces} and [brackets]',
    "steps": [
        {"id": "a", "tool": "search", "parameters": {"q": 'x } ] \\" y', "steps": [{"no": 1}]}},
        {"id": "b", "tool": "fetch", "parameters": '{"url": "{{a.url}}"}', "dependsOn": ["a"]},
    ],
    "outputSteps": ["b"],
}


def scan(text: str, size: int) -> list[tuple[int, str]]:
    """(characters fed so far, step) for each step found, feeding ``size`` characters at a time."""
    scanner, found = StepScanner(), []
    for start in range(0, len(text), size):
        found += [(start + size, step) for step in scanner.feed(text[start : start + size])]
    return found


@pytest.mark.parametrize("size", [1, 7, 10_000])
def test_each_step_is_found_when_its_object_closes(size: int) -> None:
    text = json.dumps(PLAN)
    found = scan(text, size)
    assert [json.loads(step) for _, step in found] == PLAN["steps"]
    if size == 1:  # the first step is returned with its closing brace, not at the end
        assert found[0][0] == text.index(', {"id": "b"')  # just after its "}"
        assert found[0][0] < found[1][0] < len(text)


@pytest.mark.parametrize(
    "wrap",
    [
        "Here is the plan:\n```json\nPLAN\n```",
        '{"name": "LLMPlan", "arguments": PLAN}',
        "<tool_call>PLAN</tool_call>",
    ],
    ids=["prose-and-fence", "wrapped", "tool-call-tags"],
)
def test_the_plan_is_found_inside_what_models_put_around_it(wrap: str) -> None:
    text = wrap.replace("PLAN", json.dumps(PLAN))
    assert [json.loads(step) for _, step in scan(text, 5)] == PLAN["steps"]


def test_a_bare_template_does_not_lose_the_step() -> None:
    text = '{"steps": [{"id": "b", "parameters": {"data": {{a.out}}}}, {"id": "c"}]}'
    assert [step for _, step in scan(text, 3)] == [
        '{"id": "b", "parameters": {"data": {{a.out}}}}',
        '{"id": "c"}',
    ]


def test_only_the_plans_steps_and_nothing_after_them() -> None:
    text = '{"other": [{"x": 1}], "steps": [{"id": "a"}], "more": {"steps": [{"id": "z"}]}}'
    assert [step for _, step in scan(text, 4)] == ['{"id": "a"}']


def test_an_unfinished_step_is_not_returned() -> None:
    scanner = StepScanner()
    assert scanner.feed('{"steps": [{"id": "a"}, {"id": "b", "tool": "x') == ['{"id": "a"}']
    assert scanner.feed('"}') == ['{"id": "b", "tool": "x"}']
