"""Evaluate the planner's tool selection on a query file with expected tools (needs a real model).

    OPENAI_API_KEY=... python scripts/eval_planner.py scripts/queries/blog.jsonl [--model openai:gpt-4o]

Plans every query (nothing is executed), then prints, per query, the chosen and expected tools, and
the micro-averaged precision/recall and exact-set accuracy. Planner accuracy depends on the model;
it cannot be measured without one (the test suite only checks the machinery, with scripted models).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.errors import ToolplanError
from toolplan.pipeline.batch import load_queries, read_results, run_batch, summarize


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", type=Path, help=".jsonl with {id, query, expected: {tools}}")
    parser.add_argument(
        "--model", help="provider:model (default $TOOLPLAN_MODEL or openai:gpt-4o-mini)"
    )
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    try:
        items = load_queries(args.file)
        with tempfile.TemporaryDirectory() as scratch:
            settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{scratch}/eval.db")
            planner = Toolplan(settings=settings, model=args.model).planner_context()
            out = Path(scratch) / "results.jsonl"
            asyncio.run(
                run_batch(items, planner, out=out, concurrency=args.concurrency, reuse="off")
            )
            results = read_results(out)
    except ToolplanError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return error.exit_code
    for item in items:
        row = results[item.id]
        chosen, wanted = sorted(set(row.get("tools") or [])), sorted(item.expected_tools or [])
        mark = "ok " if chosen == wanted else "DIFF"
        print(f"{mark} {item.id:<12} chose {chosen} expected {wanted} [{row['status']}]")
    print(json.dumps(summarize(items, results), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
