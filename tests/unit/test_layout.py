"""Where the plan page draws each step (toolplan.service.layout): rows by layer, crossings
untangled by the dependencies' positions, critical edges marked."""

from __future__ import annotations

from toolplan.service.layout import GAP_X, NODE_HEIGHT, NODE_WIDTH, layout


def test_each_layer_is_a_row_top_to_bottom_and_centred_under_the_widest() -> None:
    drawn = layout([["a", "b", "c"], ["d"]], {"d": ["b"]})
    rows = {step: box.layer for step, box in drawn.boxes.items()}
    assert rows == {"a": 0, "b": 0, "c": 0, "d": 1}
    assert len({drawn.boxes[s].y for s in "abc"}) == 1
    assert drawn.boxes["d"].y > drawn.boxes["a"].y + NODE_HEIGHT
    # d sits under the middle of the first row
    middle = drawn.boxes["b"].x
    assert drawn.boxes["d"].x == middle
    assert drawn.width >= 3 * NODE_WIDTH + 2 * GAP_X
    assert drawn.height >= 2 * NODE_HEIGHT


def test_a_row_follows_the_order_of_what_its_steps_depend_on() -> None:
    # listed in the analysis as y, x: y depends on the right step, x on the left one
    drawn = layout([["left", "right"], ["y", "x"]], {"y": ["right"], "x": ["left"]})
    assert drawn.boxes["x"].x < drawn.boxes["y"].x


def test_edges_run_from_bottom_to_top_and_the_critical_path_is_marked() -> None:
    drawn = layout(
        [["a"], ["b", "c"], ["d"]], {"b": ["a"], "c": ["a"], "d": ["b", "c"]}, ["a", "c", "d"]
    )
    marked = {(edge.source, edge.target): edge.critical for edge in drawn.edges}
    assert marked == {("a", "b"): False, ("a", "c"): True, ("b", "d"): False, ("c", "d"): True}
    a, b = drawn.boxes["a"], drawn.boxes["b"]
    start = f"M{a.x + a.width / 2:g},{a.y + a.height:g}"
    end = f"{b.x + b.width / 2:g},{b.y:g}"
    edge = next(e for e in drawn.edges if e.target == "b")
    assert edge.path.startswith(start) and edge.path.endswith(end)
    assert drawn.to_json()["edges"][0] == {
        "from": "a",
        "to": "b",
        "path": edge.path,
        "critical": False,
        "order": None,  # a data edge, not an order edge
    }


def test_unknown_dependencies_are_ignored_and_nothing_draws_nothing() -> None:
    drawn = layout([["a"]], {"a": ["gone"]})
    assert drawn.edges == [] and set(drawn.boxes) == {"a"}
    empty = layout([], {})
    assert empty.boxes == {} and empty.edges == [] and empty.height == 0
