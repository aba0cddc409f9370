"""Which project a command belongs to, through the real ``toolplan`` console script: a config in
a shared parent folder must not change what the command imports (issue 29, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Cli

MY_TOOLS = '''
from langchain_core.tools import tool


@tool
def shout(text: str) -> str:
    """Return `text` in capitals."""
    return text.upper()


TOOLS = [shout]
'''

SHOUT = {"steps": [{"id": "loud", "tool": "shout", "parameters": {"text": "hi"}}]}


def _project_with_a_fake_langgraph(folder: Path) -> None:
    """A project folder holding a ``langgraph/`` package that fails on import, as a stray folder
    in a shared parent (the temporary folder) might, next to the project's own tool module."""
    (folder / "toolplan.toml").write_text('tools = ["my_tools"]\n')
    (folder / "my_tools.py").write_text(MY_TOOLS)
    fake = folder / "langgraph"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        'raise RuntimeError("the langgraph/ folder of the project was imported")\n'
    )


def _below(cli: Cli, *parts: str) -> Cli:
    """``cli`` run from a folder below its own, with no tools chosen but the project's."""
    below = Cli(cli.tmp.joinpath(*parts))
    below.tmp.mkdir(parents=True, exist_ok=True)
    below.env = {**cli.env}
    del below.env["TOOLPLAN_TOOLS"]
    return below


def test_a_project_folder_never_shadows_an_installed_package(cli: Cli) -> None:
    _project_with_a_fake_langgraph(cli.tmp)
    below = _below(cli, "a", "b", "c")
    ran = below("run", "--file", below.write_plan(SHOUT), "--json")
    assert ran.code == 0, ran.stderr  # the installed langgraph ran the plan
    assert "langgraph/ folder of the project" not in ran.stderr
    assert ran.json()["outputs"] == {"loud": "HI"}  # and the project's own module still imports


def test_a_project_above_the_repository_root_is_not_used(cli: Cli) -> None:
    _project_with_a_fake_langgraph(cli.tmp)
    (cli.tmp / "repo" / ".git").mkdir(parents=True)
    below = _below(cli, "repo", "src")
    ran = below("run", "--file", below.write_plan(SHOUT), "--json")
    assert ran.code == 2, ran.stderr
    assert "unknown tool 'shout'" in ran.stdout  # my_tools was never loaded: no project here
    listed = below("tools", "--json")
    assert listed.code == 0, listed.stderr
    assert "shout" not in {t["name"] for t in json.loads(listed.stdout)["tools"]}
