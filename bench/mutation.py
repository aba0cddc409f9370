"""Mutation testing of the engine, approvals, cancel and items (issue 42): does the suite see a
small, realistic bug?

Each :class:`~bench.mutations.Mutation` (the list is :mod:`bench.mutations`) is one bug a
person could plausibly write: an exact snippet of a module and what it becomes (an off-by-one,
a status forgotten in a tuple, a shield dropped, a check that reads one field too few). For each, the module is changed **in a temporary copy of the
repository** (the working tree is never touched, Ctrl-C included), the test files that cover the
module run there with ``-x -q`` under a timeout, and the mutation is

- ``killed``: a test failed, as it should;
- ``survived``: every test passed: no test pins the behaviour the snippet implements;
- ``timeout``: the tests hung or ran past ``--timeout`` (counted as killed: a person would notice);
- ``not-applicable``: the snippet is not in the module exactly once (the code changed since the
  mutation was written: update or drop the mutation; never a crash);
- ``error``: the covering tests fail without any mutation (``--no-baseline`` skips that check),
  or pytest could not run them (exit code 2-5).

The kill rate is ``(killed + timeout) / (killed + survived + timeout)``.

Run it from the repository root; it is slow on purpose and belongs beside the benchmarks, not in
CI (nothing calls it)::

    python -m bench.mutation                       # every mutation, SQLite only (~20 min, 2 cores)
    python -m bench.mutation --list                # the mutations, one a line
    python -m bench.mutation --only cancel-expired-lease,items-resume-failed
    python -m bench.mutation --json out.json       # also one JSON row per mutation
    python -m bench.mutation --mongodb             # the covering tests' MongoDB cases too
    python -m bench.mutation --without tests/unit/test_x.py   # what the suite caught before it

The copy runs tests with ``PYTHONPATH`` pointing at its own ``packages/``, so in-process tests and
CLI subprocesses alike import the mutated code, and with no bytecode written (a restored module
is never served from a stale ``.pyc``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from bench.mutations import MUTATIONS, Mutation

__all__ = [
    "MUTATIONS",
    "Mutation",
    "Result",
    "Status",
    "classify",
    "kill_rate",
    "main",
    "mutate",
    "table",
    "without",
]

REPO = Path(__file__).resolve().parents[1]

Status = Literal["killed", "survived", "timeout", "not-applicable", "error"]


@dataclass(frozen=True)
class Result:
    """How one mutation fared."""

    name: str
    path: str
    status: Status
    seconds: float
    description: str
    detail: str = ""
    """The first failing test (killed), or why it could not run."""


# -- the pure parts ---------------------------------------------------------------------------


def mutate(text: str, mutation: Mutation) -> str | None:
    """``text`` with the mutation applied; ``None`` when its snippet is not in ``text`` exactly
    once (the code changed since the mutation was written: not applicable)."""
    if text.count(mutation.original) != 1:
        return None
    return text.replace(mutation.original, mutation.mutated)


def without(mutation: Mutation, left_out: Iterable[str]) -> Mutation:
    """``mutation`` with the test files ``left_out`` removed from its covering set."""
    dropped = set(left_out)
    return replace(mutation, tests=tuple(t for t in mutation.tests if t not in dropped))


def classify(returncode: int | None, *, timed_out: bool) -> Status:
    """What pytest's exit says about a mutation: 1 (tests failed) killed it, 0 let it survive;
    anything else (2 interrupted, 3 internal error, 4 usage error, 5 no tests) is an error."""
    if timed_out:
        return "timeout"
    if returncode == 0:
        return "survived"
    if returncode == 1:
        return "killed"
    return "error"


def kill_rate(results: Iterable[Result]) -> float | None:
    """``(killed + timeout) / (killed + survived + timeout)``; ``None`` when none ran."""
    counted = [r for r in results if r.status in ("killed", "survived", "timeout")]
    if not counted:
        return None
    return sum(1 for r in counted if r.status != "survived") / len(counted)


def table(results: Sequence[Result]) -> str:
    """A Markdown table of ``results`` and a summary line with the kill rate."""
    lines = [
        "| mutation | module | result | s | the bug | detail |",
        "|---|---|---|---:|---|---|",
    ]
    for r in results:
        module = r.path.removeprefix("packages/toolplan/")
        detail = r.detail.replace("|", "\\|")
        lines.append(
            f"| `{r.name}` | {module} | {r.status} | {r.seconds:.0f} | {r.description} | {detail} |"
        )
    counts = {status: sum(1 for r in results if r.status == status) for status in _ORDER}
    rate = kill_rate(results)
    shown = "n/a" if rate is None else f"{rate:.0%}"
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    lines += ["", f"kill rate {shown} ({summary})"]
    return "\n".join(lines)


_ORDER: tuple[Status, ...] = ("killed", "timeout", "survived", "not-applicable", "error")


# -- running ----------------------------------------------------------------------------------


def _tracked_files(source: Path) -> list[str]:
    """The files of the working tree git knows or would add (ignored ones left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=source,
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in listed.decode().split("\0") if name]


def make_copy(source: Path, dest: Path) -> None:
    """Copy the working tree at ``source`` into ``dest`` for mutating.

    The copy's packages are also linked at its root: the end-to-end helpers start CLI
    subprocesses with ``PYTHONPATH`` set to the repository root, and they must import the
    copy's (mutated) code, not the editable install's. The local MongoDB server install
    (``.toolplan-dev``) is shared, not copied.
    """
    for name in _tracked_files(source):
        origin = source / name
        if not origin.is_file():
            continue  # deleted in the working tree, not yet in the index
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target)
    for package in sorted((dest / "packages").iterdir()):
        if package.is_dir() and not (dest / package.name).exists():
            (dest / package.name).symlink_to(package, target_is_directory=True)
    tools = source / ".toolplan-dev"
    if tools.is_dir():
        (dest / ".toolplan-dev").symlink_to(tools, target_is_directory=True)


def _environment(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    inherited = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(copy / "packages"), str(copy), *([inherited] if inherited else [])]
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1].split(" - ", 1)[0][:160]
    return ""


def run_tests(
    copy: Path, tests: Sequence[str], *, timeout: float, extra: Sequence[str] = ()
) -> tuple[int | None, bool, str]:
    """Run ``tests`` in ``copy`` with ``-x -q``: (exit code, timed out, output). On a timeout
    (or Ctrl-C) the whole process group the run started is killed, its CLI subprocesses too."""
    present = [t for t in tests if (copy / t).is_file()]
    command = [
        sys.executable,
        "-m",
        "pytest",
        *present,
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        *extra,
    ]
    process = subprocess.Popen(
        command,
        cwd=copy,
        env=_environment(copy),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, False, output
    except subprocess.TimeoutExpired:
        _kill_group(process)
        output, _ = process.communicate()
        return None, True, output
    except BaseException:
        _kill_group(process)
        process.wait()
        raise


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def planted(copy: Path, mutation: Mutation) -> Iterator[bool]:
    """The mutation applied to the copy for the duration of the block (``False`` when it is not
    applicable); the module is restored on the way out, whatever happens (Ctrl-C too)."""
    module = copy / mutation.path
    if not module.is_file():
        yield False
        return
    original = module.read_text(encoding="utf-8")
    changed = mutate(original, mutation)
    if changed is None:
        yield False
        return
    try:
        module.write_text(changed, encoding="utf-8")
        yield True
    finally:
        module.write_text(original, encoding="utf-8")


def run_mutation(
    copy: Path, mutation: Mutation, *, timeout: float, extra: Sequence[str] = ()
) -> Result:
    """Plant ``mutation`` in ``copy``, run its covering tests, restore the module."""
    started = time.monotonic()
    with planted(copy, mutation) as applied:
        if not applied:
            return Result(
                mutation.name,
                mutation.path,
                "not-applicable",
                0.0,
                mutation.description,
                "snippet not found exactly once in the module",
            )
        code, timed_out, output = run_tests(copy, mutation.tests, timeout=timeout, extra=extra)
    status = classify(code, timed_out=timed_out)
    detail = _first_failure(output) if status == "killed" else ""
    if status == "error":
        detail = f"pytest exit {code}: " + (output.strip().splitlines() or [""])[-1][:160]
    return Result(
        mutation.name,
        mutation.path,
        status,
        time.monotonic() - started,
        mutation.description,
        detail,
    )


def _baseline(
    copy: Path, mutations: Sequence[Mutation], *, timeout: float, extra: Sequence[str]
) -> dict[tuple[str, ...], str]:
    """Each distinct set of covering tests run once unmutated: the sets that fail (why)."""
    broken: dict[tuple[str, ...], str] = {}
    for tests in dict.fromkeys(m.tests for m in mutations):
        code, timed_out, output = run_tests(copy, tests, timeout=timeout, extra=extra)
        if timed_out or code != 0:
            why = "timed out" if timed_out else f"exit {code}: {_first_failure(output)}"
            broken[tests] = f"the covering tests fail without the mutation ({why})"
            print(f"baseline FAILED for {len(tests)} files: {why}", file=sys.stderr)
    return broken


def main(argv: Sequence[str] | None = None) -> int:
    """Run the mutations; print the table and the kill rate (and write JSON rows on request)."""
    parser = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated mutation names")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutation")
    parser.add_argument("--json", type=Path, help="write one JSON row per mutation here")
    parser.add_argument(
        "--mongodb", action="store_true", help="run the covering tests' MongoDB cases too"
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip running the covering tests unmutated"
    )
    parser.add_argument("--source", type=Path, default=REPO, help="the working tree to copy")
    parser.add_argument(
        "--without",
        default="",
        help="comma-separated test files left out of every covering set (what the suite "
        "caught before they were written)",
    )
    args = parser.parse_args(argv)

    chosen = list(MUTATIONS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(names) - {m.name for m in MUTATIONS})
        if unknown:
            parser.error(f"unknown mutation(s) {', '.join(unknown)}; see --list")
        chosen = [m for m in MUTATIONS if m.name in names]
    left_out = {t.strip() for t in args.without.split(",") if t.strip()}
    chosen = [without(m, left_out) for m in chosen]
    if args.list:
        for m in chosen:
            print(f"{m.name:40} {m.path.removeprefix('packages/toolplan/'):28} {m.description}")
        return 0

    extra = [] if args.mongodb else ["-m", "not mongodb"]
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="toolplan-mutation-") as tmp:
        copy = Path(tmp) / "repo"
        make_copy(args.source.resolve(), copy)
        broken = (
            {} if args.no_baseline else _baseline(copy, chosen, timeout=args.timeout, extra=extra)
        )
        for index, mutation in enumerate(chosen, 1):
            if mutation.tests in broken:
                result = Result(
                    mutation.name,
                    mutation.path,
                    "error",
                    0.0,
                    mutation.description,
                    broken[mutation.tests],
                )
            else:
                result = run_mutation(copy, mutation, timeout=args.timeout, extra=extra)
            results.append(result)
            print(
                f"[{index}/{len(chosen)}] {result.status:14} {result.seconds:6.1f}s  "
                f"{mutation.name}  {result.detail}",
                flush=True,
            )
            if args.json is not None:  # written as it goes: a long run stopped keeps its rows
                args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
