"""What the benchmarks against a real model (``bench.bfcl``, ``bench.nestful``) share.

Both offer a benchmark's functions to the same model under names an OpenAI-compatible API
accepts, read JSON out of free text, draw seeded samples, and have the same command-line
habits: comma-separated choices checked against a list, progress on stderr, a table on stdout
that a reader may leave early, and a run's metadata beside its rows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO, TypeVar

__all__ = [
    "api_name",
    "json_values",
    "log",
    "never_run",
    "option_names",
    "read_rows",
    "round_robin",
    "run_meta",
    "seeded_sample",
    "write",
]

T = TypeVar("T")

API_NAME = re.compile(r"[^A-Za-z0-9_-]")
"""What an OpenAI-compatible API refuses in a function name (``^[a-zA-Z0-9_-]{1,64}$``)."""


def write(stream: TextIO, text: str) -> None:
    """Print a line; a reader that left (``--summarize ... | head``) is not an error, and the
    run goes on (its rows are in ``--out``)."""
    from toolplan.cli.console import stop_writing

    try:
        print(text, file=stream, flush=True)
    except BrokenPipeError:
        stop_writing(stream)


def log(message: str) -> None:
    """Progress and errors, on stderr."""
    write(sys.stderr, message)


def option_names(
    raw: str, known: Sequence[str], what: str, parser: argparse.ArgumentParser
) -> list[str]:
    """A comma-separated option's names, each one of ``known`` (else the parser's usage error)."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(known)}")
    return names


def run_meta(prog: str, argv: Sequence[str], settings: Any, **extra: Any) -> dict[str, Any]:
    """Who ran what against which model: the command, the date, the model, the commit, the load."""
    from bench.machine import machine_info

    info = machine_info()
    return {
        "command": f"python -m {prog} " + " ".join(argv),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "model": settings.planner.model,
        "structuredMethod": settings.planner.structured_method,
        "endpoint": settings.planner.openai_base_url,
        **extra,
        "commit": info.get("commit"),
        "loadAverage": info.get("load_average"),
    }


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON-lines file a run wrote."""
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def round_robin(groups: Sequence[Sequence[T]]) -> list[T]:
    """One of each group in turn, so that a slow run cut short still covers each of them."""
    out: list[T] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def seeded_sample(items: Sequence[T], size: int | None, key: str) -> list[T]:
    """``size`` items drawn with a generator seeded by ``key`` (all of them when ``size`` is
    ``None`` or larger), kept in their order so that runs read alike."""
    if size is None or size >= len(items):
        return list(items)
    chosen = set(random.Random(key).sample(range(len(items)), size))
    return [item for i, item in enumerate(items) if i in chosen]


def api_name(name: str, taken: set[str]) -> str:
    """``name`` as an API accepts it (other characters become ``_``, at most 64), made unique
    against ``taken`` with a ``_2``, ``_3``... suffix. The caller adds it to ``taken``."""
    base = API_NAME.sub("_", name)[:64] or "function"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        suffix = f"_{n}"
        candidate = base[: 64 - len(suffix)] + suffix
    return candidate


def never_run(benchmark: str) -> Callable[..., Any]:
    """A tool body for functions that are planned and scored, never executed."""

    def run(**_: Any) -> Any:
        raise RuntimeError(f"{benchmark} tools are planned, never executed")

    return run


def json_values(text: str) -> Iterator[Any]:
    """Every outermost JSON value in ``text`` that starts at a ``{`` or ``[``."""
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            yield value
            i = end
        else:
            i += 1
