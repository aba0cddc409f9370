"""A plan's DAG as text for docs and issues: Mermaid (GitHub renders it) or Graphviz DOT.

Drawn from the stored analysis (layers, dependencies, critical path) with each step's state, so
a picture of a finished or half-run plan needs no re-analysis and no tools. Node identifiers are
``n0``, ``n1``, ... in the analysis order (step IDs are free text); each node's label carries the
step ID, its tool and its state, and its class (Mermaid) or fill (DOT) is the state, so the
picture reads the same in colour, in grey and to a screen reader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, Literal

__all__ = ["STATE_COLOURS", "DiagramFormat", "described_diagram", "diagram"]

DiagramFormat = Literal["mermaid", "dot"]
"""``mermaid``: a ``flowchart TD``; ``dot``: a Graphviz ``digraph``."""

STATE_COLOURS: dict[str, tuple[str, str]] = {
    "pending": ("#f4f4f5", "#71717a"),
    "not run": ("#f4f4f5", "#71717a"),
    "running": ("#dbeafe", "#2563eb"),
    "succeeded": ("#dcfce7", "#16a34a"),
    "failed": ("#fee2e2", "#dc2626"),
    "skipped": ("#fef9c3", "#ca8a04"),
    "cancelled": ("#f3e8ff", "#9333ea"),
    "waiting_approval": ("#ffedd5", "#ea580c"),
    "denied": ("#fee2e2", "#991b1b"),
}
"""Fill and stroke per step state."""


def diagram(
    analysis: Mapping[str, Any],
    tools: Mapping[str, str],
    states: Mapping[str, str],
    *,
    kind: DiagramFormat = "mermaid",
    title: str | None = None,
) -> str:
    """The DAG of ``analysis`` (its ``layers``, ``dependencies``, ``orderEdges`` and
    ``criticalPath``) as ``kind`` text: one node per step labelled ``step · tool · state``
    (``states`` by step ID; a step without one is ``not run``), one edge per dependency
    (critical-path edges thicker), one dashed edge labelled ``order`` per order edge (a step
    kept after another because of their effects), and one group per layer. ``title`` becomes a
    comment on the first line after the header."""
    layers: Sequence[Sequence[str]] = analysis.get("layers") or []
    order = [step for layer in layers for step in layer]
    node = {step: f"n{i}" for i, step in enumerate(order)}
    dependencies: Mapping[str, Sequence[str]] = analysis.get("dependencies") or {}
    ordered: Mapping[str, Mapping[str, Any]] = analysis.get("orderEdges") or {}
    edges = [
        (dep, step, kind)
        for step in order
        for kind, deps in (("data", dependencies.get(step, ())), ("order", ordered.get(step, {})))
        for dep in deps
        if dep in node
    ]
    critical = list(analysis.get("criticalPath") or [])
    critical_edges = set(pairwise(critical))
    state = {step: states.get(step, "not run") for step in order}
    labels = {step: f"{step} · {tools.get(step, '?')} · {state[step]}" for step in order}
    if kind == "mermaid":
        return _mermaid(layers, node, edges, critical_edges, state, labels, title)
    if kind == "dot":
        return _dot(layers, node, edges, critical_edges, state, labels, title)
    raise ValueError(f"unknown diagram format {kind!r}: use mermaid or dot")


def described_diagram(plan: Mapping[str, Any], *, kind: DiagramFormat = "mermaid") -> str:
    """:func:`diagram` of a plan as ``toolplan show --json`` describes it (its ``plan``,
    ``analysis`` and ``execution``): the states are its execution's step statuses."""
    tools = {step["id"]: step["tool"] for step in plan["plan"]["steps"]}
    execution = plan.get("execution")
    states = {step["id"]: step["status"] for step in execution["steps"]} if execution else {}
    status = execution["status"] if execution else "not executed"
    title = f"{plan['planId']} · {status}"
    return diagram(plan["analysis"], tools, states, kind=kind, title=title)


def _css_class(state: str) -> str:
    return state.replace(" ", "_")


def _mermaid(
    layers: Sequence[Sequence[str]],
    node: Mapping[str, str],
    edges: Sequence[tuple[str, str, str]],
    critical: set[tuple[str, str]],
    state: Mapping[str, str],
    labels: Mapping[str, str],
    title: str | None,
) -> str:
    lines = ["flowchart TD"]
    if title:
        lines.append(f"  %% {_one_line(title)}")
    for index, layer in enumerate(layers):
        lines.append(f'  subgraph L{index}["layer {index}"]')
        for step in layer:
            label = labels[step].replace('"', "#quot;")
            lines.append(f'    {node[step]}["{label}"]:::{_css_class(state[step])}')
        lines.append("  end")
    arrows = {"order": "-.->|order|"}  # an order edge is dashed, on the critical path or not
    for dep, step, kind in edges:
        arrow = arrows.get(kind) or ("==>" if (dep, step) in critical else "-->")
        lines.append(f"  {node[dep]} {arrow} {node[step]}")
    for name in sorted({_css_class(s) for s in state.values()}):
        fill, stroke = STATE_COLOURS.get(
            name, STATE_COLOURS.get(name.replace("_", " "), STATE_COLOURS["pending"])
        )
        lines.append(f"  classDef {name} fill:{fill},stroke:{stroke}")
    return "\n".join(lines) + "\n"


def _dot(
    layers: Sequence[Sequence[str]],
    node: Mapping[str, str],
    edges: Sequence[tuple[str, str, str]],
    critical: set[tuple[str, str]],
    state: Mapping[str, str],
    labels: Mapping[str, str],
    title: str | None,
) -> str:
    lines = ["digraph plan {"]
    if title:
        lines.append(f"  // {_one_line(title)}")
    lines.append('  rankdir=TB; node [shape=box, style="rounded,filled", fontname="sans-serif"];')
    for index, layer in enumerate(layers):
        lines.append(f'  subgraph cluster_L{index} {{ label="layer {index}"; style=dashed;')
        for step in layer:
            fill, stroke = STATE_COLOURS.get(state[step], STATE_COLOURS["pending"])
            lines.append(
                f'    {node[step]} [label="{_dot_text(labels[step])}", '
                f'fillcolor="{fill}", color="{stroke}", class="{_css_class(state[step])}"];'
            )
        lines.append("  }")
    for dep, step, kind in edges:
        style = []
        if kind == "order":
            style.append('style=dashed, label="order"')
        if (dep, step) in critical:
            style.append("penwidth=2.5")
        attributes = f" [{', '.join(style)}]" if style else ""
        lines.append(f"  {node[dep]} -> {node[step]}{attributes};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def _one_line(text: str) -> str:
    return " ".join(text.split())
