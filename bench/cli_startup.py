"""``python -m bench.cli_startup [ROUNDS]``: the CLI's start-up, as wall-clock medians and as
ratios to ``python -c "import langgraph.graph"`` measured in the same rounds (so a loaded machine
moves both sides), printed as one JSON line.

Each round runs, in turn: the baseline, ``toolplan tools --json`` and ``toolplan run --file
examples/blog_chain.json --json`` on a fresh SQLite store in a scratch folder (so every run
executes the plan). The ratio of each round is taken against the baseline of the same round, and
the median of those ratios is reported beside the medians of the times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stats import median

REPO = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-c", "import langgraph.graph"]


def _toolplan(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolplan", *args]


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def measure(rounds: int = 5) -> dict[str, object]:
    """Medians (seconds) and median ratios to the baseline over ``rounds`` rounds."""
    samples: dict[str, list[float]] = {"baseline": [], "tools": [], "run_file": []}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "examples").symlink_to(REPO / "examples")
        for index in range(rounds):
            env = {
                **os.environ,
                "TOOLPLAN_STORE": f"sqlite:///{folder / f'round{index}.db'}",
                "TOOLPLAN_TOOLS": "blog",
            }
            samples["baseline"].append(_timed(BASELINE, folder, env))
            samples["tools"].append(_timed(_toolplan("tools", "--json"), folder, env))
            samples["run_file"].append(
                _timed(
                    _toolplan("run", "--file", "examples/blog_chain.json", "--json"), folder, env
                )
            )
    ratios = {
        name: median([s / b for s, b in zip(values, samples["baseline"], strict=True)])
        for name, values in samples.items()
        if name != "baseline"
    }
    return {
        "rounds": rounds,
        "median_s": {name: round(median(values), 3) for name, values in samples.items()},
        "median_ratio_to_baseline": {name: round(value, 2) for name, value in ratios.items()},
        "raw_s": {name: [round(v, 3) for v in values] for name, values in samples.items()},
    }


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 5)))
