"""The project config and where the data lives by default (toolplan.project)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from toolplan.config import Settings
from toolplan.errors import InvalidInput
from toolplan.project import default_store_uri, find_project, make_importable, search_folders


def test_toolplan_toml_keys_at_the_top_level_with_paths_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "toolplan.toml").write_text(
        'tools = ["blog", "mine"]\nmcp = "conf/mcp.json"\nstore = "sqlite:///data/x.db"\n'
    )
    below = tmp_path / "a" / "b"
    below.mkdir(parents=True)
    project = find_project(below)
    assert project is not None and project.path == tmp_path / "toolplan.toml"
    assert project.tools == ("blog", "mine")
    assert project.mcp == str(tmp_path / "conf" / "mcp.json")
    assert project.store == f"sqlite:///{tmp_path / 'data' / 'x.db'}"


def test_a_pyproject_without_the_table_is_not_a_project(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_project(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text('[tool.toolplan]\ntools = "blog, metrics"\n')
    project = find_project(tmp_path)
    assert project is not None and project.tools == ("blog", "metrics") and project.store is None
    assert default_store_uri(project) == f"sqlite:///{tmp_path / '.toolplan' / 'toolplan.db'}"


def test_mistakes_in_the_config_are_named(tmp_path: Path) -> None:
    (tmp_path / "toolplan.toml").write_text('tool = ["blog"]\n')
    with pytest.raises(InvalidInput, match=r"unknown key\(s\) tool .*known: tools, mcp, store"):
        find_project(tmp_path)
    (tmp_path / "toolplan.toml").write_text("tools = [1]\n")
    with pytest.raises(InvalidInput, match=r"'tools' in .* must be a list of module names"):
        find_project(tmp_path)
    (tmp_path / "toolplan.toml").write_text("tools = [\n")
    with pytest.raises(InvalidInput, match="cannot read the project config"):
        find_project(tmp_path)


def test_without_a_project_the_nearest_existing_data_folder_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    work = tmp_path / "home" / "work"
    deep = work / "src" / "pkg"
    deep.mkdir(parents=True)
    assert default_store_uri(None, deep) == f"sqlite:///{deep / '.toolplan' / 'toolplan.db'}"
    (work / ".toolplan").mkdir()
    assert default_store_uri(None, deep) == f"sqlite:///{work / '.toolplan' / 'toolplan.db'}"
    # the home folder's own .toolplan/ is not used from folders below it
    (work / ".toolplan").rmdir()
    (tmp_path / "home" / ".toolplan").mkdir()
    assert default_store_uri(None, deep) == f"sqlite:///{deep / '.toolplan' / 'toolplan.db'}"


def test_environment_wins_over_the_project_and_marks_tools_as_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "toolplan.toml").write_text('tools = ["blog"]\nstore = "sqlite:///p.db"\n')
    monkeypatch.chdir(tmp_path)
    for name in ("TOOLPLAN_TOOLS", "TOOLPLAN_STORE", "TOOLPLAN_MCP"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings.from_env()
    assert settings.tool_modules == ("blog",) and settings.tool_sources_given
    assert settings.store_uri == f"sqlite:///{tmp_path / 'p.db'}"
    assert settings.project_file == str(tmp_path / "toolplan.toml")
    monkeypatch.setenv("TOOLPLAN_STORE", "sqlite:///env.db")
    assert Settings.from_env().store_uri == "sqlite:///env.db"
    (tmp_path / "toolplan.toml").write_text("")
    assert not Settings.from_env().tool_sources_given  # the built-in defaults are not a choice


def test_the_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "toolplan.toml").write_text('tools = ["blog"]\n')
    (tmp_path / ".toolplan").mkdir()
    repo = tmp_path / "repo"
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_project(deep) is not None  # no repository yet: the shared parent's config
    (repo / ".git").mkdir()
    assert find_project(deep) is None
    assert default_store_uri(None, deep) == f"sqlite:///{deep / '.toolplan' / 'toolplan.db'}"
    assert list(search_folders(deep)) == [deep, deep.parent, repo]
    # the repository root itself is searched; a worktree's or submodule's .git is a file
    (repo / "toolplan.toml").write_text('tools = ["weather"]\n')
    (repo / ".toolplan").mkdir()
    assert find_project(deep) == find_project(repo) != find_project(tmp_path)
    (repo / ".git").rmdir()
    (repo / ".git").write_text("gitdir: /elsewhere\n")
    (repo / "toolplan.toml").unlink()
    assert find_project(deep) is None
    assert default_store_uri(None, deep) == f"sqlite:///{repo / '.toolplan' / 'toolplan.db'}"


def test_the_search_never_reaches_the_home_folder_from_below_nor_above_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    deep = home / "work" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for folder in (tmp_path, home):
        (folder / "toolplan.toml").write_text('tools = ["blog"]\n')
    assert list(search_folders(deep)) == [deep, deep.parent]
    assert find_project(deep) is None
    project = find_project(home)  # in the home folder itself, its own config is used
    assert project is not None and project.folder == home
    (home / "toolplan.toml").unlink()
    assert find_project(home) is None  # but nothing above it


def test_project_modules_never_shadow_installed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "installed": a namespace package (as langgraph is) and a regular one, on sys.path
    site, folder = tmp_path / "site", tmp_path / "project"
    (site / "tp_test_ns").mkdir(parents=True)
    (site / "tp_test_ns" / "part.py").write_text("")
    (site / "tp_test_regular").mkdir()
    (site / "tp_test_regular" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    # a project folder holding packages of the same names, and a tool module of its own
    folder.mkdir()
    (folder / "toolplan.toml").write_text('tools = ["tp_test_project_tools"]\n')
    (folder / "tp_test_project_tools.py").write_text("TOOLS = []\n")
    for name in ("tp_test_ns", "tp_test_regular"):
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text("raise RuntimeError('shadowed')\n")
    make_importable(find_project(folder))
    own = importlib.util.find_spec("tp_test_project_tools")
    assert own is not None and own.origin == str(folder / "tp_test_project_tools.py")
    for name in ("tp_test_ns", "tp_test_regular"):
        spec = importlib.util.find_spec(name)
        assert spec is not None
        assert list(spec.submodule_search_locations or ()) == [str(site / name)]
    finders = len(sys.meta_path)
    make_importable(find_project(folder))  # once is enough, however often settings are read
    assert len(sys.meta_path) == finders


def test_the_search_never_enters_a_folder_anyone_may_write_to(tmp_path: Path) -> None:
    shared = tmp_path / "shared"  # as the system temporary folder is
    deep = shared / "proj" / "src"
    deep.mkdir(parents=True)
    (shared / "toolplan.toml").write_text('tools = ["their_tools"]\n')
    (shared / ".toolplan").mkdir()
    assert find_project(deep) is not None
    shared.chmod(0o1777)
    assert list(search_folders(deep)) == [deep, deep.parent]
    assert find_project(deep) is None
    assert default_store_uri(None, deep) == f"sqlite:///{deep / '.toolplan' / 'toolplan.db'}"
    assert find_project(shared) is None  # not even when run in it
