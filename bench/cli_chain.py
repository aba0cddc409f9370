"""``python -m bench.cli_chain OLD_TREE [ROUNDS] [--tag read-only]``: the CLI's time per step on a
50-step chain, this tree against another checkout's (``git worktree add /tmp/old COMMIT``), the
two alternated round by round in one session, printed as one JSON line.

Each run is ``toolplan run --file chain50.json --json`` in a process of its own, on a fresh
SQLite store, with a tool that returns its input at once (``echo``), each step taking the
previous one's output. The time per step is read from the step records the run prints: (the
last step's ``finishedAt`` - the first step's ``startedAt``) / 49, so the process's start-up,
which varies by more than a whole chain takes, is left out; the whole run's wall time is given
beside it. ``--tag read-only`` tags the tool read-only (a write on the default resource by
default: each step then moves the result cache's versions, as program order asks).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench.stats import median

REPO = Path(__file__).resolve().parents[1]
STEPS = 50

_TOOLS = '''"""A zero-latency tool for the per-step probe."""


async def echo(value: str) -> str:
    """Return the value unchanged."""
    return value


TOOLS = [echo]
'''


def _plan() -> dict[str, object]:
    steps: list[dict[str, object]] = [{"id": "s1", "tool": "echo", "parameters": {"value": "x"}}]
    steps += [
        {"id": f"s{i}", "tool": "echo", "parameters": {"value": f"{{{{s{i - 1}}}}}"}}
        for i in range(2, STEPS + 1)
    ]
    return {"steps": steps}


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _run(tree: Path, folder: Path, store: Path) -> tuple[float, float]:
    """One run with ``tree``'s packages: (ms per step, wall seconds)."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{tree / 'packages'}{os.pathsep}{folder}",
        "TOOLPLAN_STORE": f"sqlite:///{store}",
        "TOOLPLAN_TOOLS": "chain_tools",
    }
    command = [sys.executable, "-m", "toolplan", "run", "--file", "chain.json", "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: toolplan run failed ({done.returncode}):\n{done.stderr}")
    steps = json.loads(done.stdout)["steps"]
    if len(steps) != STEPS or any(step["status"] != "succeeded" for step in steps):
        raise SystemExit(f"{tree}: the chain did not succeed")
    span = _seconds(steps[-1]["finishedAt"]) - _seconds(steps[0]["startedAt"])
    return span / (STEPS - 1) * 1000, wall


def measure(old: Path, rounds: int = 10, *, read_only: bool = False) -> dict[str, object]:
    """Medians over ``rounds`` alternated rounds, for this tree (``new``) and ``old``."""
    trees = {"new": REPO, "old": old}
    per_step: dict[str, list[float]] = {name: [] for name in trees}
    walls: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        tools = _TOOLS
        if read_only:
            tools = tools.replace(
                "TOOLS = [echo]",
                'from toolplan.tools import tagged\n\nTOOLS = [tagged(echo, "read-only")]',
            )
        (folder / "chain_tools.py").write_text(tools)
        (folder / "chain.json").write_text(json.dumps(_plan()))
        for index in range(rounds):
            order = list(trees) if index % 2 == 0 else list(reversed(trees))
            for name in order:
                ms, wall = _run(trees[name], folder, folder / f"{name}-{index}.db")
                per_step[name].append(ms)
                walls[name].append(wall)
    return {
        "rounds": rounds,
        "tool": "read-only" if read_only else "write (default resource)",
        "load": [round(x, 2) for x in os.getloadavg()],
        **{
            name: {
                "ms_per_step": round(median(per_step[name]), 3),
                "wall_s": round(median(walls[name]), 3),
            }
            for name in trees
        },
        "ratio_ms_per_step": round(median(per_step["new"]) / median(per_step["old"]), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="another checkout of toolplan (a git worktree)")
    parser.add_argument("rounds", type=int, nargs="?", default=10)
    parser.add_argument("--tag", choices=["read-only"], default=None)
    args = parser.parse_args()
    print(json.dumps(measure(args.old, args.rounds, read_only=args.tag == "read-only")))


if __name__ == "__main__":
    main()
