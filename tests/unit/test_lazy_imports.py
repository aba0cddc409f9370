"""The CLI and ``import toolplan`` stay cheap: heavy dependencies load only in the commands that
need them. Each check runs in a fresh interpreter, since this test process has imported them all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("langchain_openai", "strawberry", "uvicorn", "mcp", "langsmith")


def _loaded_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    script = (
        f"import sys\n{statement}\n"
        f"import json; print(json.dumps([m for m in {list(modules)!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_importing_the_cli_pulls_in_no_heavy_dependency() -> None:
    assert _loaded_after("import toolplan.cli", HEAVY) == []


def test_importing_the_package_pulls_in_neither_langchain_nor_langgraph() -> None:
    assert _loaded_after("import toolplan", ("langchain_core", "langgraph", *HEAVY)) == []


@pytest.mark.parametrize("name", ["Plan", "ToolCatalog", "execute_plan", "ExecutionOptions"])
def test_public_names_still_resolve(name: str) -> None:
    import toolplan

    assert name in toolplan.__all__
    assert getattr(toolplan, name).__name__ == name


def test_unknown_name_is_an_attribute_error() -> None:
    import toolplan

    with pytest.raises(AttributeError, match="no_such_name"):
        toolplan.no_such_name  # noqa: B018 - the attribute access is the test


def test_every_public_name_resolves() -> None:
    import toolplan
    import toolplan.runs

    for package in (toolplan, toolplan.runs):
        for name in package.__all__:
            assert getattr(package, name) is not None, name
