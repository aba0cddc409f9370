"""toolplan's benchmark suite: ``python -m bench [--quick] [--json]``.

Six measures, each a module with one ``run_*`` coroutine that returns a JSON-ready dict:

- :mod:`bench.scheduling` — wall time / critical path on seeded random DAGs, against a wave
  (superstep) reference, a LangGraph ``Send`` StateGraph and the LangGraph functional API;
- :mod:`bench.overhead` — engine overhead per step with zero-latency tools, per store;
- :mod:`bench.roundtrips` — LLM calls, tokens and wall time against a ReAct agent;
- :mod:`bench.throughput` — plans per second through the store queue, 1 and 4 workers;
- :mod:`bench.scale` — validation/analysis time and memory for 100 to 10,000 steps;
- :mod:`bench.reader` — the plan reader's CPU per statement, an answer read whole and streamed.

The benchmark is not part of the test run; ``tests/unit/test_bench_smoke.py`` keeps it importable.
"""

from __future__ import annotations

__all__ = ["MEASURES"]

MEASURES = ("scheduling", "overhead", "round_trips", "store_throughput", "scale", "reader")
"""Keys of the ``--json`` object, one per measure, in the order they run."""
