"""The end of an answer that repeats itself (toolplan.planning.repetition)."""

from __future__ import annotations

import json

from toolplan.planning.repetition import MIN_REPEATS, MIN_SPAN, repeating_tail

# how Qwen2.5-Coder-1.5B's answer to BFCL's live_simple_147-95-4 went on, escaped as streamed
LOOP = ' /FI \\"IMAGENAME ne opera-stable-dev\\" /FI \\"IMAGENAME ne opera-beta-stable-dev\\"'
START = (
    '{"reasoning": "Find the PID first.", "steps": [{"id": "pid", '
    '"tool": "cmd_controller_execute", "parameters": {"command": '
    '"tasklist /FI \\"IMAGENAME eq timer.exe\\"'
)


def test_a_string_written_in_a_loop_is_found() -> None:
    text = START + LOOP * 20
    found = repeating_tail(text)
    assert found is not None
    assert len(found.unit) == len(LOOP) and found.unit in LOOP * 2
    assert found.repeats >= 20 and found.span >= 20 * len(LOOP)


def test_the_loop_is_found_once_it_has_come_the_repeats_needed() -> None:
    needed = max(MIN_REPEATS, -(-MIN_SPAN // len(LOOP)))  # repeats to cover MIN_SPAN
    assert repeating_tail(START + LOOP * (needed - 1)) is None
    assert repeating_tail(START + LOOP * needed) is not None


def test_whitespace_without_end_is_found() -> None:
    found = repeating_tail('{"reasoning": "r",' + "\n" * MIN_SPAN)
    assert found is not None and found.unit == "\n"
    assert repeating_tail('{"reasoning": "r",' + "\n" * (MIN_SPAN - 1)) is None


def test_the_shortest_repeating_stretch_is_the_one_named() -> None:
    found = repeating_tail("xyz" + "ab" * 300)
    assert found is not None and found.unit == "ab" and found.span == 600


def test_a_short_or_rare_repeat_is_not_a_loop() -> None:
    assert repeating_tail("ab" * 100) is None  # 200 characters: under MIN_SPAN
    unit = "".join(chr(65 + n % 26) for n in range(100))
    assert repeating_tail(unit * (MIN_REPEATS - 1)) is None  # 700 characters, 7 repeats


def test_a_loop_that_ended_is_not_the_end_of_the_text() -> None:
    assert repeating_tail(START + LOOP * 20 + '", "unit": "seconds"}}]}') is None


def test_a_long_plan_of_similar_steps_is_not_a_loop() -> None:
    steps = [
        {"id": f"w{n}", "tool": "get_weather", "parameters": {"city": "Paris"}, "dependsOn": []}
        for n in range(50)
    ]
    text = json.dumps({"reasoning": "r", "steps": steps}, indent=2)
    assert all(repeating_tail(text[:end]) is None for end in range(1, len(text) + 1, 7))


def test_a_text_too_short_for_any_loop() -> None:
    assert repeating_tail("") is None and repeating_tail("{") is None
