"""toolplan's planner on NESTFUL (nested sequences of API calls): ``python -m bench.nestful``.

- :mod:`bench.nestful.data` — samples and specs from the ``nestful-wrapper==0.1.7`` wheel (cached
  outside the repository), each sample's 8 tools (gold functions and seeded distractors);
- :mod:`bench.nestful.tools` — specs as tools: inputs as JSON schema, outputs declared, names
  mapped both ways;
- :mod:`bench.nestful.sequence` — NESTFUL's call sequences, labels and ``$var1.field$`` references;
- :mod:`bench.nestful.plans` — gold sequences as toolplan plans (and their validity), plans as
  sequences;
- :mod:`bench.nestful.prompting` / :mod:`bench.nestful.replies` — NESTFUL's direct prompt for a
  Qwen-family model, and its replies read strictly (NESTFUL's parser) and leniently;
- :mod:`bench.nestful.metrics` — the bench's metrics, and their differences from NESTFUL's;
- :mod:`bench.nestful.official` — NESTFUL's scorer's figures, re-derived, for comparison;
- :mod:`bench.nestful.run` — the contestants, taking turns by chunks, and the summary.

Not part of ``python -m bench``: it needs a real model (``../shared/real-llm/``); the tests run it
against a scripted server (``tests/unit/test_bench_nestful.py``).
"""

from __future__ import annotations

__all__: list[str] = []
