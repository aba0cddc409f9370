"""The README's "Use from Python" section is true: its examples run, and it documents exactly
the names ``toolplan.__all__`` exports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import toolplan

README = (Path(__file__).parents[2] / "README.md").read_text()


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def documented_names() -> set[str]:
    names: set[str] = set()
    for line in section("Use from Python").splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)", first_cell))
    return names


def test_readme_documents_exactly_the_public_api() -> None:
    assert documented_names() == set(toolplan.__all__)


def test_every_public_name_has_a_docstring() -> None:
    missing = [
        name for name in toolplan.__all__ if not (getattr(toolplan, name).__doc__ or "").strip()
    ]
    assert missing == []


def runnable_blocks() -> list[str]:
    """Python blocks of the section, except illustrations that need a real model; the meta-tool
    illustration is exercised by scripts/agent_with_plan_tool.py and its test instead."""
    blocks = re.findall(r"```python\n(.*?)```", section("Use from Python"), re.DOTALL)
    return [block for block in blocks if '"openai:' not in block]


@pytest.mark.parametrize("index", range(len(runnable_blocks())))
def test_python_examples_run(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = runnable_blocks()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(Path(__file__).parents[2] / "examples")
    monkeypatch.delenv("TOOLPLAN_TOOLS", raising=False)
    monkeypatch.setenv("TOOLPLAN_STORE", f"sqlite:///{tmp_path / 'default.db'}")
    exec(
        compile(blocks[index], f"README.md python block {index}", "exec"),
        {"__name__": "__readme__"},
    )


def test_the_readme_lists_exactly_the_api_error_codes() -> None:
    from typing import get_args

    from toolplan.api.errors import ErrorCode

    table = section("GraphQL API").split("| code | when |", 1)[1].split("\n\n", 1)[0]
    documented = {
        code
        for line in table.splitlines()
        for code in re.findall(r"`([A-Z_]+)`", line.split("|")[1] if line.startswith("| `") else "")
    }
    assert documented == set(get_args(ErrorCode))
