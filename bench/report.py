"""Markdown tables and PNG plots from a results object (what ``python -m bench`` prints/writes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["markdown", "plot"]


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _ok(value: Any) -> str:
    if value is None:
        return "pending"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in value.items())
    return "met" if value else "MISSED"


def _scheduling(r: dict[str, Any]) -> str:
    rows = [
        [
            f"`{name}`",
            row["label"],
            f"{row['wall_over_cp']['median']:.3f}",
            f"{row['wall_over_cp']['p95']:.3f}",
            *(f"{row['median_by_shape'][s]:.3f}" for s in ("wide", "deep", "mixed")),
            f"{row['overhead_ms']['median']:.1f}",
        ]
        for name, row in r["unbounded"].items()
    ]
    capped = r["capped"]
    capped_rows = [
        [
            f"`{name}`",
            f"{capped[name]['wall_over_graham_bound']['median']:.3f}",
            f"{capped[name]['wall_over_graham_bound']['p95']:.3f}",
            f"{capped[name]['within_graham_bound']}/{r['dags']}",
            f"{capped[name]['wall_over_lower_bound']['median']:.3f}",
        ]
        for name in capped
        if name != "workers"
    ]
    return "\n\n".join(
        [
            f"{r['dags']} DAGs, {r['steps']['min']:.0f}-{r['steps']['max']:.0f} steps, lognormal "
            f"latencies (median {r['median_latency_ms']:.0f} ms, sigma {r['sigma']}); critical path "
            f"median {r['critical_path_ms']['median']:.0f} ms. Ideal waves (zero overhead) would "
            f"reach {r['ideal_wave_over_cp']['median']:.3f}x median.",
            _table(
                [
                    "row",
                    "scheduler",
                    "wall/CP median",
                    "p95",
                    "wide",
                    "deep",
                    "mixed",
                    "overhead ms (median)",
                ],
                rows,
            ),
            f"Capped at {capped['workers']} concurrent steps (Graham: any greedy list schedule "
            "finishes within (W - CP)/k + CP):",
            _table(
                ["row", "wall/Graham median", "p95", "within bound", "wall/max(CP, W/k) median"],
                capped_rows,
            ),
            *_sweep(r.get("latency_sweep") or {}),
            "Goals: " + ", ".join(f"{k} {_ok(v)}" for k, v in r["goals"].items()),
        ]
    )


def _sweep(sweep: dict[str, Any]) -> list[str]:
    if not sweep:
        return []
    rows = [
        [
            f"{ms} ms",
            f"{v['toolplan_engine']['median']:.3f}",
            f"{v['toolplan_engine']['p95']:.3f}",
            f"{v['oracle']['median']:.3f}",
            f"{v['oracle']['p95']:.3f}",
        ]
        for ms, v in sweep.items()
    ]
    header = ["median latency", "toolplan engine median", "p95", "asyncio floor median", "p95"]
    dags = next(iter(sweep.values()))["dags"]
    return [
        f"The engine at other tool latencies (first {dags} DAGs; wall/CP):",
        _table(header, rows),
    ]


def _overhead(r: dict[str, Any]) -> str:
    sizes = [str(s) for s in r["sizes"]]
    rows = []
    for name, row in r["rows"].items():
        if "ms_per_step" not in row:
            rows.append(
                [f"`{name}`", row["label"], *(["-"] * (2 * len(sizes) + 1)), row.get("pending", "")]
            )
            continue
        rows.append(
            [
                f"`{name}`",
                row["label"],
                *(
                    f"{row['ms_per_step'][s]:.3f}" if s in row["ms_per_step"] else "-"
                    for s in sizes
                ),
                f"{row['marginal_ms_per_step']:.3f}" if "marginal_ms_per_step" in row else "-",
                *(
                    f"{row['ratio_to_asyncio'][s]:g}x" if s in row["ratio_to_asyncio"] else "-"
                    for s in sizes
                ),
                row.get("skipped", ""),
            ]
        )
    header = [
        "row",
        "what",
        *(f"ms/step @{s}" for s in sizes),
        "marginal ms/step",
        *(f"vs asyncio @{s}" for s in sizes),
        "note",
    ]
    fixed = r.get("fixed_cost_per_execution") or {}
    fixed_rows = [
        [name, f"{v['execute_stored_plan_ms']:.1f}", f"{v['run_plan_steps_ms']:.1f}"]
        for name, v in fixed.items()
    ]
    return "\n\n".join(
        [
            _table(header, rows),
            "Fixed cost of one execution (a 1-step plan), ms: the whole `execute_stored_plan` "
            "(execution graph + checkpointer + runner) and `run_plan_steps` alone:",
            _table(["store", "execute_stored_plan", "run_plan_steps"], fixed_rows),
            "Goals: " + ", ".join(f"{k} {_ok(v)}" for k, v in r["goals"].items()),
        ]
    )


def _round_trips(r: dict[str, Any]) -> str:
    agents = ("toolplan", "react_parallel", "react_sequential")
    absolute = []
    for key, row in r["scenarios"].items():
        absolute.append(
            [
                key,
                f"{row['steps']}/{row['depth']}",
                *(
                    f"{row[a]['llm_calls']} / {row[a]['input_tokens']} / {row[a]['output_tokens']} / {row[a]['wall_s']:.2f}"
                    for a in agents
                ),
            ]
        )
    ratios = []
    for key, row in r["scenarios"].items():
        cells = [key]
        for baseline in ("react_parallel", "react_sequential"):
            vs = row[f"vs_{baseline}"]
            cells += [
                f"{vs['llm_calls']:.2f}",
                f"{vs['input_tokens']:.2f}",
                f"{vs['cost']:.2f}",
                f"{vs['wall']:.2f} ({vs['speedup']:.2f}x)",
                f"{vs['wall_without_answer']:.2f}",
            ]
        ratios.append(cells)
    med = r["median_ratio"]
    ratios.append(
        ["**median**"]
        + [
            cell
            for b in ("react_parallel", "react_sequential")
            for cell in (
                f"{med[b]['llm_calls']:.2f}",
                f"{med[b]['input_tokens']:.2f}",
                f"{med[b]['cost']:.2f}",
                f"{med[b]['wall']:.2f} ({med[b]['speedup']:.2f}x)",
                f"{med[b]['wall_without_answer']:.2f}",
            )
        ]
    )
    return "\n\n".join(
        [
            f"Scripted model: {r['llm_latency_s'] * 1000:.0f} ms per call; every tool "
            f"{r['tool_latency_s'] * 1000:.0f} ms; tokens counted with tiktoken {r['encoding']}. "
            "Cells: LLM calls / input tokens / output tokens / wall s. toolplan = the agent loop: "
            "plan + execute + the respond node's answer; 'w/o answer' = until the last step "
            "finished.",
            _table(
                [
                    "scenario",
                    "steps/depth",
                    "toolplan",
                    "ReAct (parallel calls)",
                    "ReAct (sequential)",
                ],
                absolute,
            ),
            "Ratios toolplan / ReAct (cost = "
            + r["cost_formula"]
            + "; speedup = ReAct wall / toolplan wall):",
            _table(
                [
                    "scenario",
                    "calls vs par",
                    "input vs par",
                    "cost vs par",
                    "wall vs par (speedup)",
                    "wall w/o answer vs par",
                    "calls vs seq",
                    "input vs seq",
                    "cost vs seq",
                    "wall vs seq (speedup)",
                    "wall w/o answer vs seq",
                ],
                ratios,
            ),
            "Goals: " + "; ".join(f"{k} {_ok(v)}" for k, v in r["goals"].items()),
        ]
    )


def _throughput(r: dict[str, Any]) -> str:
    rows = []
    writes = []
    for backend, row in r["backends"].items():
        if "pending" in row or "error" in row:
            rows.append([backend, "-", "-", "-", "-", row.get("pending") or row.get("error")])
            continue
        for key, value in row.items():
            if key == "update_step":
                writes.append(
                    [
                        backend,
                        *(
                            f"{value[k]['median_us']:.0f} (p95 {value[k]['p95_us']:.0f})"
                            if "median_us" in value[k]
                            else value[k].get("skipped", "-")
                            for k in ("100_steps", "1000_steps")
                        ),
                    ]
                )
                continue
            workload, workers = key.split("/")
            rows.append(
                [
                    backend,
                    workload,
                    workers,
                    f"{value['submitted_per_s']:.0f}",
                    f"{value['executed_per_s']:.1f}",
                    f"{value['steps_per_s']:.0f} steps/s",
                ]
            )
    return "\n\n".join(
        [
            f"Workload: {r['workload']}; workers: {r['worker_model']}.",
            _table(["store", "tools", "workers", "submitted/s", "executed plans/s", "note"], rows),
            "One durable step-record write (`update_step`, two per step), microseconds:",
            _table(["store", "execution of 100 steps", "execution of 1,000 steps"], writes),
        ]
    )


def _scale(r: dict[str, Any]) -> str:
    rows = [
        [
            f"{int(size):,}",
            f"{v['parse_ms']:.1f}",
            f"{v['analyze_ms']:.1f}",
            f"{v['submit_ms']:.1f}",
            f"{v['analyze_us_per_step']:.0f}",
            f"{v['submit_us_per_step']:.0f}",
            v["layers"],
            v["edges"],
        ]
        for size, v in r["validation"].items()
    ]
    execution = r["execution"]
    memory = r["memory"]
    mem_rows = [
        [
            name,
            v.get("rss_after_imports_mb", "-"),
            v.get("peak_rss_mb", "-"),
            v.get("growth_mb", v.get("error", "-")),
        ]
        for name, v in memory.items()
    ]
    return "\n\n".join(
        [
            _table(
                [
                    "steps",
                    "parse ms",
                    "analyze ms",
                    "submit ms",
                    "analyze µs/step",
                    "submit µs/step",
                    "layers",
                    "edges",
                ],
                rows,
            ),
            f"Per-step cost grows {r['per_step_growth']}x from {r['sizes'][0]:,} to {r['sizes'][-1]:,} steps "
            f"({'linear' if r['linear'] else 'NOT linear'}). Execution of a {execution['steps']:,}-step DAG "
            f"(zero-latency tools): in memory {execution['memory']['seconds']:.2f} s, SQLite "
            f"{execution['sqlite']['seconds']:.2f} s.",
            _table(["child process", "RSS after imports MB", "peak RSS MB", "growth MB"], mem_rows),
        ]
    )


def _reader(r: dict[str, Any]) -> str:
    rows = [
        [
            row["statements"],
            row["characters"],
            row["wholeUsPerStatement"],
            row["streamedUsPerStatement"],
            row["streamedMsInAll"],
        ]
        for row in r["rows"]
    ]
    header = [
        "statements",
        "characters",
        "whole: µs/statement",
        f"streamed {r['chunk']} chars at a time: µs/statement",
        "streamed: ms in all",
    ]
    return (
        _table(header, rows)
        + f"\n\nCPU time, median of {r['repeats']}: a Python answer read by the one "
        "reader, whole and as streamed. Linear: the cost per statement does not grow with the "
        "answer."
    )


def markdown(results: dict[str, Any]) -> str:
    """Every measure present in ``results`` as markdown sections."""
    meta = results.get("meta", {})
    parts = [
        f"Machine: {meta.get('nproc')} cores ({meta.get('cpu')}), {meta.get('memory')} RAM, Python "
        f"{meta.get('python')}; {meta.get('date')}; commit {meta.get('commit')}; load average at "
        f"start {meta.get('load_average')}, at end {meta.get('load_average_end')}. Command: "
        f"`{meta.get('command')}`."
    ]
    sections = [
        ("scheduling", "1. Scheduling efficiency", _scheduling),
        ("overhead", "2. Engine overhead per step", _overhead),
        ("round_trips", "3. LLM round-trips and tokens vs ReAct", _round_trips),
        ("store_throughput", "4. Store throughput", _throughput),
        ("scale", "5. Scale", _scale),
        ("reader", "6. The plan reader", _reader),
    ]
    for key, title, render in sections:
        if key in results:
            parts.append(f"### {title}\n\n{render(results[key])}")
    return "\n\n".join(parts) + "\n"


def plot(results: dict[str, Any], directory: Path) -> list[Path]:
    """Write the plots for the measures present; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    scheduling = results.get("scheduling")
    if scheduling and "samples" in scheduling:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for name, values in scheduling["samples"].items():
            if name == "shape":
                continue
            ordered = sorted(values)
            ax.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=name)
        ax.axvline(1.05, color="grey", linestyle="--", linewidth=1)
        ax.axvline(1.10, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("wall time / critical path")
        ax.set_ylabel(f"fraction of {scheduling['dags']} DAGs")
        ax.set_title("Scheduling efficiency (unbounded concurrency); dashed: 1.05, dotted: 1.10")
        ax.set_xlim(0.98, max(2.0, 1.0))
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = directory / "scheduling.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    trips = results.get("round_trips")
    if trips:
        keys = list(trips["scenarios"])
        agents = [
            ("toolplan", "toolplan"),
            ("react_parallel", "ReAct, parallel calls"),
            ("react_sequential", "ReAct, sequential"),
        ]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        width = 0.27
        for metric, ax, label in (
            ("wall_s", axes[0], "wall time (s)"),
            ("input_tokens", axes[1], "input tokens"),
        ):
            for offset, (agent, name) in enumerate(agents):
                ax.bar(
                    [i + (offset - 1) * width for i in range(len(keys))],
                    [trips["scenarios"][k][agent][metric] for k in keys],
                    width,
                    label=name,
                )
            ax.set_xticks(range(len(keys)), keys, rotation=25, ha="right", fontsize=8)
            ax.set_ylabel(label)
        axes[0].legend(fontsize=8)
        fig.suptitle(
            f"toolplan vs ReAct: scripted model, {trips['llm_latency_s'] * 1000:.0f} ms per LLM call"
        )
        fig.tight_layout()
        path = directory / "round_trips.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    scale = results.get("scale")
    if scale:
        sizes = [int(s) for s in scale["validation"]]
        fig, ax = plt.subplots(figsize=(6, 4))
        for metric, name in (
            ("analyze_ms", "analyze"),
            ("submit_ms", "submit (parse + analyze + store)"),
        ):
            ax.loglog(
                sizes, [scale["validation"][str(s)][metric] for s in sizes], marker="o", label=name
            )
        ax.loglog(
            sizes,
            [scale["validation"][str(sizes[0])]["analyze_ms"] * s / sizes[0] for s in sizes],
            linestyle=":",
            color="grey",
            label="linear",
        )
        ax.set_xlabel("steps")
        ax.set_ylabel("ms")
        ax.set_title("Validation and analysis time")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = directory / "scale.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
