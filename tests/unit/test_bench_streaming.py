"""``bench.streaming`` runs end to end at a small time scale: every run succeeds, the streamed
runs adopt all six early calls, and plan-then-execute starts none (the figures are the
benchmark's, not asserted here)."""

from __future__ import annotations

from bench.streaming import run_scripted


async def test_the_scripted_bench_runs_both_modes_on_both_shapes() -> None:
    report = await run_scripted(scale=0.02, repeats=1, log=lambda _: None)
    for shape in ("chain", "fan-out"):
        rows = report[shape]["rows"]
        assert [r["mode"] for r in rows] == ["streamed", "plan-then-execute"]
        assert all(r["status"] == "succeeded" and r["toolCalls"] == 6 for r in rows)
        assert [r["startedEarly"] for r in rows] == [6, 0]
        assert {"speedup", "withinBound", "atLeast1.5x"} <= set(report[shape])
