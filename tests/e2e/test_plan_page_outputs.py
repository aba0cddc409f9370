"""The plan page in a real browser shows a plan whose tool returned NaN (issue 42, item 5): its
data is strict JSON, so the page draws the plan and the output (NaN as ``null``) instead of
"HTTP 500"; and a step skipped because its condition was text shows that reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.browser_support import Served, launch_browser, serve
from tests.e2e.conftest import Cli

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

SUBMIT = "mutation($plan: JSON!) { submitPlan(plan: $plan) { planId } }"
EXECUTE = "mutation($id: String!) { executePlan(planId: $id) { status } }"
PLAN: dict[str, Any] = {
    "steps": [
        {"id": "reading", "tool": "not_a_number", "parameters": {}},
        {"id": "ask", "tool": "says", "parameters": {"answer": "no"}},
        {"id": "act", "tool": "echo", "when": "{{ask}}", "parameters": {"value": 1}},
    ]
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launch_browser()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Browser) -> Iterator[Served]:
    cli = Cli(Path(tmp_path_factory.mktemp("plan-page-outputs")))
    cli.env["TOOLPLAN_TOOLS"] += ",tests.support.odd_outputs"
    served = serve(cli)
    yield served
    log = served.stop()
    assert "Traceback" not in log, log


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert errors == []


def test_a_nan_output_and_a_text_condition_on_the_page(server: Served, page: Page) -> None:
    from playwright.sync_api import expect

    plan_id = server.gql(SUBMIT, plan=PLAN)["submitPlan"]["planId"]
    status = server.gql(EXECUTE, id=plan_id)["executePlan"]["status"]
    page.goto(f"{server.url}/ui/plans/{plan_id}")
    reading = page.locator('#dag .node[data-step="reading"]')
    expect(reading).to_have_attribute("data-state", "succeeded")
    reading.click()
    details = page.locator("#details")
    expect(details.locator("pre.output")).to_contain_text('"ratio": null')
    assert status == "partial"
    expect(page.locator("#plan-status")).to_have_text("partial")
    page.locator('#dag .node[data-step="act"]').click()
    expect(details).to_contain_text("condition-not-boolean")
    expect(details.locator("pre.error-text")).to_contain_text('{{ask}} is the text "no"')
