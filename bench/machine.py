"""What the numbers were measured on: cores, memory, CPU, Python, load, versions, commit."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["machine_info"]

_PACKAGES = (
    "toolplan",
    "langgraph",
    "langchain",
    "langchain-core",
    "langgraph-checkpoint-sqlite",
    "pymongo",
)


def _run(*command: str) -> str:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except OSError:
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_total() -> str:
    lines = _run("free", "-h").splitlines()
    return lines[1].split()[1] if len(lines) > 1 else "unknown"


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """A JSON-ready description of this machine and checkout, with the current load average."""
    root = Path(__file__).resolve().parents[1]
    commit = _run("git", "-C", str(root), "rev-parse", "--short", "HEAD")
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": _run("nproc") or str(os.cpu_count()),
        "memory": _memory_total(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "commit": commit,
        "versions": {name: _version(name) for name in _PACKAGES},
    }
