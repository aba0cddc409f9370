"""What the cross-check drops from the first plan, given the tools a second plan called."""

from __future__ import annotations

from typing import Any

from toolplan.planning.cross_check import drop_disputed
from toolplan.plans.plan import parse_plan
from toolplan.tools.catalog import ToolCatalog


def step(sid: str, tool: str, **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool, "parameters": parameters}


def plan(*steps: dict[str, Any], outputs: list[str] | None = None) -> Any:
    data: dict[str, Any] = {"steps": list(steps)}
    if outputs is not None:
        data["outputSteps"] = outputs
    return parse_plan(data)


def test_a_look_alike_beside_the_asked_step_is_dropped() -> None:
    first = plan(
        step("lawyers", "lawyer_search", location="LA", expertise="Divorce"),
        step("doctors", "doctor_search", location="LA", specialization="Divorce"),
        outputs=["lawyers", "doctors"],
    )
    found = drop_disputed(first, ["lawyer_search"])
    assert found is not None
    kept, dropped = found
    assert [s.id for s in kept.steps] == ["lawyers"]
    assert kept.output_steps == ["lawyers"]
    assert dropped == {"doctors": "doctor_search"}


def test_what_a_kept_step_takes_from_is_kept_through_a_chain() -> None:
    first = plan(
        step("a", "list_authors"),
        step("b", "get_author", authorId="{{a.items[0]._id}}"),
        step("c", "create_blog", authorId="{{b._id}}", title="Hi"),
        step("d", "create_draft", title="Hi"),
    )
    found = drop_disputed(first, ["create_blog"])
    assert found is not None
    assert [s.id for s in found[0].steps] == ["a", "b", "c"]
    assert found[1] == {"d": "create_draft"}


def test_for_each_and_when_count_as_taking_from() -> None:
    first = plan(
        step("posts", "list_posts", tag="news"),
        {**step("each", "summarize", text="{{item.body}}"), "forEach": "{{posts.items}}"},
        {**step("hot", "alert", city="Rome"), "when": "{{check.hot}}"},
        step("check", "check_heat", city="Rome"),
    )
    # check passes only Rome, as hot does: a look-alike, were it not what hot's `when` reads
    assert drop_disputed(first, ["summarize", "alert"]) is None
    unread = plan(*[{k: v for k, v in s.items() if k != "when"} for s in first.to_json()["steps"]])
    found = drop_disputed(unread, ["summarize", "alert"])
    assert found is not None and found[1] == {"check": "check_heat"}


def test_a_disputed_step_with_a_value_of_its_own_is_kept() -> None:
    # "list compute metrics, query CPU usage, and check if it's above 80%": a second plan that
    # left the check out does not take it from the first
    first = plan(
        step("metrics", "list_metrics", category="compute"),
        step("cpu", "query_metric", name="cpu_usage"),
        step("check", "check_threshold", metric_name="cpu_usage", threshold=80, operator="gt"),
    )
    assert drop_disputed(first, ["list_metrics", "query_metric"]) is None
    # with nothing of its own it is a look-alike: the same name to another tool
    echo = plan(
        step("cpu", "query_metric", name="cpu_usage"),
        step("again", "get_metric_info", name="CPU_usage "),
    )
    found = drop_disputed(echo, ["query_metric"])
    assert found is not None and found[1] == {"again": "get_metric_info"}


def test_a_disputed_step_with_no_value_is_kept() -> None:
    first = plan(step("author", "create_author", name="Ada"), step("blogs", "list_blogs"))
    assert drop_disputed(first, ["create_author"]) is None


def test_true_and_false_are_not_values_of_a_step() -> None:
    first = plan(
        step("era", "get_era", name="Ice age", years_ago=True),
        step("event", "get_event_date", name="Ice age", years_ago=True),
    )
    found = drop_disputed(first, ["get_era"])
    assert found is not None and found[1] == {"event": "get_event_date"}
    numbers = plan(step("a", "power", base=4), step("b", "probability", outcomes=4.0))
    assert drop_disputed(numbers, ["power"]) is not None  # 4 and 4.0 are one number


def test_a_step_that_only_waited_for_a_dropped_one_waits_no_more() -> None:
    first = plan(
        step("extra", "doctor_search", location="LA"),
        {**step("asked", "lawyer_search", location="LA"), "dependsOn": ["extra"]},
    )
    found = drop_disputed(first, ["lawyer_search"])
    assert found is not None
    (kept,) = found[0].steps
    assert kept.id == "asked" and kept.depends_on == []


def test_nothing_to_drop_or_nothing_shared_leaves_the_plan() -> None:
    first = plan(step("a", "lawyer_search", location="LA"), step("b", "doctor_search"))
    assert drop_disputed(first, ["lawyer_search", "doctor_search"]) is None
    assert drop_disputed(first, ["car_rental"]) is None  # no opinion on this plan at all
    assert drop_disputed(first, []) is None


def test_a_catalog_in_reverse_keeps_its_tools_and_sources() -> None:
    def alpha(x: int) -> int:
        """First."""
        return x

    def beta(x: int) -> int:
        """Second."""
        return x

    catalog = ToolCatalog([alpha], source="one")
    catalog.add([beta], source="two")
    reverse = catalog.in_reverse()
    assert reverse.names == ["beta", "alpha"] and catalog.names == ["alpha", "beta"]
    assert reverse.info("alpha").source == "one" and reverse.info("beta").source == "two"
