"""Built-in offline toolsets with deterministic data, for demos, tests and benchmarks.

Use them by module name (``--tools toolplan.builtin_tools.blog``) or short name (``--tools blog``).
"""
