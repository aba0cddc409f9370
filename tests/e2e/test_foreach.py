"""Maps and branches through the CLI: ``forEach`` over a list output, ``when`` conditions, their
validation errors (exit 2) and a kill -9 in the middle of a map.

Every test of the contract runs on SQLite and on MongoDB; the documented example on SQLite only.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli, wait_for

pytestmark = pytest.mark.e2e

BOTH = pytest.mark.parametrize(
    "cli", ["sqlite", pytest.param("mongodb", marks=pytest.mark.mongodb)], indirect=True
)


@pytest.fixture
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    if getattr(request, "param", "sqlite") == "mongodb":
        return Cli(tmp_path, store_uri=request.getfixturevalue("mongodb_uri"))
    return Cli(tmp_path)


def _run(cli: Cli, plan: dict[str, Any], *args: str) -> Any:
    done = cli("run", "--file", cli.write_plan(plan), "--json", *args)
    assert done.code in (0, 1), done.stderr
    return done


LABELS = ["a", "b", "c", "d", "e"]

MAP = {
    "steps": [
        {"id": "labels", "tool": "echo", "parameters": {"value": {"items": LABELS}}},
        {
            "id": "each",
            "tool": "sleepy",
            "forEach": "{{labels.items}}",
            "parameters": {"label": "{{$index}}:{{$item}}"},
        },
        {"id": "second", "tool": "echo", "parameters": {"value": "{{each[1].label}}"}},
    ]
}


@BOTH
def test_a_map_over_five_items(cli: Cli) -> None:
    done = _run(cli, MAP)
    assert done.code == 0, done.stdout
    result = done.json()
    step = next(s for s in result["steps"] if s["id"] == "each")
    assert step["status"] == "succeeded"
    assert step["output"] == [
        {"label": f"{i}:{label}", "slept": 0.0} for i, label in enumerate(LABELS)
    ]
    assert [(i["index"], i["status"], i["attempts"]) for i in step["items"]] == [
        (i, "succeeded", 1) for i in range(5)
    ]
    assert result["outputs"]["second"] == "1:b"
    calls = [c for c in cli.calls() if c["step"] == "each" and c["event"] == "start"]
    assert sorted(c["item"] for c in calls) == list(range(5))
    assert {c["key"] for c in calls} == {f"{result['planId']}:each[{i}]" for i in range(5)}

    table = cli("show", result["planId"])
    assert table.code == 0
    assert "5/5 items" in table.stdout


@BOTH
def test_an_empty_list_succeeds_with_no_call(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "labels", "tool": "echo", "parameters": {"value": []}},
            {
                "id": "each",
                "tool": "sleepy",
                "forEach": "{{labels}}",
                "parameters": {"label": "{{$item}}"},
            },
        ]
    }
    done = _run(cli, plan)
    assert done.code == 0
    step = done.json()["steps"][1]
    assert (step["status"], step["output"], step["items"]) == ("succeeded", [], [])
    assert not [c for c in cli.calls() if c["step"] == "each"]


@BOTH
def test_a_list_over_the_limit_fails_before_any_call(cli: Cli) -> None:
    cli.env["TOOLPLAN_MAX_ITEMS"] = "4"
    done = _run(cli, MAP)
    assert done.code == 1
    result = done.json()
    step = next(s for s in result["steps"] if s["id"] == "each")
    assert step["status"] == "failed"
    assert "has 5 items, more than the limit of 4 (TOOLPLAN_MAX_ITEMS)" in step["error"]
    assert not [c for c in cli.calls() if c["step"] == "each"]
    assert next(s for s in result["steps"] if s["id"] == "second")["status"] == "skipped"

    own = {**MAP, "steps": [dict(s) for s in MAP["steps"]]}
    own["steps"][1]["maxItems"] = 3
    cli.env.pop("TOOLPLAN_MAX_ITEMS")
    step = next(s for s in _run(cli, own).json()["steps"] if s["id"] == "each")
    assert "has 5 items, more than the limit of 3 (its maxItems)" in step["error"]


@BOTH
def test_failed_items_fail_the_step_and_keep_the_others(cli: Cli) -> None:
    plan = {
        "steps": [
            {
                "id": "each",
                "tool": "lookup",
                "forEach": ["x", "bad", "y", "bad"],
                "parameters": {"key": "{{$item}}"},
            },
            {"id": "after", "tool": "echo", "parameters": {"value": "{{each}}"}},
        ]
    }
    done = _run(cli, plan, "--no-cache")
    assert done.code == 1
    each, after = done.json()["steps"]
    assert each["status"] == "failed"
    assert each["error"].startswith("items 1, 3 of 4 failed: [1] ")
    assert [i["status"] for i in each["items"]] == ["succeeded", "failed", "succeeded", "failed"]
    assert each["output"][0]["key"] == "x" and each["output"][1] is None
    assert after["status"] == "skipped"
    table = cli("show", done.json()["planId"]).stdout
    assert "2/4 items" in table


BRANCH = {
    "steps": [
        {"id": "cpu", "tool": "echo", "parameters": {"value": {"high": True, "none": []}}},
        {
            "id": "incident",
            "tool": "echo",
            "when": "{{cpu.high}}",
            "parameters": {"value": "open"},
        },
        {
            "id": "calm",
            "tool": "echo",
            "when": {"not": "{{cpu.high}}"},
            "parameters": {"value": "calm"},
        },
        {"id": "empty", "tool": "echo", "when": "{{cpu.none}}", "parameters": {"value": 1}},
        {"id": "after_calm", "tool": "echo", "parameters": {"value": "{{calm}}"}},
    ]
}


@BOTH
def test_when_true_false_and_negated_a_condition_skipped_plan_exits_0(cli: Cli) -> None:
    done = _run(cli, BRANCH)
    assert done.code == 0, done.stdout
    result = done.json()
    assert result["status"] == "succeeded"
    steps = {s["id"]: s for s in result["steps"]}
    assert steps["incident"]["status"] == "succeeded"
    assert (steps["calm"]["status"], steps["calm"]["reason"]) == ("skipped", "condition")
    assert "condition {\"not\": '{{cpu.high}}'} was false" in steps["calm"]["error"]
    assert steps["empty"]["reason"] == "condition"
    assert "condition '{{cpu.none}}' was false ({{cpu.none}} is [])" in steps["empty"]["error"]
    assert steps["after_calm"]["reason"] == "condition"
    assert "the condition of 'calm' was false" in steps["after_calm"]["error"]
    called = {c["step"] for c in cli.calls()}
    assert "incident" in called and not called & {"calm", "empty", "after_calm"}


@BOTH
def test_a_literal_false_condition_and_a_failure_elsewhere(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "never", "tool": "echo", "when": False, "parameters": {"value": 1}},
            {"id": "broken", "tool": "business_error", "parameters": {"message": "no"}},
            {"id": "ok", "tool": "echo", "parameters": {"value": 2}},
        ]
    }
    done = _run(cli, plan)
    assert done.code == 1
    assert done.json()["status"] == "partial"


@BOTH
def test_a_map_then_a_branch_on_its_result(cli: Cli) -> None:
    plan = {
        "steps": [
            *MAP["steps"][:2],
            {
                "id": "report",
                "tool": "echo",
                "when": "{{each}}",  # a list: "if there were items" (text is no yes/no)
                "parameters": {"value": "last was {{each[4].label}}"},
            },
        ]
    }
    done = _run(cli, plan)
    assert done.code == 0
    assert done.json()["outputs"]["report"] == "last was 4:e"


# -- validation: exit 2, every problem at once -------------------------------------------------


@BOTH
def test_every_validation_error_at_once_exits_2(cli: Cli) -> None:
    plan = {
        "steps": [
            {"id": "posts", "tool": "listBlogs", "parameters": {}},
            {
                "id": "loose",
                "tool": "echo",
                "parameters": {"value": "{{$item}} at {{$index}}"},
            },
            {
                "id": "unknown",
                "tool": "createComment",
                "forEach": "{{post.blogs}}",
                "when": "{{chek.ok}}",
                "parameters": {"blogId": "{{$item._id}}", "text": "x"},
            },
            {
                "id": "not_a_list",
                "tool": "createComment",
                "forEach": "{{posts}}",
                "parameters": {"blogId": "x", "text": "x"},
            },
            {
                "id": "bad_path",
                "tool": "createComment",
                "forEach": "{{posts.blogs}}",
                "parameters": {"blogId": "{{$item.id}}", "text": "x"},
            },
            {
                "id": "too_long",
                "tool": "echo",
                "forEach": [1, 2, 3],
                "maxItems": 2,
                "parameters": {"value": "{{$item}}"},
            },
        ]
    }
    done = cli("run", "--file", cli.write_plan(plan))
    assert done.code == 2
    text = done.stderr + done.stdout
    for expected in (
        "'{{$item}}' is only defined in a step with forEach",
        "'{{$index}}' is only defined in a step with forEach",
        "forEach '{{post.blogs}}' names unknown step 'post'",
        "when '{{chek.ok}}' names unknown step 'chek'",
        "forEach '{{posts}}' is an object with keys blogs, count, not a list",
        "did you mean {{$item._id}}?",
        "forEach lists 3 items, more than the limit of 2 (its maxItems)",
    ):
        assert expected in text, (expected, text)
    assert not cli.calls()


# -- kill -9 in the middle of a map, then resume -----------------------------------------------


@BOTH
def test_kill_in_the_middle_of_a_map_then_resume_reruns_no_finished_item(cli: Cli) -> None:
    cli.env["TOOLPLAN_CONCURRENCY"] = "1"
    plan = {
        "steps": [
            {
                "id": "each",
                "tool": "gate_if",
                "forEach": [{"label": label, "wait": label == "c"} for label in LABELS],
                "parameters": {"label": "{{$item.label}}", "wait": "{{$item.wait}}"},
            },
            {"id": "last", "tool": "echo", "parameters": {"value": "{{each[2].label}}"}},
        ]
    }
    submitted = cli("submit", "--file", cli.write_plan(plan), "--json")
    assert submitted.code == 0, submitted.stderr
    plan_id = submitted.json()["planId"]

    process = cli.popen("execute", plan_id, "--json")
    wait_for(lambda: any(c.get("label") == "c" for c in cli.calls()), "item 2 to start", process)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)

    shown = cli("show", plan_id, "--json").json()
    each = next(s for s in shown["execution"]["steps"] if s["id"] == "each")
    assert each["status"] == "running"
    assert [i["status"] for i in each["items"]] == [
        "succeeded",
        "succeeded",
        "running",
        "pending",
        "pending",
    ]

    cli.gate.touch()
    resumed = cli("execute", plan_id, "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["outputs"]["last"] == "c"
    starts = [c["label"] for c in cli.calls() if c["event"] == "start"]
    assert starts.count("a") == 1 and starts.count("b") == 1  # finished: never called again
    assert starts.count("c") == 2  # the running item runs again, with the same key
    assert starts.count("d") == 1 and starts.count("e") == 1
    keys = {c["key"] for c in cli.calls() if c.get("label") == "c"}
    assert keys == {f"{plan_id}:each[2]"}


def test_the_documented_plan_maps_then_branches(cli: Cli) -> None:
    # The plan format page's plan writes the posts it maps over (tests/e2e/test_readme_examples.py
    # runs every documented plan; this one also checks what it made).
    page = (Path(__file__).parents[2] / "docs" / "plans.md").read_text()
    start = page.index("A plan that writes two posts, maps over the list of them")
    begin = page.index("```json\n", start) + 8
    block = page[begin : page.index("\n```", begin)]
    plan = json.loads(block)
    done = _run(cli, plan)
    assert done.code == 0, done.stdout
    steps = {s["id"]: s for s in done.json()["steps"]}
    assert [o["text"] for o in steps["comments"]["output"]] == ["Reviewed (0)", "Reviewed (1)"]
    assert steps["report"]["status"] == "succeeded"
    assert (steps["nothing"]["status"], steps["nothing"]["reason"]) == ("skipped", "condition")


def test_a_literal_list_over_the_configured_limit_is_refused_before_anything_runs(
    cli: Cli,
) -> None:
    plan = {
        "steps": [
            {
                "id": "each",
                "tool": "echo",
                "forEach": [1, 2, 3],
                "parameters": {"value": "{{$item}}"},
            }
        ]
    }
    cli.env["TOOLPLAN_MAX_ITEMS"] = "2"  # validation reads the setting, as the run does
    refused = cli("run", "--file", cli.write_plan(plan), "--json")
    assert refused.code == 2, refused.stderr
    assert "forEach lists 3 items, more than the limit of 2 (TOOLPLAN_MAX_ITEMS)" in refused.stderr
    assert not cli.calls()
    cli.env.pop("TOOLPLAN_MAX_ITEMS")
    assert cli("run", "--file", cli.write_plan(plan), "--json").code == 0  # the default: 100


@BOTH
def test_a_plans_max_items_cannot_lift_the_operators_ceiling(cli: Cli) -> None:
    """Issue 42: under TOOLPLAN_MAX_ITEMS=5 a plan's own maxItems of 1000 is no way around the
    limit: a literal list of 6 is refused at validation (exit 2, nothing stored or run), and a
    list known only at run time fails its step before any call."""
    cli.env["TOOLPLAN_MAX_ITEMS"] = "5"
    literal = {
        "steps": [
            {
                "id": "each",
                "tool": "echo",
                "forEach": list(range(6)),
                "maxItems": 1000,
                "parameters": {"value": "{{$item}}"},
            }
        ]
    }
    for command in ("run", "submit"):
        refused = cli(command, "--file", cli.write_plan(literal), "--json")
        assert refused.code == 2, refused.stderr
        assert "more than the limit of 5 (TOOLPLAN_MAX_ITEMS)" in refused.stderr
        assert "its maxItems of 1000 cannot raise the operator's limit" in refused.stderr
    assert not cli.calls()
    assert cli("list", "--json").json()["plans"] == []

    templated = {"steps": [dict(s) for s in MAP["steps"]]}
    templated["steps"][0] = {
        "id": "labels",
        "tool": "echo",
        "parameters": {"value": {"items": [f"x{i}" for i in range(6)]}},
    }
    templated["steps"][1]["maxItems"] = 1000
    done = _run(cli, templated)
    step = next(s for s in done.json()["steps"] if s["id"] == "each")
    assert step["status"] == "failed"
    assert "has 6 items, more than the limit of 5 (TOOLPLAN_MAX_ITEMS)" in step["error"]
    assert not [c for c in cli.calls() if c["step"] == "each"]


def test_a_huge_literal_list_is_refused_without_an_estimate(cli: Cli) -> None:
    """A 600 KB plan of a 300,000-item literal list with maxItems 300000 (issue 42: accepted,
    estimated at 30,000 s) is refused at validation, naming the limit."""
    plan = {
        "steps": [
            {
                "id": "each",
                "tool": "echo",
                "forEach": [1] * 300_000,
                "maxItems": 300_000,
                "parameters": {"value": "{{$item}}"},
            }
        ]
    }
    path = cli.tmp / "huge.json"
    path.write_text(json.dumps(plan, separators=(",", ":")))
    assert 500_000 < path.stat().st_size < 1_000_000  # under TOOLPLAN_MAX_PLAN_BYTES
    refused = cli("submit", "--file", str(path), "--json")
    assert refused.code == 2, refused.stderr
    assert "forEach lists 300000 items, more than the limit of 100 (TOOLPLAN_MAX_ITEMS)" in (
        refused.stderr
    )
    assert "estimate" not in refused.stdout.lower()
    assert cli("list", "--json").json()["plans"] == []
