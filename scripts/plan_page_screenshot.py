"""Take the screenshot of the plan page on the GraphQL API page (docs/plan-page.png).

Starts ``toolplan serve`` on a temporary store with the built-in offline tools, runs a plan whose
author step fails, stores the corrected plan as a replan of the same request (as the agent loop
would, with its reason), runs it, and photographs the finished replan's page in chromium with a
step selected. Run from the repository: ``.venv/bin/python scripts/plan_page_screenshot.py``.
"""

from __future__ import annotations

import copy
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import expect, sync_playwright

from toolplan.service.operations import submit_plan
from toolplan.store import open_store
from toolplan.tools import load_tool_modules

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "plan-page.png"
TOOLS = "blog,metrics,weather"
QUERY = "Compare the weather in Paris, Berlin and Tokyo, check the CPU, and post it as Bob"
PLAN: dict[str, Any] = {
    "reasoning": "Weather per city, summarized; the post needs the author's _id.",
    "steps": [
        {
            "id": "cities",
            "tool": "get_weather",
            "forEach": ["Paris", "Berlin", "Tokyo"],
            "parameters": {"location": "{{$item}}"},
        },
        {"id": "summary", "tool": "summarize", "parameters": {"data": "{{cities}}"}},
        {
            "id": "cpu",
            "tool": "check_threshold",
            "parameters": {"metric_name": "cpu_usage", "threshold": 80},
        },
        {
            "id": "author",
            "tool": "createAuthor",
            "parameters": {"name": "Bob", "email": "bob-at-example"},
        },
        {
            "id": "post",
            "tool": "createBlog",
            "dependsOn": ["summary", "cpu"],
            "parameters": {
                "authorId": "{{author._id}}",
                "title": "Weather and load",
                "content": "Three cities compared",
            },
        },
        {
            "id": "comment",
            "tool": "createComment",
            "parameters": {"blogId": "{{post._id}}", "text": "Nice roundup", "author": "Alice"},
        },
    ],
    "outputSteps": ["post", "comment"],
}
SUBMIT = "mutation($plan: JSON!, $query: String) { submitPlan(plan: $plan, query: $query) { planId requestId } }"
EXECUTE = "mutation($id: String!) { executePlan(planId: $id) { status } }"


def gql(url: str, operation: str, **variables: Any) -> dict[str, Any]:
    body = httpx.post(
        f"{url}/graphql", json={"query": operation, "variables": variables}, timeout=60
    ).json()
    if "errors" in body:
        raise SystemExit(f"GraphQL error: {body['errors']}")
    return body["data"]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store_uri = f"sqlite:///{folder}/toolplan.db"
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {**os.environ, "TOOLPLAN_STORE": store_uri, "TOOLPLAN_TOOLS": TOOLS}
        toolplan = Path(sys.executable).parent / "toolplan"
        server = subprocess.Popen(
            [str(toolplan), "serve", "--port", str(port)], env=env, cwd=folder
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    httpx.get(f"{url}/ui/plans", timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("toolplan serve did not start") from None
                    time.sleep(0.2)
            first = gql(url, SUBMIT, plan=PLAN, query=QUERY)["submitPlan"]
            print("v1:", gql(url, EXECUTE, id=first["planId"])["executePlan"]["status"])
            fixed = copy.deepcopy(PLAN)
            fixed["steps"][3]["parameters"]["email"] = "bob@example.com"
            store = open_store(store_uri)
            try:
                second = submit_plan(
                    fixed,
                    store=store,
                    catalog=load_tool_modules(TOOLS.split(",")),
                    max_steps=50,
                    query=QUERY,
                    request_id=first["requestId"],
                    meta={
                        "replanOf": first["planId"],
                        "replanReason": "createAuthor refused the email address 'bob-at-example'",
                    },
                )
            finally:
                store.close()
            print("v2:", gql(url, EXECUTE, id=second.plan_id)["executePlan"]["status"])
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
                page = browser.new_page(
                    viewport={"width": 1280, "height": 900}, device_scale_factor=1
                )
                page.goto(f"{url}/ui/plans/{second.plan_id}")
                expect(page.locator("body")).to_have_attribute("data-live", "ended", timeout=30_000)
                page.locator('#dag .node[data-step="post"]').click()
                expect(page.locator("#details pre.output")).to_be_visible()
                page.screenshot(path=str(OUT), full_page=True)
                browser.close()
            print(f"wrote {OUT.relative_to(REPO)}")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
