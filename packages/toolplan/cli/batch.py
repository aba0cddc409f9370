"""``toolplan batch FILE``: plan (and optionally execute) every query of a file, resumably."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from toolplan.cli.options import JsonOption, McpOption, ModelOption, StoreOption, ToolsOption
from toolplan.cli.output import emit_json, guard, stderr, stdout
from toolplan.cli.session import new_client

__all__ = ["batch"]


def batch(
    file: Annotated[
        Path, typer.Argument(help="Queries: .txt (one per line) or .jsonl ({id, query, expected}).")
    ],
    execute: Annotated[
        bool, typer.Option("--execute", help="Also execute each planned query.")
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Queries processed at once.")
    ] = 4,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Results file (JSON lines); ids already in it are skipped."),
    ] = None,
    summary_json: Annotated[
        Path | None,
        typer.Option("--summary-json", help="Also write the summary as JSON to this file."),
    ] = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    model: ModelOption = None,
    no_reuse: Annotated[
        bool,
        typer.Option(
            "--no-reuse",
            help="Plan every query with the LLM; by default stored plans are reused "
            "($TOOLPLAN_PLAN_REUSE).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Plan every query of FILE (and run them with --execute); one output line per query."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from toolplan.pipeline.batch import load_queries, read_results, run_batch, summarize

    results_path = out or file.with_name(f"{file.stem}.results.jsonl")
    progress = Progress(
        TextColumn("[bold]batch[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=stderr,
        transient=False,
        disable=as_json,
    )

    def body() -> dict[str, Any]:
        items = load_queries(file)
        client = new_client(store, tools, mcp=mcp, model=model)
        try:
            planner = client.planner_context()
            executor = client.execution_context() if execute else None
            already = len([i for i in items if i.id in read_results(results_path)])
            with progress:
                task = progress.add_task("batch", total=len(items), completed=already, last="")

                def advance(line: dict[str, Any]) -> None:
                    progress.update(task, advance=1, last=f"{line['id']}: {line.get('status')}")

                try:
                    asyncio.run(
                        run_batch(
                            items,
                            planner,
                            out=results_path,
                            executor=executor,
                            concurrency=concurrency,
                            on_result=advance,
                            reuse="off" if no_reuse else client.settings.plan_reuse,
                        )
                    )
                except KeyboardInterrupt:
                    done = len([i for i in items if i.id in read_results(results_path)])
                    stderr.print(
                        f"interrupted: {done} of {len(items)} queries are done in {results_path}; "
                        "run the same command again to continue"
                    )
                    raise typer.Exit(130) from None
            return summarize(items, read_results(results_path))
        finally:
            client.close()

    summary = guard(body, as_json=as_json)
    summary["results"] = str(results_path)
    if summary_json is not None:
        summary_json.write_text(json.dumps(summary, indent=2) + "\n")
    if as_json:
        emit_json(summary)
    else:
        _print_summary(summary)


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title="batch summary", title_justify="left", show_header=False)
    table.add_column("measure")
    table.add_column("value")
    table.add_row("queries", f"{summary['done']} done of {summary['queries']}")
    for status, count in summary["byStatus"].items():
        table.add_row(f"  {status}", str(count))

    def ms(value: float | None) -> str:
        return f"{value:.0f} ms" if value is not None else "-"

    table.add_row(
        "planning p50 / p95", f"{ms(summary['planMs']['p50'])} / {ms(summary['planMs']['p95'])}"
    )
    table.add_row(
        "execution p50 / p95", f"{ms(summary['execMs']['p50'])} / {ms(summary['execMs']['p95'])}"
    )
    table.add_row("LLM calls", f"{summary['llmCalls']} ({summary['repairs']} repairs)")
    if summary.get("reused"):
        modes = ", ".join(f"{mode} {n}" for mode, n in summary["reusedByMode"].items())
        table.add_row("reused plans", f"{summary['reused']} ({modes}; 0 LLM calls each)")
    table.add_row(
        "tokens in (cached) / out",
        f"{summary['inputTokens']} ({summary['cachedInputTokens']}) / {summary['outputTokens']}",
    )
    selection = summary.get("toolSelection")
    if selection:
        table.add_row("tool precision", str(selection["precision"]))
        table.add_row("tool recall", str(selection["recall"]))
        table.add_row(
            "exact tool set", f"{selection['exactSetAccuracy']:.0%} of {selection['scored']}"
        )
    table.add_row("results", summary["results"])
    stdout.print(table)
