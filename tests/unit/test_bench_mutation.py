"""The pure parts of the mutation-testing script (bench/mutation.py): applying a mutation,
classifying pytest's exit, the kill rate and its table, and the mutation list itself. The
script's runs are not part of the test suite (they take minutes); see BENCHMARKS.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.mutation import (
    MUTATIONS,
    Mutation,
    Result,
    classify,
    kill_rate,
    mutate,
    planted,
    table,
    without,
)

REPO = Path(__file__).resolve().parents[2]


def _mutation(original: str = "a < b", mutated: str = "a <= b") -> Mutation:
    return Mutation("m", "x.py", original, mutated, "off by one", ("tests/t.py", "tests/u.py"))


def test_a_mutation_applies_only_where_its_snippet_is_found_exactly_once() -> None:
    assert mutate("if a < b:\n    pass\n", _mutation()) == "if a <= b:\n    pass\n"
    assert mutate("if a > b:\n", _mutation()) is None  # the code changed: not applicable
    assert mutate("a < b or a < b", _mutation()) is None  # ambiguous: not applicable either


@pytest.mark.parametrize(
    ("code", "timed_out", "status"),
    [
        (1, False, "killed"),
        (0, False, "survived"),
        (None, True, "timeout"),
        (2, False, "error"),
        (5, False, "error"),
    ],
)
def test_pytest_exit_codes_classify_a_mutation(
    code: int | None, timed_out: bool, status: str
) -> None:
    assert classify(code, timed_out=timed_out) == status


def _result(status: str) -> Result:
    return Result(status, "packages/toolplan/engine/step.py", status, 1.0, "a bug")  # type: ignore[arg-type]


def test_the_kill_rate_counts_timeouts_as_killed_and_ignores_what_did_not_run() -> None:
    results = [_result(s) for s in ("killed", "timeout", "survived", "not-applicable", "error")]
    assert kill_rate(results) == pytest.approx(2 / 3)
    assert kill_rate([_result("not-applicable")]) is None
    shown = table(results)
    assert "| `survived` | engine/step.py | survived |" in shown
    assert shown.endswith(
        "kill rate 67% (1 killed, 1 timeout, 1 survived, 1 not-applicable, 1 error)"
    )


def test_test_files_can_be_left_out_of_a_covering_set() -> None:
    assert without(_mutation(), ["tests/t.py"]).tests == ("tests/u.py",)


def test_a_planted_mutation_is_restored_even_when_the_block_raises(tmp_path: Path) -> None:
    module = tmp_path / "x.py"
    module.write_text("if a < b:\n    pass\n")
    with pytest.raises(KeyboardInterrupt), planted(tmp_path, _mutation()) as applied:
        assert applied and "a <= b" in module.read_text()
        raise KeyboardInterrupt
    assert module.read_text() == "if a < b:\n    pass\n"
    with planted(tmp_path, _mutation(original="missing")) as applied:
        assert not applied
    assert module.read_text() == "if a < b:\n    pass\n"


def test_the_mutation_list_is_well_formed() -> None:
    """Unique names; each changes its snippet, names a module and test files that exist, and
    (where it still applies: the code may have moved on) leaves a module that compiles."""
    assert len({m.name for m in MUTATIONS}) == len(MUTATIONS) >= 25
    for m in MUTATIONS:
        assert m.original != m.mutated, m.name
        assert (REPO / m.path).is_file(), m.name
        assert m.tests and all((REPO / t).is_file() for t in m.tests), m.name
        changed = mutate((REPO / m.path).read_text(encoding="utf-8"), m)
        if changed is not None:
            compile(changed, m.path, "exec")
