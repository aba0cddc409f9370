"""Seeded random DAGs with simulated tool latencies, and the bounds they are measured against.

Three shapes, so no scheduler is flattered by one kind of graph:

- ``wide``: 2-4 layers, most steps in parallel (search fan-outs, batch lookups);
- ``deep``: long chains one or two steps wide, with occasional skip edges (multi-hop reasoning);
- ``mixed``: random layer sizes and edges reaching back to any earlier layer, so steps of one
  Kahn layer become ready at very different times (where waves lose most).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Dag",
    "Shape",
    "critical_path",
    "graham_bound",
    "kahn_layers",
    "random_dag",
    "random_dags",
    "sample_latency",
]

Shape = Literal["wide", "deep", "mixed"]
SHAPES: tuple[Shape, ...] = ("wide", "deep", "mixed")


@dataclass(frozen=True)
class Dag:
    """A DAG of steps with one simulated latency (seconds) per step."""

    name: str
    shape: Shape
    order: list[str]
    """A topological order (also the plan order)."""
    deps: dict[str, list[str]]
    latency: dict[str, float]

    @property
    def size(self) -> int:
        """Number of steps."""
        return len(self.order)

    @property
    def critical_path(self) -> float:
        """The longest latency-weighted chain: wall time at unbounded concurrency, zero overhead."""
        return critical_path(self.order, self.deps, self.latency)

    @property
    def work(self) -> float:
        """Sum of all latencies: wall time on one worker."""
        return sum(self.latency.values())

    @property
    def layers(self) -> list[list[str]]:
        """Kahn layers (what a wave/superstep scheduler runs together)."""
        return kahn_layers(self.order, self.deps)

    @property
    def wave_time(self) -> float:
        """Ideal wave-scheduler wall time: the sum over layers of the slowest step in each."""
        return sum(max(self.latency[s] for s in layer) for layer in self.layers)


def kahn_layers(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Steps grouped by Kahn layer: a layer holds the steps whose dependencies all lie in earlier ones."""
    level: dict[str, int] = {}
    for step in order:
        level[step] = 1 + max((level[d] for d in deps[step]), default=-1)
    layers: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for step in order:
        layers[level[step]].append(step)
    return layers


def critical_path(
    order: Sequence[str], deps: Mapping[str, Sequence[str]], latency: Mapping[str, float]
) -> float:
    """Length of the longest latency-weighted path."""
    finish: dict[str, float] = {}
    for step in order:
        finish[step] = latency[step] + max((finish[d] for d in deps[step]), default=0.0)
    return max(finish.values(), default=0.0)


def graham_bound(dag: Dag, workers: int) -> float:
    """Graham's bound for any greedy list schedule on ``workers``: ``(W - CP) / k + CP``."""
    return (dag.work - dag.critical_path) / workers + dag.critical_path


def _layer_sizes(rng: random.Random, n: int, layers: int) -> list[int]:
    sizes = [1] * layers
    for _ in range(n - layers):
        sizes[rng.randrange(layers)] += 1
    return sizes


def sample_latency(rng: random.Random, median: float, sigma: float) -> float:
    """One simulated tool latency, seconds: lognormal around ``median``, kept within
    [2 ms, 10 x median]."""
    return min(10 * median, max(0.002, rng.lognormvariate(math.log(median), sigma)))


def random_dag(
    seed: int,
    shape: Shape,
    *,
    median_latency: float = 0.02,
    sigma: float = 0.5,
    min_steps: int = 5,
    max_steps: int = 40,
) -> Dag:
    """One DAG; the same ``seed`` and arguments always give the same graph and latencies."""
    rng = random.Random(f"{shape}:{seed}")
    n = rng.randint(min_steps, max_steps)
    if shape == "wide":
        layer_count = rng.randint(2, min(4, n))
        sizes = [max(1, n - 3 * (layer_count - 1))] + [3] * (layer_count - 1)
        sizes[0] = n - sum(sizes[1:])
        if sizes[0] < 1:
            sizes = _layer_sizes(rng, n, layer_count)
    elif shape == "deep":
        width = rng.choice((1, 2, 3))
        layer_count = max(1, math.ceil(n / width))
        sizes = [width] * layer_count
        sizes[-1] = n - width * (layer_count - 1)
    else:
        layer_count = rng.randint(3, max(3, n // 3))
        sizes = _layer_sizes(rng, n, min(layer_count, n))

    order: list[str] = []
    layer_of: list[list[str]] = []
    deps: dict[str, list[str]] = {}
    for index, size in enumerate(sizes):
        layer = []
        for _ in range(size):
            step = f"s{len(order):02d}"
            parents: set[str] = set()
            if index > 0:
                # mostly the previous layer; wide and mixed graphs also reach further back
                parents.add(rng.choice(layer_of[index - 1]))
                extra = rng.randint(0, 2 if shape != "deep" else 1)
                for _ in range(extra):
                    back = index - 1 if shape == "deep" else rng.randrange(index)
                    parents.add(rng.choice(layer_of[back]))
                if shape == "deep" and index > 2 and rng.random() < 0.15:
                    parents.add(rng.choice(layer_of[rng.randrange(index - 1)]))  # skip edge
            deps[step] = sorted(parents)
            order.append(step)
            layer.append(step)
        layer_of.append(layer)
    latency = {step: sample_latency(rng, median_latency, sigma) for step in order}
    return Dag(f"{shape}-{seed:03d}", shape, order, deps, latency)


def random_dags(count: int, **kwargs: float) -> list[Dag]:
    """``count`` DAGs cycling through the three shapes, seeds 0, 1, 2, ..."""
    return [random_dag(i // 3, SHAPES[i % 3], **kwargs) for i in range(count)]  # type: ignore[arg-type]
