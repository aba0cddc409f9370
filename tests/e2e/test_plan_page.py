"""The plan page in a real browser: chromium (Playwright) against a real ``toolplan serve``.

The tools block on a file the test creates (``gate``, ``gate_if``), so the page is seen while the
plan runs, never after a sleep; every wait is a Playwright expectation on what the page shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.browser_support import Served, launch_browser, serve
from tests.e2e.conftest import Cli

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

TOKEN = "page-token-0123456789"
SUBMIT = """mutation($plan: JSON!, $query: String, $requestId: String) {
  submitPlan(plan: $plan, query: $query, requestId: $requestId) { planId requestId }
}"""
EXECUTE = (
    "mutation($id: String!, $wait: Boolean) { executePlan(planId: $id, wait: $wait) { status } }"
)
LABELS = ["a", "b", "c", "d", "e"]
GATED: dict[str, Any] = {
    "steps": [
        {"id": "wait", "tool": "gate", "parameters": {"label": "opened"}},
        {"id": "after", "tool": "echo", "parameters": {"value": "{{wait.label}}"}},
        {"id": "boom", "tool": "business_error", "parameters": {"message": "the disk is full"}},
        {"id": "never", "tool": "echo", "parameters": {"value": "{{boom}}"}},
        {
            "id": "each",
            "tool": "gate_if",
            "forEach": [{"label": label, "wait": label == "c"} for label in LABELS],
            "parameters": {"label": "{{$item.label}}", "wait": "{{$item.wait}}"},
        },
    ]
}
QUICK: dict[str, Any] = {
    "steps": [
        {"id": "first", "tool": "echo", "parameters": {"value": {"n": 1}}},
        {"id": "second", "tool": "echo", "parameters": {"value": "{{first.n}}"}},
    ]
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launch_browser()


@pytest.fixture(scope="module")
def cli_module(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    return Cli(tmp_path_factory.mktemp("plan-page"))


@pytest.fixture(scope="module")
def server(cli_module: Cli, browser: Browser) -> Iterator[Served]:
    served = serve(cli_module)
    yield served
    log = served.stop()
    assert "Traceback" not in log, log


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh tab; an uncaught error in the page's scripts fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert errors == []


def node(page: Page, step: str) -> Any:
    return page.locator(f'#dag .node[data-step="{step}"]')


def test_the_page_follows_a_running_plan_live(server: Served, cli_module: Cli, page: Page) -> None:
    from playwright.sync_api import expect

    plan_id = server.gql(SUBMIT, plan=GATED, query="watch it run")["submitPlan"]["planId"]
    page.goto(f"{server.url}/ui/plans/{plan_id}")
    # Not executed yet: every step is drawn, its state written out.
    expect(node(page, "wait")).to_have_attribute("data-state", "not run")
    expect(node(page, "wait")).to_contain_text("not run")
    expect(page.locator("#plan-query")).to_have_text("watch it run")

    assert server.gql(EXECUTE, id=plan_id, wait=False)["executePlan"]["status"] == "running"
    # Live from stepEvents: the gated step runs, the failure shows, the map waits on one item.
    expect(node(page, "wait")).to_have_attribute("data-state", "running")
    expect(node(page, "wait")).to_have_attribute("aria-label", re.compile(r"tool gate, running"))
    expect(node(page, "boom")).to_have_attribute("data-state", "failed")
    expect(node(page, "never")).to_have_attribute("data-state", "skipped")
    expect(node(page, "each")).to_contain_text("running · 4/5 items")
    expect(node(page, "after")).to_have_attribute("data-state", "pending")
    expect(page.locator("body")).to_have_attribute("data-live", "connected")
    expect(page.locator("#gantt .bar.running").first).to_be_visible()

    cli_module.gate.touch()
    expect(node(page, "wait")).to_have_attribute("data-state", "succeeded")
    expect(node(page, "after")).to_have_attribute("data-state", "succeeded")
    expect(node(page, "each")).to_contain_text("succeeded · 5/5 items")
    expect(node(page, "after")).to_contain_text("1 attempt")
    expect(page.locator("#plan-status")).to_have_text("partial")
    expect(page.locator("body")).to_have_attribute("data-live", "ended")

    # A click shows the resolved arguments and the output ...
    node(page, "after").click()
    details = page.locator("#details")
    expect(details.locator("h2")).to_have_text("Step after")
    expect(details.locator("pre.arguments")).to_contain_text('"value": "opened"')
    expect(details.locator("pre.output")).to_have_text("opened")
    # ... or the error, and the items of a map.
    node(page, "boom").click()
    expect(details.locator("pre.error-text")).to_contain_text("the disk is full")
    expect(details.locator("pre.output")).to_have_count(0)
    node(page, "each").click()
    expect(details.locator("tbody tr")).to_have_count(5)
    # A map's calls are per item, not retries; its parameters were resolved for each item.
    expect(node(page, "each")).to_contain_text("5 calls for 5 items")
    expect(node(page, "each")).not_to_contain_text("attempts")
    expect(details.locator("dl")).to_contain_text("Tool calls5 calls for 5 items")
    expect(details.locator("h3").first).to_have_text("Parameters (resolved for each item)")
    # The timeline has a bar per step that ran; the critical path and the estimate are marked.
    expect(page.locator("#gantt .bar")).to_have_count(4)
    expect(page.locator("#gantt .bar.running")).to_have_count(0)
    expect(page.locator("#gantt .estimate-note")).to_contain_text(
        re.compile(r"[Tt]he estimate, \d")
    )


def test_a_plan_that_waits_is_looked_at_less_and_less(server: Served, page: Page) -> None:
    # A plan not running here (waiting for a person, or queued for a worker): the page looks again after 1 s, then backs off to 15 s; a change starts over; a finished
    # plan is not looked at again. It used to look about three times a second, for ever.
    from playwright.sync_api import expect

    plan_id = server.gql(SUBMIT, plan=QUICK, query="wait for me")["submitPlan"]["planId"]
    page.goto(f"{server.url}/ui/plans/{plan_id}")
    expect(node(page, "first")).to_be_visible()
    delays = page.evaluate(
        """() => {
          const delays = [];
          let delay = 0;
          for (let i = 0; i < 7; i++) {
            delay = nextLookDelay(delay, { changed: false, finished: false });
            delays.push(delay);
          }
          delays.push(nextLookDelay(delay, { changed: true, finished: false }));
          delays.push(nextLookDelay(delay, { changed: false, finished: true }));
          return delays;
        }"""
    )
    assert delays == [1000, 2000, 4000, 8000, 15000, 15000, 15000, 1000, None]


def test_a_hidden_page_does_not_look_until_it_is_shown(server: Served, page: Page) -> None:
    from playwright.sync_api import expect

    plan_id = server.gql(SUBMIT, plan=QUICK, query="hide me")["submitPlan"]["planId"]
    page.goto(f"{server.url}/ui/plans/{plan_id}")
    expect(node(page, "first")).to_be_visible()
    # Ordered by the event loop, not by time: the test's own 0 ms timer fires after pause's,
    # so a pause that ignored `hidden` would have ended before it.
    seen = page.evaluate(
        """async () => {
          let hidden = true;
          Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
          let over = false;
          const waiting = pause(0).then(() => { over = true; });
          await new Promise((resolve) => setTimeout(resolve, 0));
          await new Promise((resolve) => setTimeout(resolve, 0));
          const whileHidden = over;
          hidden = false;
          document.dispatchEvent(new Event("visibilitychange"));
          await waiting;
          return [whileHidden, over];
        }"""
    )
    assert seen == [False, True]


def test_the_list_filters_by_status_and_request_and_pages(server: Served, page: Page) -> None:
    from playwright.sync_api import expect

    first = server.gql(SUBMIT, plan=QUICK, query="version one")["submitPlan"]
    request_id = first["requestId"]
    later = [
        server.gql(SUBMIT, plan=QUICK, query=None, requestId=request_id)["submitPlan"]["planId"]
        for _ in range(2)
    ]
    assert server.gql(EXECUTE, id=first["planId"])["executePlan"]["status"] == "succeeded"

    page.goto(f"{server.url}/ui/plans?requestId={request_id}&first=2")
    rows = page.locator("#plans tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-plan", later[1])
    expect(rows.nth(1)).to_have_attribute("data-plan", later[0])
    page.get_by_role("link", name="Older plans →").click()
    expect(rows).to_have_count(1)
    expect(rows.nth(0)).to_have_attribute("data-plan", first["planId"])
    expect(rows.nth(0)).to_contain_text("succeeded")
    expect(rows.nth(0)).to_contain_text("version one")
    expect(page.get_by_role("link", name="Newest plans")).to_be_visible()

    # The filter form: only this request's succeeded plans.
    page.goto(f"{server.url}/ui/plans")
    expect(page.locator("#filter-status option[value=succeeded]")).to_have_count(1)
    page.select_option("#filter-status", "succeeded")
    page.fill("#filter-request", request_id)
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"status=succeeded"))
    expect(rows).to_have_count(1)
    expect(rows.nth(0)).to_have_attribute("data-plan", first["planId"])

    # A row leads to its plan page, which links the request's versions.
    page.get_by_role("link", name=first["planId"]).click()
    expect(node(page, "second")).to_have_attribute("data-state", "succeeded")
    versions = page.locator("#versions li")
    expect(versions).to_have_count(3)
    versions.nth(2).get_by_role("link").click()
    expect(page).to_have_url(re.compile(later[1]))
    expect(node(page, "second")).to_have_attribute("data-state", "not run")

    page.goto(f"{server.url}/ui/plans?status=sideways")
    expect(page.locator("#message")).to_contain_text("not a plan status")


def test_with_a_token_the_page_asks_for_it(browser: Browser, tmp_path: Path, page: Page) -> None:
    from playwright.sync_api import expect

    served = serve(Cli(tmp_path), token=TOKEN)
    try:
        plan_id = served.gql(SUBMIT, plan=QUICK, query="secret")["submitPlan"]["planId"]
        assert served.gql(EXECUTE, id=plan_id)["executePlan"]["status"] == "succeeded"
        page.goto(f"{served.url}/ui/plans")
        form = page.locator("#auth")
        expect(form).to_be_visible()
        expect(page.locator("#auth-reason")).to_contain_text("missing bearer token")
        expect(page.locator("#plans tbody tr")).to_have_count(0)
        page.fill("#auth-token", "wrong-token")
        page.get_by_role("button", name="Use token").click()
        expect(page.locator("#auth-reason")).to_contain_text("invalid bearer token")
        page.fill("#auth-token", TOKEN)
        page.get_by_role("button", name="Use token").click()
        expect(form).to_be_hidden()
        expect(page.locator("#plans tbody tr")).to_have_count(1)
        # The tab keeps the token for the plan page (and its stepEvents subscription).
        page.get_by_role("link", name=plan_id).click()
        expect(node(page, "second")).to_have_attribute("data-state", "succeeded")
        expect(form).to_be_hidden()
    finally:
        log = served.stop()
    assert "Traceback" not in log, log


def test_a_long_maps_items_are_read_a_page_at_a_time(
    browser: Browser, tmp_path: Path, page: Page
) -> None:
    """Issue 42: the page's data holds the first items of a map and the counts per status; the
    rest is fetched when asked for, never the whole list at once."""
    from playwright.sync_api import expect

    cli = Cli(tmp_path)
    cli.env["TOOLPLAN_MAX_ITEMS"] = "300"
    served = serve(cli)
    try:
        plan = {
            "steps": [
                {
                    "id": "each",
                    "tool": "echo",
                    "forEach": list(range(120)),
                    "parameters": {"value": "{{$item}}"},
                }
            ]
        }
        plan_id = served.gql(SUBMIT, plan=plan, query="a long map")["submitPlan"]["planId"]
        assert served.gql(EXECUTE, id=plan_id)["executePlan"]["status"] == "succeeded"
        page.goto(f"{served.url}/ui/plans/{plan_id}")
        expect(node(page, "each")).to_contain_text("succeeded · 120/120 items")
        node(page, "each").click()
        details = page.locator("#details")
        expect(details.locator("tbody tr")).to_have_count(50)
        expect(details.locator(".item-counts")).to_have_text("120 succeeded")
        more = details.get_by_role("button", name=re.compile(r"Show more items \(50 of 120"))
        more.click()
        expect(details.locator("tbody tr")).to_have_count(120)
        expect(details.locator("tbody tr").nth(119)).to_contain_text("119")
        expect(details.locator("button.more-items")).to_have_count(0)
    finally:
        log = served.stop()
    assert "Traceback" not in log, log
