"""``python -m bench.nestful [--splits S,...] [--sample N] [--seed S] [--ids ID,...] [--out DIR]``.

Answers every sampled NESTFUL sample with toolplan's planner (Python and JSON plans), NESTFUL's
own direct prompt and native tool calls, against the model configured the usual way
(``OPENAI_BASE_URL``, ``TOOLPLAN_MODEL``, ``TOOLPLAN_STRUCTURED_METHOD``, ``TOOLPLAN_LLM_TIMEOUT``;
``eval "$(bash ../shared/real-llm/serve.sh)"`` sets them). Prints the tables by split; with
``--out``, writes ``rows.jsonl`` (as it goes, so an interrupted run keeps what it did),
``summary.json`` and ``summary.md``. ``--summarize DIR/rows.jsonl`` prints (and re-scores) what a
run wrote; given several runs' rows (other seeds), one table over all their samples. ``--fetch`` downloads the data copy first (``nestful-wrapper==0.1.7``). When the
copy is here, the tables also read every argument at its declared default as omitted
(:mod:`bench.nestful.metrics`).

Tune only on sgd and executable; glaive is a test set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bench.harness import log, option_names, read_rows, round_robin, run_meta, write
from bench.nestful.data import (
    COPY,
    SPLITS,
    TUNING_SPLITS,
    NestfulMissing,
    data_dir,
    declared_defaults,
    fetch,
    load_split,
    sample,
)
from bench.nestful.run import GROUPS, Defaults, markdown, pooled, run_samples, summarize


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    from toolplan.config import Settings
    from toolplan.errors import ToolplanError

    parser = argparse.ArgumentParser(
        prog="python -m bench.nestful",
        description=(__doc__ or "").split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--splits",
        default=",".join(TUNING_SPLITS),
        help=f"comma-separated, from {', '.join(SPLITS)} (default: the tuning ones)",
    )
    parser.add_argument("--sample", type=int, help="samples per split (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="sampling and tools seed (default 0)")
    parser.add_argument("--ids", help="only these sample ids, e.g. sgd-3 (after sampling)")
    parser.add_argument(
        "--only",
        default=",".join(GROUPS),
        help="python, json (toolplan's planner), nestful (NESTFUL's prompt, read strictly and "
        "leniently), native (tool calls, and the reply read leniently)",
    )
    parser.add_argument(
        "--chunk", type=int, default=10, help="samples a contestant answers in a row (default 10)"
    )
    parser.add_argument("--out", type=Path, help="write rows.jsonl, summary.json, summary.md")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with an interrupted run: keep --out's rows.jsonl and ask only what it lacks "
        "(give the same arguments)",
    )
    parser.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        metavar="JSONL",
        help="print the tables of a rows.jsonl (e.g. of a run cut short); of several (runs with "
        "other seeds), one table over all their samples; no model needed",
    )
    parser.add_argument(
        "--fetch", action="store_true", help=f"download {COPY} into the data cache first"
    )
    args = parser.parse_args(argv)
    if args.summarize:
        if len(set(args.summarize)) < len(args.summarize):
            log("error: a rows file is given twice: its samples would count twice")
            return 2
        try:
            rows = pooled([read_rows(path) for path in args.summarize])
        except (OSError, ValueError) as error:
            log(f"error: cannot read the rows: {error}")
            return 2
        if len(args.summarize) > 1:
            runs = ", ".join(f"#{k} {path}" for k, path in enumerate(args.summarize, 1))
            write(sys.stdout, f"Pooled over {len(args.summarize)} runs ({runs}).\n\n")
        write(sys.stdout, markdown(summarize(rows, _defaults(rows))))
        return 0
    splits = option_names(args.splits, SPLITS, "split", parser)
    groups = option_names(args.only, GROUPS, "contestant", parser)
    ids = set(args.ids.split(",")) if args.ids else None
    argv = argv if argv is not None else sys.argv[1:]
    if args.fetch:
        log(f"fetching {COPY} into {fetch()}")
    for split in splits:
        if split not in TUNING_SPLITS:
            log(f"note: {split} is a test set; run it once, never tune on it")
    try:
        chosen = [
            [
                s
                for s in sample(load_split(split, seed=args.seed), args.sample, args.seed)
                if ids is None or s.id in ids
            ]
            for split in splits
        ]
        settings = Settings.from_env()
    except (NestfulMissing, ToolplanError) as error:
        log(f"error: {error}")
        return 2
    samples = round_robin(chosen)
    meta = run_meta(
        "bench.nestful",
        argv,
        settings,
        seed=args.seed,
        sample=args.sample,
        chunk=args.chunk,
        data=COPY,
    )
    log(
        f"{len(samples)} samples from {data_dir()}, model {meta['model']} "
        f"({meta['structuredMethod']}), contestants {', '.join(groups)}"
    )
    rows_file = None
    earlier: list[dict[str, Any]] = []
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        kept = args.out / "rows.jsonl"
        if args.resume and kept.is_file():
            earlier = read_rows(kept)
            log(f"resuming: {len(earlier)} rows kept from {kept}")
        rows_file = kept.open("a" if args.resume else "w")

    def on_row(row: dict[str, Any]) -> None:
        if row["type"] == "answer":
            score = row["score"]
            mark = "full" if score["full"] else f"partial {score['partial']:.2f}"
            if not score["answered"]:
                mark = f"no answer ({row.get('errorKind', 'unreadable')})"
            log(f"{row['id']} {row['contestant']}: {mark}, {row['seconds']} s")
        if rows_file is not None:
            rows_file.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            rows_file.flush()

    try:
        rows = earlier + asyncio.run(
            run_samples(
                samples, settings, groups=groups, chunk=args.chunk, on_row=on_row, done=earlier
            )
        )
    except ToolplanError as error:
        log(f"error: {error.message}")
        return error.exit_code
    finally:
        if rows_file is not None:
            rows_file.close()
    summary = {"meta": meta, "splits": summarize(rows, _defaults(rows))}
    table = markdown(summary["splits"])
    if args.out:
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        (args.out / "summary.md").write_text(table)
    write(sys.stdout, table)
    return 0


def _defaults(rows: list[dict[str, Any]]) -> Defaults | None:
    """The declared defaults of the splits in ``rows``, from the data copy; ``None`` (and a
    note) when the copy is not here, so that a summary needs no data."""
    splits = {r["split"] for r in rows if r.get("type") == "sample"}
    try:
        return {split: declared_defaults(split) for split in sorted(splits)}
    except NestfulMissing as missing:
        log(f"note: no reading with declared defaults omitted: {missing}")
        return None


if __name__ == "__main__":
    raise SystemExit(main())
