"""``toolplan show PLAN_ID --graph mermaid|dot``: the stored DAG with each step's state."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.e2e.conftest import Cli

pytestmark = pytest.mark.e2e

PLAN: dict[str, Any] = {
    "steps": [
        {"id": "a", "tool": "echo", "parameters": {"value": 1}},
        {"id": "bad", "tool": "business_error", "parameters": {"message": "no"}},
        {"id": "b", "tool": "echo", "parameters": {"value": "{{a}}"}},
        {"id": "after_bad", "tool": "echo", "parameters": {"value": "{{bad}}"}},
    ]
}


def test_show_graph_prints_the_dag_with_each_steps_state(cli: Cli) -> None:
    done = cli("run", "--file", cli.write_plan(PLAN), "--json")
    assert done.code == 1, done.stderr
    plan_id = done.json()["planId"]

    mermaid = cli("show", plan_id, "--graph", "mermaid")
    assert mermaid.code == 0, mermaid.stderr
    lines = mermaid.stdout.splitlines()
    assert lines[0] == "flowchart TD"
    nodes = dict(
        (m.group(2).split(" · ")[0], (m.group(1), m.group(3)))
        for line in lines
        if (m := re.match(r'^    (n\d+)\["(.*)"\]:::(\w+)$', line))
    )
    assert {step: state for step, (_, state) in nodes.items()} == {
        "a": "succeeded",
        "b": "succeeded",
        "bad": "failed",
        "after_bad": "skipped",
    }
    edges = {
        (m.group(1), m.group(3))
        for line in lines
        if (m := re.match(r"^  (n\d+) (-->|==>) (n\d+)$", line))
    }
    assert edges == {
        (nodes["a"][0], nodes["b"][0]),
        (nodes["bad"][0], nodes["after_bad"][0]),
    }

    dot = cli("show", plan_id, "--graph", "dot")
    assert dot.code == 0, dot.stderr
    assert dot.stdout.startswith("digraph plan {")
    assert re.search(r'label="bad · business_error · failed".*class="failed"', dot.stdout)
    assert len(re.findall(r"^  n\d+ -> n\d+", dot.stdout, re.MULTILINE)) == 2

    as_json = cli("show", plan_id, "--graph", "mermaid", "--json").json()
    assert as_json == {"planId": plan_id, "format": "mermaid", "graph": mermaid.stdout}


def test_show_graph_of_a_plan_not_run_and_bad_input(cli: Cli) -> None:
    submitted = cli("submit", "--file", cli.write_plan(PLAN), "--json").json()
    drawn = cli("show", submitted["planId"], "--graph", "mermaid")
    assert drawn.code == 0 and drawn.stdout.count("· not run") == 4

    request = cli("show", submitted["requestId"], "--graph", "dot")
    assert request.code == 2 and "is not a plan ID" in request.stderr
    unknown = cli("show", submitted["planId"], "--graph", "svg")
    assert unknown.code == 2
