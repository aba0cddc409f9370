"""Program order for effects (toolplan.validation.ordering): which order edges a plan's steps get
from the reads and writes of their tools, and how the scheduler keeps them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_core.tools import tool

from toolplan.engine.scheduler import StepOutcome, schedule
from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import parse_plan
from toolplan.tools import ToolCatalog, tagged
from toolplan.tools.effects import DEFAULT_RESOURCE, Effect, effect_from
from toolplan.validation import analyze
from toolplan.validation.ordering import order_edges, program_order


def _tool(name: str, *tags: str, resource: str | None = None) -> Any:
    def call(x: int = 0) -> dict[str, int]:
        return {"x": x}

    call.__name__ = name
    call.__doc__ = f"The tool {name}."
    return tagged(tool(call), *tags, resource=resource)


CATALOG = ToolCatalog(
    [
        _tool("put", resource="kv"),
        _tool("get", "read-only", resource="kv"),
        _tool("send", "commutative", resource="mail"),
        _tool("inbox", "read-only", resource="mail"),
        _tool("plain"),  # names nothing: a write on the default resource
        _tool("other_plain"),
        _tool("pure", "read-only"),
        _tool("both", resource="kv"),
    ]
)
CATALOG.add([tagged(_tool("mailkv"), resource=["kv", "mail"])], source="more")


def _plan(*steps: tuple[str, str] | tuple[str, str, dict[str, Any]]) -> Any:
    return parse_plan(
        {
            "steps": [
                {"id": s[0], "tool": s[1], "parameters": s[2] if len(s) > 2 else {}}  # type: ignore[misc]
                for s in steps
            ]
        }
    )


def _edges(*steps: tuple[str, str] | tuple[str, str, dict[str, Any]]) -> dict[str, list[str]]:
    return analyze(_plan(*steps), CATALOG).runs_after()


def test_effects_come_from_tags_with_safe_defaults() -> None:
    assert effect_from([]) == Effect(False, (DEFAULT_RESOURCE,), False)
    assert effect_from(["read-only", "resource:blog"]) == Effect(True, ("blog",))
    assert effect_from(["resource:a", "resource:b", "commutative"]).resources == ("a", "b")
    assert effect_from(["read-only", "commutative"]).commutative is False  # reads commute anyway
    assert effect_from(["mcp", "mcp:files"], {"readOnlyHint": True}) == Effect(True, ("mcp:files",))
    assert effect_from(["resource: "]).resources == (DEFAULT_RESOURCE,)  # an empty name is none
    info = CATALOG.info("send")
    assert info.to_json()["effect"] == "side-effect" and info.to_json()["resources"] == ["mail"]
    assert info.commutative and CATALOG.info("get").to_json()["effect"] == "read-only"
    assert CATALOG.effect("mailkv").resources == ("kv", "mail")
    with pytest.raises(ValueError, match="resource"):
        tagged(_tool("bad"), resource="")


def test_a_read_after_a_write_waits_for_it_and_reads_between_writes_run_together() -> None:
    edges = _edges(
        ("r0", "get"), ("w1", "put"), ("r1", "get"), ("r2", "get"), ("w2", "put"), ("r3", "get")
    )
    # w2 waits for the reads of w1's value, which waited for w1: no edge to w1 itself.
    assert edges == {"w1": ["r0"], "r1": ["w1"], "r2": ["w1"], "w2": ["r1", "r2"], "r3": ["w2"]}


def test_writes_keep_their_order_and_other_resources_are_not_ordered() -> None:
    edges = _edges(("w1", "put"), ("m1", "send"), ("w2", "put"), ("p", "pure"), ("q", "plain"))
    # mail, kv and the default resource are apart; on the default one, a write after a read.
    assert edges == {"w2": ["w1"], "q": ["p"]}


def test_untagged_tools_share_the_default_resource() -> None:
    assert _edges(("a", "plain"), ("b", "other_plain"), ("c", "plain")) == {
        "b": ["a"],
        "c": ["b"],
    }


def test_commutative_writes_run_together_and_what_follows_waits_for_all() -> None:
    edges = _edges(("s1", "send"), ("s2", "send"), ("s3", "send"), ("in", "inbox"), ("s4", "send"))
    assert edges == {"in": ["s1", "s2", "s3"], "s4": ["in"]}
    # A read between two commutative writes separates them; a plain write never joins them.
    assert _edges(("r", "inbox"), ("s1", "send"), ("s2", "send")) == {"s1": ["r"], "s2": ["r"]}


def test_a_step_on_two_resources_is_ordered_on_both() -> None:
    plan = _plan(("w", "put"), ("m", "send"), ("both", "mailkv"), ("r", "get"), ("i", "inbox"))
    assert analyze(plan, CATALOG).order_edges == {
        "both": {"w": ["kv"], "m": ["mail"]},
        "r": {"both": ["kv"]},
        "i": {"both": ["mail"]},
    }


def test_data_edges_and_depends_on_are_kept_and_not_repeated() -> None:
    plan = parse_plan(
        {
            "steps": [
                {"id": "a", "tool": "put", "parameters": {"x": 1}},
                {"id": "b", "tool": "put", "parameters": {"x": "{{a.x}}"}},
                {"id": "c", "tool": "get", "parameters": {}, "dependsOn": ["a"]},
            ]
        }
    )
    analysis = analyze(plan, CATALOG)
    assert analysis.dependencies == {"a": [], "b": ["a"], "c": ["a"]}
    assert analysis.order_edges == {"c": {"b": ["kv"]}}  # b -> a is a data edge already
    assert analysis.waits_for()["c"] == ["a", "b"]
    assert analysis.layers == [["a"], ["b"], ["c"]]
    assert analysis.to_json()["orderEdges"] == {"c": {"b": ["kv"]}}
    assert type(analysis).from_json(analysis.to_json()) == analysis


def test_program_order_follows_data_before_position() -> None:
    # JSON may name a step written later: that step comes first, and the order edges go along.
    order = program_order(["late_user", "early"], {"late_user": ["early"], "early": []})
    assert order == ["early", "late_user"]
    plan = parse_plan(
        {
            "steps": [
                {"id": "read", "tool": "get", "parameters": {"x": "{{w2.x}}"}},
                {"id": "w1", "tool": "put", "parameters": {}},
                {"id": "w2", "tool": "put", "parameters": {}},
            ]
        }
    )
    analysis = analyze(plan, CATALOG)  # no cycle: program order is w1, w2, read
    assert analysis.runs_after() == {"w2": ["w1"]}
    assert analysis.order == ["w1", "w2", "read"]


def test_a_fallback_adds_its_tools_effect() -> None:
    plan = parse_plan(
        {
            "steps": [
                {"id": "w", "tool": "put", "parameters": {}},
                {
                    "id": "r",
                    "tool": "pure",
                    "parameters": {},
                    "fallback": {"tool": "get", "parameters": {}},
                },
                {
                    "id": "g",
                    "tool": "inbox",
                    "parameters": {},
                    "fallback": {"tool": "plain", "parameters": {}},
                },
                {"id": "p", "tool": "plain", "parameters": {}},
            ]
        }
    )
    # r reads kv (and the default resource) through its fallback; g may write the default
    # resource through its fallback, after the read r made of it.
    assert analyze(plan, CATALOG).order_edges == {
        "r": {"w": ["kv"]},
        "g": {"r": [DEFAULT_RESOURCE]},
        "p": {"g": [DEFAULT_RESOURCE]},
    }


def test_the_pass_is_linear_and_its_edges_point_forward() -> None:
    effects = {f"s{i}": Effect(read_only=i % 5 != 0, resources=("kv",)) for i in range(5000)}
    order = list(effects)
    started = time.process_time()
    edges = order_edges(order, effects.__getitem__, {})
    spent = time.process_time() - started
    position = {step: i for i, step in enumerate(order)}
    assert all(position[e] < position[s] for s, after in edges.items() for e in after)
    assert sum(map(len, edges.values())) < 3 * len(order)  # each step: the write before, or reads
    assert spent < 5  # generous: a quadratic pass takes minutes here


def test_an_invalid_plan_is_still_refused_before_ordering() -> None:
    with pytest.raises(PlanInvalid, match="unknown tool"):
        analyze(_plan(("a", "put"), ("b", "nope")), CATALOG)


# -- the scheduler keeps order edges ---------------------------------------------------------


async def _run(
    order: list[str],
    deps: dict[str, list[str]],
    after: dict[str, list[str]],
    outcome: dict[str, str],
    finished: dict[str, StepOutcome] | None = None,
) -> tuple[list[tuple[str, str]], dict[str, StepOutcome]]:
    events: list[tuple[str, str]] = []

    async def run(step: str) -> StepOutcome:
        events.append(("start", step))
        await asyncio.sleep(0)
        events.append(("end", step))
        status = outcome.get(step, "succeeded")
        return StepOutcome(status, error="boom" if status == "failed" else None)  # type: ignore[arg-type]

    async def skip(step: str, message: str, reason: Any) -> None:
        events.append(("skip", step))

    outcomes = await schedule(
        order, deps, run, skip, concurrency=10, after=after, finished=finished
    )
    return events, outcomes


async def test_an_order_edge_waits_for_the_end_however_it_ended() -> None:
    order = ["w", "r1", "r2", "d"]
    deps = {"w": [], "r1": [], "r2": [], "d": ["w"]}
    after = {"r1": ["w"], "r2": ["w"]}
    events, outcomes = await _run(order, deps, after, {"w": "failed"})
    assert events.index(("end", "w")) < events.index(("start", "r1"))
    assert events.index(("end", "w")) < events.index(("start", "r2"))
    # The reads ran although the write failed; its data dependent was skipped.
    assert outcomes["r1"].status == outcomes["r2"].status == "succeeded"
    assert outcomes["d"].status == "skipped" and outcomes["d"].cause == "w"


async def test_reads_after_a_write_start_together() -> None:
    order = ["w", "r1", "r2"]
    events, _ = await _run(order, {s: [] for s in order}, {"r1": ["w"], "r2": ["w"]}, {})
    starts = [e for e in events if e[0] == "start"]
    # Both reads start before either ends: they overlap.
    assert events.index(("start", "r2")) < events.index(("end", "r1"))
    assert starts[0] == ("start", "w")


async def test_a_skipped_step_releases_the_steps_ordered_after_it() -> None:
    order = ["a", "w", "r"]
    deps = {"a": [], "w": ["a"], "r": []}
    events, outcomes = await _run(order, deps, {"r": ["w"]}, {"a": "failed"})
    assert outcomes["w"].status == "skipped" and outcomes["r"].status == "succeeded"
    assert events.index(("skip", "w")) < events.index(("start", "r"))


async def test_a_step_waiting_for_approval_holds_the_steps_ordered_after_it() -> None:
    order = ["pay", "note"]
    _, outcomes = await _run(order, {s: [] for s in order}, {"note": ["pay"]}, {"pay": "waiting"})
    assert outcomes["pay"].status == "waiting" and "note" not in outcomes
    # Resumed with the payment done: the note runs.
    _, resumed = await _run(
        order, {s: [] for s in order}, {"note": ["pay"]}, {}, {"pay": StepOutcome("succeeded")}
    )
    assert resumed["note"].status == "succeeded"


async def test_on_resume_a_step_that_ended_earlier_releases_the_steps_ordered_after_it() -> None:
    order = ["w", "r", "x"]
    finished = {"w": StepOutcome("failed", error="boom"), "x": StepOutcome("skipped")}
    _, outcomes = await _run(order, {s: [] for s in order}, {"r": ["w", "x"]}, {}, finished)
    assert outcomes["r"].status == "succeeded"  # it ran: what it waits for ended in an earlier run
