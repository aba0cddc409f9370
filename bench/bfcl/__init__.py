"""toolplan's planner on BFCL v4, scored by the official AST checker: ``python -m bench.bfcl``.

- :mod:`bench.bfcl.data` — entries and possible answers from the ``bfcl-eval`` wheel, seeded samples;
- :mod:`bench.bfcl.functions` — function docs as JSON-schema tools under API-safe names, and back;
- :mod:`bench.bfcl.checker` — the official AST checker, imported without its model handlers;
- :mod:`bench.bfcl.lenient` — function calls read leniently from a text reply;
- :mod:`bench.bfcl.run` — toolplan vs the same model's native tool calls and text, per entry.

Not part of ``python -m bench``: it needs a real model (``../shared/real-llm/``), and CI only
smoke-tests it against a scripted server (``tests/unit/test_bench_bfcl.py``).
"""

from __future__ import annotations

__all__: list[str] = []
