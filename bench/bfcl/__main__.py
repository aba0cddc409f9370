"""``python -m bench.bfcl [--categories C,...] [--sample N] [--seed S] [--ids ID,...] [--out DIR]``.

Plans every sampled BFCL entry with toolplan and asks the same model natively, against the model
configured the usual way (``OPENAI_BASE_URL``, ``TOOLPLAN_MODEL``, ``TOOLPLAN_STRUCTURED_METHOD``,
``TOOLPLAN_LLM_TIMEOUT``; ``eval "$(bash ../shared/real-llm/serve.sh)"`` sets them). Prints the
table by category; with ``--out``, writes ``entries.jsonl`` (one row per entry, as it is
scored, so an interrupted run keeps what it did; the categories take turns, so it covers
each of them), ``summary.json`` and ``summary.md``. ``--summarize DIR/entries.jsonl`` prints the tables of
what a run wrote.

Tune only on simple_python, multiple and parallel; every other category is a test set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.bfcl.data import CATEGORIES, TUNING_CATEGORIES, BfclMissing, load_category, sample
from bench.bfcl.run import CONTESTANTS, markdown, run_entries, summarize
from bench.harness import log, option_names, read_rows, round_robin, run_meta, write


def main(argv: list[str] | None = None) -> int:
    from toolplan.config import Settings
    from toolplan.errors import ToolplanError

    parser = argparse.ArgumentParser(
        prog="python -m bench.bfcl",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--categories",
        default=",".join(TUNING_CATEGORIES),
        help=f"comma-separated, from {', '.join(CATEGORIES)} (default: the tuning ones)",
    )
    parser.add_argument("--sample", type=int, help="entries per category (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--ids", help="only these entry ids (after sampling, if --sample)")
    parser.add_argument(
        "--only",
        default=",".join(CONTESTANTS),
        help="toolplan (the JSON planner), python (the planner writing Python), prompting "
        "(BFCL's prompting mode), native, text (native and text share one call)",
    )
    parser.add_argument("--out", type=Path, help="write entries.jsonl, summary.json, summary.md")
    parser.add_argument(
        "--summarize",
        type=Path,
        metavar="JSONL",
        help="print the tables of an entries.jsonl (e.g. of a run cut short); no model needed",
    )
    args = parser.parse_args(argv)
    if args.summarize:
        rows = read_rows(args.summarize)
        write(sys.stdout, markdown(summarize(rows)))
        return 0
    categories = option_names(args.categories, CATEGORIES, "category", parser)
    contestants = option_names(args.only, CONTESTANTS, "contestant", parser)
    ids = set(args.ids.split(",")) if args.ids else None
    argv = argv if argv is not None else sys.argv[1:]

    try:
        chosen = [
            [
                e
                for e in sample(load_category(c), args.sample, args.seed)
                if ids is None or e.id in ids
            ]
            for c in categories
        ]
        entries = round_robin(chosen)
        settings = Settings.from_env()
    except (BfclMissing, ToolplanError) as error:
        log(f"error: {error}")
        return 2
    meta = run_meta(
        "bench.bfcl",
        argv,
        settings,
        seed=args.seed,
        sample=args.sample,
        bfclEval=metadata.version("bfcl-eval"),
    )
    log(f"{len(entries)} entries, model {meta['model']} ({meta['structuredMethod']})")
    rows_file = None
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        rows_file = (args.out / "entries.jsonl").open("w")

    def on_row(row: dict[str, Any]) -> None:
        marks = " ".join(
            f"{c}={'ok' if row[c]['valid'] else row[c]['errorType']}"
            for c in CONTESTANTS
            if c in row
        )
        log(f"{row['id']}: {marks}")
        if rows_file is not None:
            rows_file.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            rows_file.flush()

    try:
        rows = asyncio.run(run_entries(entries, settings, contestants=contestants, on_row=on_row))
    except ToolplanError as error:
        log(f"error: {error.message}")
        return error.exit_code
    finally:
        if rows_file is not None:
            rows_file.close()
    summary = {"meta": meta, "categories": summarize(rows)}
    table = markdown(summary["categories"])
    if args.out:
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        (args.out / "summary.md").write_text(table)
    write(sys.stdout, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
