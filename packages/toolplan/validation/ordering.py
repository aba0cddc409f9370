"""Program order for effects: the order edges a plan's steps get from what their tools do.

A plan reads like a program, statement after statement, and it runs like one where the order can
be seen: data references and ``dependsOn`` are edges the plan writes; these are the edges its
effects add (:mod:`toolplan.tools.effects`).

- The **program order** is the order the steps are written in, except that a step using a later
  step's output (possible in JSON) comes after that step: the topological order of the written
  edges, ties broken by position (:func:`program_order`). In a Python plan it is the order of the
  statements.
- A step with **side effects** runs after every earlier step that touches one of its resources,
  reads included, and every later step that touches it runs after it.
- **Reads** between two writes run in parallel with each other.
- **Commutative writes** next to each other on a resource (no read between them) run in parallel
  with each other; the steps after them wait for all of them.

An order edge says *when*, never *whether*: the later step starts once the earlier one has ended,
however it ended (succeeded, failed, skipped, denied), except that a step waiting for a person's
approval holds the steps ordered after it. Only data references and ``dependsOn`` skip a step
whose dependency failed. The pass is linear in the steps and the edges it adds
(:func:`order_edges`), and never removes an edge.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from toolplan.tools.effects import Effect

__all__ = ["OrderEdges", "order_edges", "program_order"]


def program_order(ids: Sequence[str], dependencies: Mapping[str, Sequence[str]]) -> list[str]:
    """``ids`` (as written) in program order: each step after the steps it depends on, and
    otherwise in the order written. Steps on a cycle are left out (validation reports it)."""
    position = {step: index for index, step in enumerate(ids)}
    waiting = {step: 0 for step in ids}
    dependents: dict[str, list[str]] = {step: [] for step in ids}
    for step in ids:
        for dep in dict.fromkeys(dependencies.get(step, ())):
            if dep in position and dep != step:
                waiting[step] += 1
                dependents[dep].append(step)
    ready = [position[step] for step in ids if waiting[step] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        step = ids[heapq.heappop(ready)]
        order.append(step)
        for child in dependents[step]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, position[child])
    return order


@dataclass
class _Resource:
    """What the pass remembers of one resource: the last writes (one, or several commutative
    ones written next to each other), what they waited for, and the reads since."""

    writes: list[str] = field(default_factory=list)
    before_writes: list[str] = field(default_factory=list)
    """What the commutative group in ``writes`` waits for: a write joining it waits for the same."""
    commutative: bool = False
    reads: list[str] = field(default_factory=list)


OrderEdges = dict[str, dict[str, list[str]]]
"""step → {earlier step it runs after → the resources they share}: the order edges, with why."""


def order_edges(
    order: Sequence[str],
    effect: Callable[[str], Effect],
    dependencies: Mapping[str, Sequence[str]],
) -> OrderEdges:
    """The order edges of the steps in program ``order`` whose effects ``effect`` gives: step →
    each earlier step it runs after because of their effects, beyond its own ``dependencies``,
    with the resources that order is kept on (only steps that have some). Each step waits for
    the last write on each of its resources, and a write for the reads since that write
    instead, when there are some (they waited for it): no edge that another one already implies
    on the same resource."""
    resources: dict[str, _Resource] = {}
    edges: OrderEdges = {}
    for step in order:
        what = effect(step)
        own = set(dependencies.get(step, ()))
        after: dict[str, list[str]] = {}
        for name in what.resources:
            state = resources.setdefault(name, _Resource())
            if what.read_only:
                before = state.writes
                state.reads.append(step)
            elif what.commutative and state.commutative and not state.reads:
                before = state.before_writes
                state.writes.append(step)
            else:
                # The reads since the last writes waited for them: waiting for the reads is
                # waiting for both, with fewer edges to show.
                before = state.reads or state.writes
                state.writes, state.before_writes = [step], before
                state.commutative, state.reads = what.commutative, []
            for earlier in before:
                if earlier != step and earlier not in own:
                    after.setdefault(earlier, []).append(name)
        if after:
            edges[step] = after
    return edges
