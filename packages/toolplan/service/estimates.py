"""Plan estimates: how long a plan will take and what it will cost, before it runs.

``durationMs`` is the critical path of the plan with each step weighted by the **mean** of its
tool's latest observed durations (successful first attempts, the same history adaptive timeouts
read), or ``estimate_default_ms`` (project config) for a tool never seen. Where the plan is wider than
the concurrency limit, it is the eager schedule the engine would run at that limit (simulated;
equal to the critical path when the limit does not bind). The mean, not the median: a critical
path is a sum, and the expected sum is the sum of the means; for right-skewed latencies (a
lognormal) the median is below the mean by exp(sigma^2 / 2), so medians underestimate every
chain. ``basis`` says which weights it used: ``history`` (every step's tool has observations),
``default`` (none has) or ``mixed``.

A ``forEach`` step over a literal list counts one call per item (its items run
``concurrency`` at a time); over a template, the number of items is known only once the step it
names has run: the step counts as one call, and ``basis`` ends with ``, item count unknown``.

``costUsd`` sums the per-call cost each step's tool declares (``tagged(tool,
cost_usd=0.002)``) and, for a plan written by an LLM, the planning calls' tokens at the model's
price when a price table (``prices`` in the project config, a JSON file; never fetched from the network) lists
it. Tools that declare no cost count as free. It is ``None`` when nothing is known: no step's tool
declares a cost and no planning price applies.
"""

from __future__ import annotations

import heapq
import json
import math
import statistics
import time
import weakref
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from toolplan._caches import register_cache
from toolplan.config.settings import EstimateSettings
from toolplan.errors import InvalidInput
from toolplan.plan_format.plan import Plan, Step
from toolplan.store.protocol import Store
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation.dag import Analysis

__all__ = [
    "COST_METADATA_KEY",
    "Estimate",
    "EstimateBasis",
    "ModelPrice",
    "estimate_plan",
    "load_prices",
    "plan_estimator",
    "planning_cost",
    "schedule_length",
]

EstimateBasis = Literal[
    "history",
    "default",
    "mixed",
    "history, item count unknown",
    "default, item count unknown",
    "mixed, item count unknown",
]
"""What ``durationMs`` rests on: observed durations of every step's tool, of none, or of some;
``item count unknown`` when a ``forEach`` step's list is known only at run time (counted as one
call)."""

COST_METADATA_KEY = "cost_usd"
"""Where ``tagged(tool, cost_usd=...)`` keeps a tool's cost per call, in ``tool.metadata``."""

HISTORY = 100
"""Latest observed durations per tool the estimate averages."""


class _Durations(Protocol):
    def tool_durations(self, tools: Collection[str], limit: int) -> dict[str, list[float]]: ...


@dataclass(frozen=True)
class Estimate:
    """A plan's expected wall time and cost."""

    duration_ms: float
    cost_usd: float | None
    basis: EstimateBasis

    def to_json(self) -> dict[str, Any]:
        """``{"durationMs", "costUsd", "basis"}`` (``costUsd`` null when unknown)."""
        return {"durationMs": self.duration_ms, "costUsd": self.cost_usd, "basis": self.basis}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Estimate | None:
        """Back from :meth:`to_json` (``None`` for a plan stored without one)."""
        if not data:
            return None
        return cls(float(data["durationMs"]), data.get("costUsd"), data["basis"])


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens of one model."""

    input: float
    output: float
    cached_input: float | None = None
    """Prompt tokens read from the provider's cache; the input price when not given."""


def load_prices(path: str) -> dict[str, ModelPrice]:
    """The price table in ``path``: ``{"provider:model": {"input": USD per million tokens,
    "output": ..., "cachedInput": ...}}``. A missing or malformed file is
    :class:`~toolplan.errors.InvalidInput` naming it."""
    file = Path(path).expanduser()
    try:
        stamp = file.stat().st_mtime_ns
    except OSError as error:
        raise InvalidInput(
            f"the price table {path!r} (prices, TOOLPLAN_PRICES) cannot be read: "
            f"{error.strerror or error}"
        ) from None
    return _load_prices(str(file.resolve()), stamp)


@lru_cache(maxsize=8)
def _load_prices(path: str, _stamp: int) -> dict[str, ModelPrice]:
    where = f"the price table {path!r} (prices, TOOLPLAN_PRICES)"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise InvalidInput(f"{where} is not a JSON file: {error}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f'{where} must be a JSON object: {{"provider:model": {{...}}}}')
    prices: dict[str, ModelPrice] = {}
    for model, entry in data.items():
        numbers = entry if isinstance(entry, dict) else {}
        try:
            prices[model] = ModelPrice(
                input=_price(numbers, "input"),
                output=_price(numbers, "output"),
                cached_input=_price(numbers, "cachedInput") if "cachedInput" in numbers else None,
            )
        except (KeyError, TypeError, ValueError):
            raise InvalidInput(
                f"{where}: {model!r} needs non-negative numbers "
                '{"input": USD per million tokens, "output": ..., "cachedInput"?: ...}'
            ) from None
    return prices


def _price(entry: Mapping[str, Any], key: str) -> float:
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(key)
    return float(value)


def planning_cost(meta: Mapping[str, Any], prices: Mapping[str, ModelPrice]) -> float | None:
    """USD the planning calls recorded in a plan's ``meta`` cost (``model`` and ``usage``), or
    ``None`` when the plan was not planned by an LLM or its model has no price. The model is
    looked up as recorded (``openai:gpt-4o-mini``), then without its provider."""
    model, usage = meta.get("model"), meta.get("usage")
    if not model or not isinstance(usage, Mapping):
        return None
    price = prices.get(model) or prices.get(str(model).split(":", 1)[-1])
    if price is None:
        return None
    prompt = int(usage.get("inputTokens") or 0)
    cached = min(prompt, int(usage.get("cachedInputTokens") or 0))
    output = int(usage.get("outputTokens") or 0)
    cached_price = price.input if price.cached_input is None else price.cached_input
    return ((prompt - cached) * price.input + cached * cached_price + output * price.output) / 1e6


def tool_cost(catalog: ToolCatalog, name: str) -> float | None:
    """The cost per call ``name`` declares (``tagged(tool, cost_usd=...)``), or ``None``."""
    if name not in catalog:
        return None
    value = (catalog.get(name).metadata or {}).get(COST_METADATA_KEY)
    return float(value) if isinstance(value, int | float) else None


def schedule_length(
    order: Sequence[str],
    dependencies: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    concurrency: int,
) -> float:
    """The finish time of the engine's eager schedule when step ``s`` takes ``weights[s]``:
    at most ``concurrency`` steps at once, ready steps started first come first served (as
    :func:`~toolplan.engine.scheduler.schedule` does). Without a binding limit this is the
    critical path."""
    dependents: dict[str, list[str]] = {step: [] for step in order}
    waiting = {step: len(dependencies.get(step, ())) for step in order}
    for step in order:
        for dep in dependencies.get(step, ()):
            dependents[dep].append(step)
    rank = {step: index for index, step in enumerate(order)}
    ready = deque(step for step in order if waiting[step] == 0)
    running: list[tuple[float, int, str]] = []
    now = 0.0
    while ready or running:
        while ready and len(running) < concurrency:
            step = ready.popleft()
            heapq.heappush(running, (now + weights[step], rank[step], step))
        now, _, done = heapq.heappop(running)
        for child in dependents[done]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return now


def _calls(step: Step) -> int | None:
    """Tool calls a step makes: one, one per item of a literal ``forEach`` list, ``None`` when
    its list is known only at run time."""
    if step.for_each is None:
        return 1
    return len(step.for_each) if isinstance(step.for_each, list) else None


def estimate_plan(
    plan: Plan,
    analysis: Analysis,
    catalog: ToolCatalog,
    store: _Durations,
    settings: EstimateSettings,
    *,
    meta: Mapping[str, Any] | None = None,
) -> Estimate:
    """The estimate of ``plan`` from the tool durations observed in ``store`` (one read), the
    costs its tools declare and, with a price table, its planning calls (``meta``)."""
    tools = sorted({step.tool for step in plan.steps})
    history = store.tool_durations(tools, HISTORY) if tools else {}
    means = {tool: statistics.fmean(seen) for tool, seen in history.items() if seen}
    calls = {step.id: _calls(step) for step in plan.steps}
    # A map's items run `concurrency` at a time; a list known only at run time counts once.
    weights = {
        step.id: means.get(step.tool, settings.default_ms)
        * math.ceil((1 if calls[step.id] is None else calls[step.id] or 0) / settings.concurrency)
        if step.for_each is not None
        else means.get(step.tool, settings.default_ms)
        for step in plan.steps
    }
    seen = sum(1 for step in plan.steps if step.tool in means)
    kind = "history" if seen == len(plan.steps) else "default" if seen == 0 else "mixed"
    unknown = any(calls[step.id] is None for step in plan.steps)
    basis = cast(EstimateBasis, f"{kind}, item count unknown" if unknown else kind)
    duration = schedule_length(analysis.order, analysis.waits_for(), weights, settings.concurrency)

    costs = [
        None if cost is None else cost * (1 if calls[step.id] is None else calls[step.id] or 0)
        for step in plan.steps
        for cost in [tool_cost(catalog, step.tool)]
    ]  # one call per item of a known list
    known = [cost for cost in costs if cost is not None]
    planning = None
    if settings.prices_file and meta:
        planning = planning_cost(meta, load_prices(settings.prices_file))
    cost: float | None = None
    if known or planning is not None:
        cost = round(sum(known) + (planning or 0.0), 8)
    return Estimate(round(duration, 1), cost, basis)


_STATS_TTL_SECONDS = 60.0
_stats_cache: weakref.WeakKeyDictionary[Store, tuple[float, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
register_cache(_stats_cache.clear)


def _recent_tool_stats(store: Store) -> dict[str, Any]:
    """Tool statistics, recomputed at most once a minute per store object: the aggregate scans
    every step record, and critical-path estimates do not need up-to-the-second figures. Keyed
    by the store itself, not its URI: two stores may print the same URI (passwords are hidden,
    every in-memory store is ``memory://``)."""
    now = time.monotonic()
    cached = _stats_cache.get(store)
    if cached is None or now - cached[0] > _STATS_TTL_SECONDS:
        cached = (now, dict(store.tool_stats()))
        _stats_cache[store] = cached
    return cached[1]


def plan_estimator(store: Store) -> Any:
    """Step-duration estimates for :func:`~toolplan.validation.dag.analyze`'s critical path: each
    tool's recent average duration in ``store`` (1 ms for a tool never seen)."""
    stats = _recent_tool_stats(store)

    def estimate(step: Step) -> float:
        seen = stats.get(step.tool)
        return (seen.avg_duration_ms or 1.0) if seen else 1.0

    return estimate
