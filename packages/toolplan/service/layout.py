"""Where each step of a plan's DAG sits in a drawing: boxes in rows by layer, edges as curves.

The plan page (``/ui/plans/{planId}``) draws the DAG as inline SVG from this layout, so the
browser only paints boxes at given places and needs no layout library. Layers come from the
stored analysis (:class:`~toolplan.validation.dag.Analysis`): layer ``i`` is row ``i``, top to
bottom. Within a row, steps are ordered by the mean position of the steps they depend on (one
barycenter pass, layer by layer), which untangles most crossings of a planner's small DAGs, and
each row is centred under the widest one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

__all__ = ["Box", "Edge", "Layout", "layout"]

NODE_WIDTH = 210.0
NODE_HEIGHT = 88.0
GAP_X = 28.0
GAP_Y = 52.0
MARGIN = 16.0


@dataclass(frozen=True)
class Box:
    """One step's box: top-left corner, size and row (its layer)."""

    x: float
    y: float
    width: float
    height: float
    layer: int

    def to_json(self) -> dict[str, float | int]:
        return {"x": self.x, "y": self.y, "width": self.width, "height": self.height}


@dataclass(frozen=True)
class Edge:
    """A dependency ``source → target`` as an SVG path; ``critical`` on the critical path;
    ``order``: an order edge, with the resources it keeps the order on (``None``: data)."""

    source: str
    target: str
    path: str
    critical: bool
    order: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "path": self.path,
            "critical": self.critical,
            "order": list(self.order) if self.order is not None else None,
        }


@dataclass(frozen=True)
class Layout:
    """A drawing of ``width`` by ``height`` with a box per step and an edge per dependency."""

    width: float
    height: float
    boxes: dict[str, Box]
    edges: list[Edge]

    def to_json(self) -> dict[str, Any]:
        """``{"width", "height", "nodes": {step: {x, y, width, height}}, "edges": [...]}``."""
        return {
            "width": self.width,
            "height": self.height,
            "nodes": {step: box.to_json() for step, box in self.boxes.items()},
            "edges": [edge.to_json() for edge in self.edges],
        }


def _ordered_rows(
    layers: Sequence[Sequence[str]], dependencies: Mapping[str, Sequence[str]]
) -> list[list[str]]:
    """Each layer's steps ordered by the mean slot of their dependencies in the rows above
    (steps without one keep their analysis order, after those with one)."""
    slot: dict[str, float] = {}
    rows: list[list[str]] = []
    for layer in layers:
        keyed = []
        for index, step in enumerate(layer):
            placed = [slot[dep] for dep in dependencies.get(step, ()) if dep in slot]
            centre = sum(placed) / len(placed) if placed else float("inf")
            keyed.append((centre, index, step))
        row = [step for _, _, step in sorted(keyed)]
        for position, step in enumerate(row):
            slot[step] = position - (len(row) - 1) / 2  # centred, comparable across rows
        rows.append(row)
    return rows


def layout(
    layers: Sequence[Sequence[str]],
    dependencies: Mapping[str, Sequence[str]],
    critical_path: Sequence[str] = (),
    order_edges: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> Layout:
    """The drawing of a DAG given by its ``layers`` (each step once, dependencies in earlier
    layers), ``dependencies`` and ``order_edges`` (step → earlier step → resources); edges
    between consecutive steps of ``critical_path`` are marked critical. Dependencies on steps
    outside the layers are ignored."""
    ordered = order_edges or {}
    waits = {
        step: [*dependencies.get(step, ()), *ordered.get(step, {})]
        for step in {*dependencies, *ordered}
    }
    rows = _ordered_rows(layers, waits)
    widest = max((len(row) for row in rows), default=0)
    full = widest * NODE_WIDTH + max(0, widest - 1) * GAP_X
    boxes: dict[str, Box] = {}
    for index, row in enumerate(rows):
        used = len(row) * NODE_WIDTH + max(0, len(row) - 1) * GAP_X
        left = MARGIN + (full - used) / 2
        top = MARGIN + index * (NODE_HEIGHT + GAP_Y)
        for position, step in enumerate(row):
            x = left + position * (NODE_WIDTH + GAP_X)
            boxes[step] = Box(x, top, NODE_WIDTH, NODE_HEIGHT, index)
    critical = set(pairwise(critical_path))
    edges = [
        Edge(dep, step, _curve(boxes[dep], boxes[step]), (dep, step) in critical)
        for row in rows
        for step in row
        for dep in dependencies.get(step, ())
        if dep in boxes
    ]
    edges += [
        Edge(dep, step, _curve(boxes[dep], boxes[step]), (dep, step) in critical, tuple(on))
        for row in rows
        for step in row
        for dep, on in ordered.get(step, {}).items()
        if dep in boxes
    ]
    height = MARGIN * 2 + len(rows) * NODE_HEIGHT + max(0, len(rows) - 1) * GAP_Y
    return Layout(MARGIN * 2 + full, height if rows else 0.0, boxes, edges)


def _curve(source: Box, target: Box) -> str:
    """A cubic curve from the bottom centre of ``source`` to the top centre of ``target``."""
    x1, y1 = source.x + source.width / 2, source.y + source.height
    x2, y2 = target.x + target.width / 2, target.y
    bend = max(GAP_Y / 2, (y2 - y1) / 2)
    return f"M{x1:g},{y1:g} C{x1:g},{y1 + bend:g} {x2:g},{y2 - bend:g} {x2:g},{y2:g}"
