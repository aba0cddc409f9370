"""``python -m bench.timeouts [--trials 400] [--calls 5000] [--json]``: the false-timeout rate
of the adaptive-timeout rule on the bench's lognormal latencies.

For each latency spread (the lognormal sigma; the bench's DAGs use 0.5) and history size (the
minimum of 20 observations, and the full window of 100), every trial draws a history from
:func:`bench.dags.sample_latency`, computes the timeout with the engine's own
:meth:`toolplan.config.policies.TimeoutPolicy.from_history`, then draws ``calls`` fresh calls of
the same tool and counts those slower than the timeout: a good call the timeout would have cut.

Two views, because the rule is clamped to [1 s, the default]:

- ``as configured`` at the bench's 20 ms median: the 1 s floor decides, nothing is cut;
- ``rule only`` (floor and ceiling removed), on the bench's draw and on an uncapped lognormal: what the p99 x factor rule cuts when it is the one
  that decides, i.e. for tools slow enough that the floor does not bind. For a lognormal this
  is independent of the median.

Not part of ``python -m bench`` (no engine runs; it is arithmetic on the engine's rule); the
figures quoted in BENCHMARKS.md come from this script.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from dataclasses import replace
from typing import Any

from bench.dags import sample_latency
from toolplan.config.policies import TimeoutPolicy

SIGMAS = (0.25, 0.5, 1.0, 1.5)
HISTORIES = (20, 100)
FACTORS = (2.0, 3.0, 5.0)
MEDIAN = 0.02
"""The bench DAGs' median latency, seconds."""


def false_timeout_rate(
    policy: TimeoutPolicy,
    *,
    sigma: float,
    observations: int,
    trials: int,
    calls: int,
    median: float = MEDIAN,
    default: float = 30.0,
    capped: bool = True,
    seed: int = 0,
) -> dict[str, float]:
    """Mean and worst-5% rate of good calls slower than the learned timeout. ``capped``: the
    bench DAGs' draw (within [2 ms, 10 x median]); else a plain lognormal, whose tail is not
    cut off (closer to real tools)."""
    rng = random.Random(f"timeouts:{sigma}:{observations}:{policy.factor}:{capped}:{seed}")

    def draw() -> float:
        if capped:
            return sample_latency(rng, median, sigma)
        return rng.lognormvariate(math.log(median), sigma)

    rates = []
    for _ in range(trials):
        history = [draw() * 1000 for _ in range(observations)]
        timeout = policy.from_history(history, default)
        assert timeout is not None
        cut = sum(1 for _ in range(calls) if draw() > timeout)
        rates.append(cut / calls)
    rates.sort()
    return {
        "mean": statistics.fmean(rates),
        "p95": rates[min(len(rates) - 1, int(0.95 * len(rates)))],
    }


def run(trials: int, calls: int) -> dict[str, Any]:
    """Every sigma x history x factor, as configured and rule-only."""
    rows = []
    for factor in FACTORS:
        configured = TimeoutPolicy(factor=factor)
        rule_only = replace(configured, floor=0.0)
        for sigma in SIGMAS:
            for observations in HISTORIES:
                row: dict[str, Any] = {
                    "factor": factor,
                    "sigma": sigma,
                    "observations": observations,
                }
                common = {"sigma": sigma, "observations": observations}
                row["configured"] = false_timeout_rate(
                    configured, trials=trials, calls=calls, **common
                )
                row["rule_only"] = false_timeout_rate(
                    rule_only, trials=trials, calls=calls, default=float("inf"), **common
                )
                row["rule_only_uncapped"] = false_timeout_rate(
                    rule_only,
                    trials=trials,
                    calls=calls,
                    default=float("inf"),
                    capped=False,
                    **common,
                )
                rows.append(row)
    return {"trials": trials, "calls": calls, "median_s": MEDIAN, "rows": rows}


def _table(result: dict[str, Any]) -> str:
    lines = [
        "| factor | sigma | observations | as configured | rule only: mean | worst 5% of "
        "histories | uncapped lognormal: mean | worst 5% |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['factor']:g} | {row['sigma']:g} | {row['observations']} "
            f"| {row['configured']['mean']:.4%} | {row['rule_only']['mean']:.4%} "
            f"| {row['rule_only']['p95']:.4%} | {row['rule_only_uncapped']['mean']:.4%} "
            f"| {row['rule_only_uncapped']['p95']:.4%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.timeouts", description=__doc__)
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.trials, args.calls)
    print(json.dumps(result, indent=2) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
