"""The DAG as Mermaid and DOT text: parsed back line by line, every node with its state, every
dependency an edge, each layer a group; labels that would break the syntax are escaped."""

from __future__ import annotations

import re
from typing import Any

import pytest

from toolplan.service.diagram import described_diagram, diagram

ANALYSIS: dict[str, Any] = {
    "layers": [["a", 'say "hi"'], ["b"], ["d"]],
    "dependencies": {"a": [], 'say "hi"': [], "b": ["a"], "d": ["b", 'say "hi"']},
    "criticalPath": ["a", "b", "d"],
}
TOOLS = {"a": "echo", 'say "hi"': "business_error", "b": "echo", "d": "echo"}
STATES = {"a": "succeeded", 'say "hi"': "failed", "b": "succeeded", "d": "skipped"}

MERMAID_NODE = re.compile(r'^    (n\d+)\["(.*)"\]:::(\w+)$')
MERMAID_EDGE = re.compile(r"^  (n\d+) (-->|==>) (n\d+)$")
DOT_NODE = re.compile(r'^    (n\d+) \[label="((?:[^"\\]|\\.)*)", .*class="(\w+)"\];$')
DOT_EDGE = re.compile(r"^  (n\d+) -> (n\d+)( \[penwidth=2.5\])?;$")


def _parsed(text: str, node: re.Pattern[str], edge: re.Pattern[str]) -> tuple[dict, set]:
    nodes: dict[str, tuple[str, str]] = {}
    edges: set[tuple[str, str, bool]] = set()
    for line in text.splitlines():
        if found := node.match(line):
            nodes[found.group(1)] = (found.group(2), found.group(3))
        elif found := edge.match(line):
            groups = found.groups()
            if len(groups) == 3 and groups[1] in {"-->", "==>"}:
                edges.add((groups[0], groups[2], groups[1] == "==>"))
            else:
                edges.add((groups[0], groups[1], groups[2] is not None))
    return nodes, edges


def _by_step(nodes: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {label.split(" · ")[0]: name for name, (label, _) in nodes.items()}


@pytest.mark.parametrize(
    ("kind", "node", "edge", "unquote"),
    [
        ("mermaid", MERMAID_NODE, MERMAID_EDGE, lambda s: s.replace("#quot;", '"')),
        ("dot", DOT_NODE, DOT_EDGE, lambda s: s.replace('\\"', '"')),
    ],
)
def test_every_step_is_a_node_with_its_state_and_every_dependency_an_edge(
    kind: str, node: re.Pattern[str], edge: re.Pattern[str], unquote: Any
) -> None:
    text = diagram(ANALYSIS, TOOLS, STATES, kind=kind, title="plan_1 · partial")  # type: ignore[arg-type]
    nodes, edges = _parsed(text, node, edge)
    nodes = {name: (unquote(label), state) for name, (label, state) in nodes.items()}
    names = _by_step(nodes)
    assert set(names) == set(TOOLS)
    for step, name in names.items():
        label, css = nodes[name]
        assert label == f"{step} · {TOOLS[step]} · {STATES[step]}"
        assert css == STATES[step]
    expected = {
        (names[dep], names[step], (dep, step) in {("a", "b"), ("b", "d")})
        for step, deps in ANALYSIS["dependencies"].items()
        for dep in deps
    }
    assert edges == expected
    assert "plan_1 · partial" in text.splitlines()[1]


def test_mermaid_groups_layers_and_defines_each_state_class() -> None:
    text = diagram(ANALYSIS, TOOLS, {"a": "running"})
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert [line for line in lines if line.startswith("  subgraph")] == [
        '  subgraph L0["layer 0"]',
        '  subgraph L1["layer 1"]',
        '  subgraph L2["layer 2"]',
    ]
    assert lines.count("  end") == 3
    assert {line.split()[1] for line in lines if "classDef" in line} == {"running", "not_run"}


def test_dot_is_one_digraph_with_a_cluster_per_layer() -> None:
    text = diagram(ANALYSIS, TOOLS, STATES, kind="dot")
    assert text.startswith("digraph plan {\n") and text.endswith("}\n")
    assert text.count("subgraph cluster_L") == 3
    assert text.count("{") == text.count("}")


def test_a_described_plan_never_executed_is_drawn_not_run() -> None:
    described = {
        "planId": "plan_1732200000_abcdefghij",
        "plan": {"steps": [{"id": "a", "tool": "echo"}, {"id": "b", "tool": "echo"}]},
        "analysis": {"layers": [["a"], ["b"]], "dependencies": {"b": ["a"]}},
        "execution": None,
    }
    text = described_diagram(described)
    assert "a · echo · not run" in text and ":::not_run" in text
    assert "plan_1732200000_abcdefghij · not executed" in text
