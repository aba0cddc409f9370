"""Plans mean what they read, through the real CLI on both stores: steps with side effects keep
the order they are written in, reads run side by side, and no read after a write is answered
from a cache filled before it. In both plan forms: a Python plan without any edge, and a JSON
plan without ``dependsOn``.

``put``/``get`` (tests/support/tools.py) are a key-value store on the resource ``kv`` (``get``
read-only and cached for an hour); ``held_read`` is a read that waits for the gate file. Every
call logs ``start``/``end`` lines in the order they happen: the tests read that order, never the
clock. A waiting tool is released by a thread once what the test waits for has happened (or after
:data:`HELD` seconds, so that a failure ends)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ON_BOTH_STORES, Cli
from toolplan.service.plan_view import plan_view
from toolplan.store import open_store

pytestmark = [pytest.mark.e2e]

HELD = 30.0
"""Seconds a gate waits for what the test expects before it opens anyway (a failure, not a pace:
it opens as soon as the condition holds)."""

BLOG_PY = """\
author = createAuthor(name="Ann", email="ann@example.com")
blog = createBlog(authorId=author["_id"], title="Tips", content="Be kind")
posts = listBlogs()
"""

BLOG_JSON = {
    "steps": [
        {"id": "author", "tool": "createAuthor", "parameters": {"name": "Ann", "email": "a@x.com"}},
        {
            "id": "blog",
            "tool": "createBlog",
            "parameters": {"authorId": "{{author._id}}", "title": "Tips", "content": "Be kind"},
        },
        {"id": "posts", "tool": "listBlogs", "parameters": {}},
    ]
}


def _file(cli: Cli, plan: str | dict[str, Any], name: str) -> str:
    if isinstance(plan, dict):
        return cli.write_plan(plan, name)
    path = Path(cli.tmp) / name
    path.write_text(plan)
    return str(path)


def _run(cli: Cli, plan: str | dict[str, Any], name: str, *flags: str) -> dict[str, Any]:
    done = cli("run", "--file", _file(cli, plan, name), "--json", *flags)
    assert done.code == 0, done.stdout + done.stderr
    result: dict[str, Any] = done.json()
    return result


def _steps(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in result["steps"]}


def _events(cli: Cli) -> list[tuple[str, str]]:
    """(event, step) of every logged start and end, in the order they happened."""
    return [(c["event"], c["step"]) for c in cli.calls() if c["event"] in ("start", "end")]


@contextmanager
def _gate_when(cli: Cli, condition: Callable[[], bool]) -> Iterator[dict[str, bool]]:
    """Open the gate once ``condition`` holds (``seen["held"]``: whether it did before
    :data:`HELD` seconds passed)."""
    seen: dict[str, bool] = {}

    def watch() -> None:
        deadline = time.monotonic() + HELD
        while not condition() and time.monotonic() < deadline:
            threading.Event().wait(0.01)
        seen["held"] = condition()
        cli.gate.touch()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        watcher.join()


def _started(cli: Cli, steps: set[str]) -> Callable[[], bool]:
    return lambda: steps <= {step for event, step in _events(cli) if event == "start"}


@ON_BOTH_STORES
@pytest.mark.parametrize("form", ["python", "json"])
def test_the_blog_chain_lists_the_post_it_wrote(cli: Cli, form: str) -> None:
    plan = BLOG_PY if form == "python" else BLOG_JSON
    result = _run(cli, plan, "blog.py" if form == "python" else "blog.json")
    steps = _steps(result)
    assert steps["posts"]["output"]["count"] == 1
    assert steps["posts"]["output"]["blogs"][0]["_id"] == steps["blog"]["output"]["_id"]
    shown = cli("show", result["planId"], "--json").json()
    assert shown["analysis"]["orderEdges"] == {"posts": {"blog": ["blog"]}}


@ON_BOTH_STORES
@pytest.mark.parametrize("form", ["python", "json"])
def test_a_get_after_a_put_reads_the_new_value_and_two_puts_keep_their_order(
    cli: Cli, form: str
) -> None:
    calls = [
        ("first", "put", {"key": "k", "value": "old", "seconds": 0.2}),
        ("second", "put", {"key": "k", "value": "new"}),
        ("read", "get", {"key": "k"}),
    ]
    if form == "python":
        plan: str | dict[str, Any] = "".join(
            f"{step} = {tool}({', '.join(f'{k}={json.dumps(v)}' for k, v in args.items())})\n"
            for step, tool, args in calls
        )
    else:
        plan = {"steps": [{"id": s, "tool": t, "parameters": a} for s, t, a in calls]}
    steps = _steps(_run(cli, plan, "kv.py" if form == "python" else "kv.json"))
    assert steps["read"]["output"] == {"key": "k", "value": "new"}
    assert _events(cli) == [
        ("start", "first"),
        ("end", "first"),
        ("start", "second"),
        ("end", "second"),
        ("start", "read"),
        ("end", "read"),
    ]


@ON_BOTH_STORES
def test_independent_reads_overlap(cli: Cli) -> None:
    plan = "".join(f'r{i} = held_read(label="{i}")\n' for i in range(3))
    with _gate_when(cli, _started(cli, {"r0", "r1", "r2"})) as seen:
        result = _run(cli, plan, "reads.py")
    assert seen["held"] is True  # all three were running at once
    assert result["status"] == "succeeded"
    assert result.get("analysis", {}).get("orderEdges", {}) == {}


@ON_BOTH_STORES
@pytest.mark.parametrize("form", ["python", "json"])
def test_reads_after_a_write_start_after_it_ends_and_overlap_each_other(
    cli: Cli, form: str
) -> None:
    if form == "python":
        plan: str | dict[str, Any] = (
            'w = put(key="k", value=1, seconds=0.2)\n'
            'a = get(key="k", wait=True)\n'
            'b = get(key="k", wait=True, seconds=0.01)\n'
        )
    else:
        plan = {
            "steps": [
                {"id": "w", "tool": "put", "parameters": {"key": "k", "value": 1, "seconds": 0.2}},
                {"id": "a", "tool": "get", "parameters": {"key": "k", "wait": True}},
                {
                    "id": "b",
                    "tool": "get",
                    "parameters": {"key": "k", "wait": True, "seconds": 0.01},
                },
            ]
        }
    with _gate_when(cli, _started(cli, {"a", "b"})) as seen:
        steps = _steps(_run(cli, plan, "rw.py" if form == "python" else "rw.json"))
    assert seen["held"] is True  # both reads were running at once
    events = _events(cli)
    assert events.index(("end", "w")) < events.index(("start", "a"))
    assert events.index(("end", "w")) < events.index(("start", "b"))
    assert steps["a"]["output"]["value"] == steps["b"]["output"]["value"] == 1


@ON_BOTH_STORES
def test_a_read_after_a_write_is_never_a_cache_hit_in_this_plan_or_the_next(cli: Cli) -> None:
    # `get` is cached for an hour: only a write on kv makes what it read stale.
    first = _steps(
        _run(
            cli,
            'before = get(key="k")\nw = put(key="k", value="new")\nafter = get(key="k")\n',
            "same-plan.py",
        )
    )
    assert first["before"]["output"]["value"] is None
    assert first["after"]["output"]["value"] == "new" and "cached" not in first["after"]

    again = _steps(_run(cli, 'g = get(key="k")\n', "read.py"))
    assert again["g"]["cached"] is True and again["g"]["output"]["value"] == "new"

    # A write in another plan (run without the cache: it still says what it changed)...
    _run(cli, 'w = put(key="k", value="newer")\n', "write.py", "--no-cache")
    # ...and the next read calls the tool.
    later = _steps(_run(cli, 'g = get(key="k")\n', "read.py"))
    assert "cached" not in later["g"] and later["g"]["output"]["value"] == "newer"
    reads = [c for c in cli.calls() if c["event"] == "start" and c.get("key_arg") == "k"]
    assert [c["step"] for c in reads] == ["before", "w", "after", "w", "g"]


def test_order_edges_are_shown_in_text_json_and_pictures(cli: Cli) -> None:
    result = _run(cli, BLOG_PY, "blog.py")
    plan_id = result["planId"]
    text = cli("show", plan_id)
    assert text.code == 0, text.stderr
    assert "after blog (order on blog)" in " ".join(text.stdout.split())
    mermaid = cli("show", plan_id, "--graph", "mermaid").stdout
    # nodes are numbered in layer order: author n0, blog n1, posts n2
    assert "n0 ==> n1" in mermaid and "n1 -.->|order| n2" in mermaid
    dot = cli("show", plan_id, "--graph", "dot").stdout
    assert 'n1 -> n2 [style=dashed, label="order", penwidth=2.5];' in dot
    # The plan page's data: the edge is marked with what it keeps the order on, and the step
    # says what it ran after.
    with closing(open_store(cli.env["TOOLPLAN_STORE"])) as store:
        view = plan_view(store, plan_id)
    edges = {(e["from"], e["to"]): e["order"] for e in view["graph"]["edges"]}
    assert edges == {("author", "blog"): None, ("blog", "posts"): ["blog"]}
    after = {step["id"]: step["after"] for step in view["steps"]}
    assert after == {"author": [], "blog": [], "posts": [{"step": "blog", "on": ["blog"]}]}


def test_the_readmes_first_python_plan_is_a_write_then_a_read_kept_in_order(cli: Cli) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    first = re.search(r"<!-- plan\.py -->\n```python\n(.*?)```", readme, re.S)
    assert first is not None and readme.index("```python") == first.start(1) - len("```python\n")
    result = _run(cli, first.group(1), "readme.py")
    steps = _steps(result)
    assert steps["posts"]["output"]["count"] == 1
    shown = cli("show", result["planId"])
    assert "after blog (order on blog)" in " ".join(shown.stdout.split())
    assert "after blog (order on blog)" in readme
