"""The benchmark's code must not rot: each measure's core runs at its smallest size.

Structure only, never speed (speed is what ``python -m bench`` reports, not what tests assert).
"""

from __future__ import annotations

from pathlib import Path

import bench
from bench import report
from bench.dags import graham_bound, random_dag
from bench.overhead import run_overhead
from bench.reader import run_reader
from bench.roundtrips import run_round_trips
from bench.scale import _child, run_scale
from bench.scenarios import SCENARIOS
from bench.scheduling import run_scheduling
from bench.throughput import run_store_throughput


def test_dags_are_seeded_and_bounded() -> None:
    dag = random_dag(3, "mixed", median_latency=0.01)
    assert dag == random_dag(3, "mixed", median_latency=0.01)
    assert 5 <= dag.size <= 40 and all(d in dag.order for deps in dag.deps.values() for d in deps)
    assert dag.critical_path <= dag.wave_time <= dag.work
    assert dag.critical_path <= graham_bound(dag, 4) <= dag.work


async def test_every_measure_runs_at_its_smallest_size(tmp_path: Path) -> None:
    results = {
        "meta": {"command": "smoke"},
        "scheduling": await run_scheduling(dags=3, median_latency=0.001, max_steps=6),
        "overhead": await run_overhead(sizes=(10,), repeats={10: 1}, backends=("memory",)),
        "round_trips": await run_round_trips(
            llm_latency=0.0, tool_delay=0.0, scenarios=SCENARIOS[:1], warmup=False
        ),
        "store_throughput": await run_store_throughput(
            plans=1,
            io_plans=1,
            io_latency=0.001,
            worker_counts=(1,),
            writes=2,
            backends=("memory",),
        ),
        "scale": await run_scale(
            sizes=(10, 20), repeats={10: 1, 20: 1}, execute_steps=10, memory=False
        ),
        "reader": await run_reader(sizes=(3,), repeats=1),
    }
    assert set(bench.MEASURES) <= set(results)

    scheduling = results["scheduling"]
    assert scheduling["dags"] == 3 and set(scheduling["unbounded"]) >= {
        "toolplan_engine",
        "waves",
        "langgraph_send",
    }
    assert all(v > 0.9 for v in scheduling["samples"]["toolplan_schedule"])

    overhead = results["overhead"]["rows"]
    assert overhead["memory"]["ms_per_step"]["10"] > 0 and "sqlite" not in overhead

    trip = results["round_trips"]["scenarios"]["blog_chain"]
    assert trip["toolplan"]["planning_llm_calls"] == 1 and trip["toolplan"]["llm_calls"] == 2
    assert trip["react_sequential"]["llm_calls"] == 4  # three tool turns and the answer
    assert trip["toolplan"]["input_tokens"] > 0 and trip["react_parallel"]["input_tokens"] > 0

    throughput = results["store_throughput"]["backends"]["memory"]
    assert (
        throughput["zero_latency/1w"]["executed_per_s"] > 0
        and "median_us" in throughput["update_step"]["100_steps"]
    )

    assert results["scale"]["validation"]["20"]["analyze_ms"] > 0
    assert _child("analyze", 10)["peak_rss_mb"] > 0

    text = report.markdown(results)
    assert all(f"### {n}." in text for n in range(1, 6))
    assert {p.name for p in report.plot(results, tmp_path)} == {
        "scheduling.png",
        "round_trips.png",
        "scale.png",
    }


async def test_replan_recovery_with_the_scripted_model() -> None:
    """The scripted replanner fixes a plan only when the replan message carries the tool's error,
    so every designed failure recovering shows the loop carries it (checked on two kinds)."""
    from bench.replan_recovery import run_recovery

    report = await run_recovery(
        real=False, only=["metric_cpu", "blog_missing_author"], log=lambda _: None
    )
    assert report["queries"] == 2 and report["recovered"] == 2
    for row in report["rows"]:
        assert row["statuses"] == ["failed", "succeeded"] and row["llmCalls"] == 4
        assert [c["kind"] for c in row["calls"]] == ["plan", "respond", "plan", "respond"]


async def test_the_issue_14_measures_run_at_their_smallest_size() -> None:
    from bench.estimates import run as run_estimates
    from bench.timeouts import run as run_timeouts

    timeouts = run_timeouts(trials=2, calls=20)
    assert {row["sigma"] for row in timeouts["rows"]} == {0.25, 0.5, 1.0, 1.5}
    assert all(0 <= row["rule_only"]["mean"] <= 1 for row in timeouts["rows"])

    estimates = await run_estimates(1)
    for spread in ("stable", "noisy"):
        (row,) = estimates[spread]["rows"]
        assert row["basis"] == "history" and row["estimate_ms"] > 0 and row["actual_ms"] > 0


def test_reuse_lookup_runs_at_its_smallest_size() -> None:
    from bench.reuse_lookup import lookup_costs

    for kind in ("memory", "sqlite"):
        rows = lookup_costs(kind, [3, 6], repeats=1)  # it asserts which lookups find a plan
        assert list(rows) == ["3", "6"]
        assert all(len(row) == 5 and min(row.values()) >= 0 for row in rows.values())


async def test_map_overhead_runs_at_its_smallest_size() -> None:
    from bench.map_overhead import foreach_plan, run_map_overhead

    assert foreach_plan(3)["steps"][0]["forEach"] == [0, 1, 2]
    result = await run_map_overhead(sizes=(2,), repeats=1, backends=("memory",))
    row = result["rows"]["memory/2"]
    assert row["calls"] == 2 and row["plain_ms_per_call"] > 0 and row["foreach_ms_per_call"] > 0


async def test_the_ordering_measures_run_at_their_smallest_size() -> None:
    from bench.ordering import run_ordering_pass, run_writes

    passes = run_ordering_pass(sizes=(10,), repeats=1)
    assert passes["rows"][0]["steps"] == 10 and passes["rows"][0]["orderingPassUs"] >= 0
    writes = await run_writes(calls=2, repeats=1)
    assert [row["effect"] for row in writes["rows"]] == ["read", "commutative write", "write"]
