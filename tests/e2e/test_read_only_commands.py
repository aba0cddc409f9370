"""Only the commands that plan or submit (``run``, ``plan``, ``submit``, ``batch``, and the
long-running ``serve`` and ``worker``) create a store. ``show``, ``list``, ``cancel``,
``approve``, ``deny``, ``execute`` and ``cache`` never do: a store that does not exist
is named, with exit 2, and nothing appears on disk (issue 42, the new-user trial)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Cli

pytestmark = pytest.mark.e2e

PLAN_ID = "plan_1732200000_abcdefghij"


@pytest.mark.parametrize(
    "args",
    [
        ("show", PLAN_ID),
        ("show", PLAN_ID, "--graph", "mermaid"),
        ("list",),
        ("cancel", PLAN_ID),
        ("approve", PLAN_ID),
        ("approve", PLAN_ID, "pay", "--enqueue"),
        ("deny", PLAN_ID, "pay", "--reason", "not today"),
        ("execute", PLAN_ID),
        ("execute", PLAN_ID, "--enqueue"),
        ("cache", "clear"),
    ],
)
def test_a_missing_store_is_named_and_never_created(cli: Cli, args: tuple[str, ...]) -> None:
    del cli.env["TOOLPLAN_STORE"]  # the default: .toolplan/ in this (unrelated) folder
    done = cli(*args)
    assert done.code == 2, done.stderr
    assert f"no toolplan store at {cli.tmp / '.toolplan' / 'toolplan.db'}" in done.stderr
    assert not (cli.tmp / ".toolplan").exists()

    missing = cli.tmp / "elsewhere" / "runs.db"
    named = cli(*args, "--store", str(missing), "--json")
    assert named.code == 2 and named.json()["exitCode"] == 2
    assert f"no toolplan store at {missing}" in named.json()["error"]
    assert not missing.parent.exists()


def test_an_existing_store_still_answers(cli: Cli) -> None:
    plan = {"steps": [{"id": "a", "tool": "echo", "parameters": {"value": 1}}]}
    submitted = cli("submit", "--file", cli.write_plan(plan), "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    assert cli("show", plan_id, "--json").json()["planId"] == plan_id
    assert [p["planId"] for p in cli("list", "--json").json()["plans"]] == [plan_id]
    assert cli("cancel", plan_id, "--json").json()["status"] == "cancelled"
    trailing = cli("show", plan_id + "\n", "--json")  # `$` let this through the ID pattern
    assert trailing.code == 2 and "is neither a plan ID" in trailing.json()["error"]


@pytest.mark.parametrize("form", ["uri", "path", "env"])
def test_a_sqlite_path_into_a_missing_folder_is_bad_input(cli: Cli, form: str) -> None:
    plan = cli.write_plan({"steps": [{"id": "a", "tool": "echo", "parameters": {"value": 1}}]})
    missing = cli.tmp / "nonexistent" / "dir"
    target = missing / "x.db"
    if form == "env":
        cli.env["TOOLPLAN_STORE"] = f"sqlite:///{target}"
        done = cli("submit", "--file", plan, "--json")
    else:
        store = f"sqlite:///{target}" if form == "uri" else str(target)
        done = cli("submit", "--file", plan, "--store", store, "--json")
    assert done.code == 2, done.stderr
    assert repr(str(missing)) in done.json()["error"] and "does not exist" in done.json()["error"]
    assert not (cli.tmp / "nonexistent").exists()


def test_the_default_store_folder_is_still_made(cli: Cli) -> None:
    del cli.env["TOOLPLAN_STORE"]
    plan = cli.write_plan({"steps": [{"id": "a", "tool": "echo", "parameters": {"value": 1}}]})
    done = cli("submit", "--file", plan, "--json")
    assert done.code == 0, done.stderr
    assert (cli.tmp / ".toolplan" / "toolplan.db").is_file()


def test_the_project_configs_store_folder_is_made_but_not_a_mistyped_one(cli: Cli) -> None:
    del cli.env["TOOLPLAN_STORE"]
    (cli.tmp / "toolplan.toml").write_text('store = "sqlite:///data/plans.db"\n')
    plan = cli.write_plan({"steps": [{"id": "a", "tool": "echo", "parameters": {"value": 1}}]})
    done = cli("submit", "--file", plan, "--json")
    assert done.code == 0, done.stderr
    assert (cli.tmp / "data" / "plans.db").is_file()  # the project's default store
    typo = cli("submit", "--file", plan, "--store", str(cli.tmp / "dta" / "plans.db"), "--json")
    assert typo.code == 2 and "does not exist" in typo.json()["error"]
    assert not (cli.tmp / "dta").exists()


def test_tools_lists_the_catalog_without_making_a_store(cli: Cli) -> None:
    # Outside a project there is no store yet: the tools are listed, without statistics.
    del cli.env["TOOLPLAN_STORE"]
    done = cli("tools", "--json")
    assert done.code == 0, done.stderr
    tools = done.json()["tools"]
    assert tools and all(tool.get("stats") is None for tool in tools)
    assert not (cli.tmp / ".toolplan").exists()
    assert cli("tools", "echo").code == 0
    assert not (cli.tmp / ".toolplan").exists()
