"""Labels that tell the truth (issue 52), through the real CLI: what each prints is what happened.

- a ``forEach`` step's tries are per item: two items that ran once each read ``1 each``, not
  ``2`` (the step's count is the calls over all its items, which reads as a retry);
- ``toolplan tools`` shows a description past an abbreviation (``e.g.``) and a ``Literal``
  argument's values, not ``string``;
- ``toolplan show --last`` shows the newest plan, as the README's quick start says (a plan ID
  written into the README cannot exist in a reader's store).

The other labels are tested where their subject is: the plan status of a plan that ran
(test_approval_states.py), the plan page's map panel (test_plan_page.py), the estimate's basis
(tests/unit/test_estimates.py) and a page offset past any list (test_api_items.py).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.e2e.conftest import REPO, Cli
from toolplan.store import open_store

pytestmark = pytest.mark.e2e


def _row(table: str, step: str) -> list[str]:
    """The cells of ``step``'s row in a result table."""
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if cells and cells[0] == step:
            return cells
    raise AssertionError(f"no row for {step!r} in:\n{table}")


def test_a_maps_tries_are_per_item_not_a_sum(cli: Cli) -> None:
    plan: dict[str, Any] = {
        "steps": [
            {"id": "once", "tool": "echo", "forEach": [1, 2], "parameters": {"value": "{{$item}}"}},
            # item 0 succeeds at once, item 1 after one transient failure
            {
                "id": "retried",
                "tool": "flaky",
                "forEach": [0, 1],
                "parameters": {"failures": "{{$item}}"},
            },
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan))
    assert done.code == 0, done.stderr
    once = _row(done.stdout, "once")
    assert once[:4] == ["once", "echo", "succeeded", "1 each"], once
    retried = _row(done.stdout, "retried")
    assert retried[:4] == ["retried", "flaky", "succeeded", "1-2 each"], retried
    # --json keeps the step's own count (its calls over all items) and each item's
    steps = {s["id"]: s for s in cli("show", "--last", "--json").json()["execution"]["steps"]}
    assert steps["once"]["attempts"] == 2
    assert [item["attempts"] for item in steps["retried"]["items"]] == [1, 2]


USER_TOOLS = '''
"""A user's tool with an abbreviation in its description and a Literal argument."""
from typing import Literal


def convert(value: float, unit: Literal["km", "mi"] = "km") -> float:
    """Convert a distance, e.g. 3 km to miles, into the other unit.

    The value is rounded to two places."""
    return round(value * (0.621371 if unit == "km" else 1.609344), 2)


TOOLS = [convert]
'''


def test_tools_shows_a_whole_summary_and_a_literals_values(cli: Cli) -> None:
    modules = cli.tmp / "user_modules"
    modules.mkdir()
    (modules / "tp_convert_tools.py").write_text(USER_TOOLS)
    cli.env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(modules)])
    cli.env["TOOLPLAN_TOOLS"] = "tp_convert_tools"
    cli.env["COLUMNS"] = "220"
    listed = cli("tools")
    assert listed.code == 0, listed.stderr
    assert "Convert a distance, e.g. 3 km to miles, into the other unit." in listed.stdout
    assert "rounded" not in listed.stdout  # the summary is the first paragraph
    one = cli("tools", "convert")
    assert one.code == 0, one.stderr
    [unit] = [line for line in one.stdout.splitlines() if "unit" in line and "│" in line]
    assert '"km" | "mi"' in unit and "string" not in unit, unit


def test_show_last_is_the_newest_plan(cli: Cli) -> None:
    store = open_store(cli.env["TOOLPLAN_STORE"])  # an empty store
    store.close()
    empty = cli("show", "--last")
    assert empty.code == 2 and "no plan is stored yet" in empty.stderr, empty.stderr
    plan = {"steps": [{"id": "a", "tool": "text", "parameters": {"value": "x"}}]}
    first = cli("submit", "--file", cli.write_plan(plan), "--json").json()["planId"]
    second = cli("run", "--file", cli.write_plan(plan), "--json").json()["planId"]
    assert first != second
    shown = cli("show", "--last")
    assert shown.code == 0, shown.stderr
    assert second in shown.stdout and first not in shown.stdout
    drawn = cli("show", "--last", "--graph", "mermaid")
    assert drawn.code == 0 and f"%% {second}" in drawn.stdout, drawn.stdout
    both = cli("show", first, "--last")
    assert both.code == 2 and "not both" in both.stderr
    neither = cli("show")
    assert neither.code == 2 and "--last" in neither.stderr
