"""Resuming without repeating --tools, the project config, and the real plan ID after Ctrl-C:
all through the real ``toolplan`` console script."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Cli, interrupt

GATED = {
    "steps": [
        {"id": "a", "tool": "gate", "parameters": {"label": "a"}},
        {"id": "b", "tool": "echo", "parameters": {"value": "{{a.label}}"}},
    ]
}


def _no_tools(cli: Cli) -> Cli:
    """The CLI with no tools chosen anywhere (no flag, no TOOLPLAN_TOOLS, no project config)."""
    del cli.env["TOOLPLAN_TOOLS"]
    return cli


def test_a_plan_submitted_with_tools_resumes_with_a_bare_execute(cli: Cli) -> None:
    _no_tools(cli)
    submitted = cli("submit", "--file", cli.write_plan(GATED), "--tools", "tests.support.tools")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.stdout.split("stored plan ")[1].split()[0]

    process = cli.popen("execute", plan_id)
    cli.wait_for_call("a", process)  # the gate step is running: Ctrl-C interrupts it
    _, err = interrupt(process)
    assert process.returncode == 130, err
    assert f"resume with `toolplan execute {plan_id}`" in err
    assert "PLAN_ID" not in err
    assert "using the tools recorded with" in err

    cli.gate.touch()
    resumed = cli("execute", plan_id)  # exactly what the hint says
    assert resumed.code == 0, resumed.stderr
    assert f"using the tools recorded with {plan_id}: --tools tests.support.tools" in (
        resumed.stderr
    )
    shown = cli("show", plan_id, "--json").json()
    assert shown["meta"]["toolSources"] == {"modules": ["tests.support.tools"], "mcp": None}
    assert shown["execution"]["status"] == "succeeded"


def test_tools_given_again_win_over_the_recorded_ones(cli: Cli) -> None:
    _no_tools(cli)
    cli.gate.touch()
    submitted = cli("submit", "--file", cli.write_plan(GATED), "--tools", "tests.support.tools")
    plan_id = submitted.stdout.split("stored plan ")[1].split()[0]
    chosen = cli("execute", plan_id, "--tools", "blog")
    assert chosen.code == 2 and "unknown tool 'gate'" in chosen.stderr
    assert "recorded" not in chosen.stderr


def test_a_worker_given_no_tools_runs_a_plan_with_its_recorded_tools(cli: Cli) -> None:
    _no_tools(cli)
    cli.gate.touch()
    submitted = cli("submit", "--file", cli.write_plan(GATED), "--tools", "tests.support.tools")
    plan_id = submitted.stdout.split("stored plan ")[1].split()[0]
    assert cli("execute", plan_id, "--enqueue").code == 0
    worked = cli("worker", "--once")
    assert worked.code == 0, worked.stderr
    assert f"tools {plan_id}: loading the tools recorded with it" in worked.stderr
    assert cli("show", plan_id, "--json").json()["execution"]["status"] == "succeeded"


def test_the_project_config_gives_every_command_the_same_tools_and_store(cli: Cli) -> None:
    _no_tools(cli)
    del cli.env["TOOLPLAN_STORE"]
    cli.gate.touch()
    (cli.tmp / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.toolplan]\n'
        'tools = ["blog", "tests.support.tools"]\nstore = "sqlite:///data/plans.db"\n'
    )
    sub = cli.tmp / "deep" / "er"
    sub.mkdir(parents=True)
    plan = cli.write_plan(GATED)
    submitted = cli("submit", "--file", plan, "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    assert (cli.tmp / "data" / "plans.db").is_file()

    from_below = Cli(sub)
    from_below.env = {**cli.env}
    ran = from_below("execute", plan_id)
    assert ran.code == 0, ran.stderr
    assert "recorded" not in ran.stderr  # the project's tools are chosen tools
    assert str(cli.tmp / "data" / "plans.db") in ran.stdout
    assert not (sub / ".toolplan").exists()


def test_without_a_project_the_nearest_toolplan_folder_is_the_default_store(cli: Cli) -> None:
    del cli.env["TOOLPLAN_STORE"]
    cli.gate.touch()
    submitted = cli("submit", "--file", cli.write_plan(GATED), "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]
    assert (cli.tmp / ".toolplan" / "toolplan.db").is_file()
    sub: Path = cli.tmp / "elsewhere"
    sub.mkdir()
    below = Cli(sub)
    below.env = {**cli.env}
    shown = below("show", plan_id)
    assert shown.code == 0, shown.stderr
    assert not (sub / ".toolplan").exists()
    missing = below("show", "plan_0000000000_nothere")
    assert missing.code != 0
    assert str(cli.tmp / ".toolplan" / "toolplan.db") in missing.stderr  # the absolute path
