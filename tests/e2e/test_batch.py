"""Batch runs over query files, with the planner talking to the local OpenAI-compatible server."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cli, interrupt, wait_for
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import ATTEMPTS, blog_plan, broken_blog_plan, llm_step
from toolplan.client import Toolplan
from toolplan.config import Settings
from toolplan.errors import InvalidInput
from toolplan.pipeline.batch import load_queries, read_results, run_batch, summarize
from toolplan.runs.runner import ExecutionContext
from toolplan.store import open_store
from toolplan.tools import load_tool_modules

WEATHER = {
    "reasoning": "two lookups then compare",
    "steps": [
        llm_step("tokyo", "get_weather", {"location": "Tokyo"}),
        llm_step("london", "get_weather", {"location": "London"}),
        llm_step("cmp", "compare_data", {"data_a": "{{tokyo}}", "data_b": "{{london}}"}),
    ],
    "outputSteps": ["cmp"],
}

CRAFTED = [
    {
        "id": "a",
        "query": "blog: create author Alice and her blog",
        "expected": {"tools": ["createAuthor", "createBlog"]},
    },
    {
        "id": "b",
        "query": "weather: compare Tokyo and London",
        "expected": {"tools": ["get_weather"]},
    },
    {
        "id": "c",
        "query": "broken: this one never gets a valid plan",
        "expected": {"tools": ["createAuthor"]},
    },
    {"id": "d", "query": "blog: another post"},
]


def scripted(request: dict[str, Any], release: threading.Event) -> Reply:
    query = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if query.startswith("slow"):
        # Answers only once the test is over: a fixed sleep raced the test's own wait on a
        # loaded machine, where the other query may take as long.
        release.wait()
    if query.startswith("broken"):
        return Reply.structured(broken_blog_plan(), usage=(100, 10))
    if query.startswith("weather"):
        return Reply.structured(WEATHER, usage=(100, 10))
    return Reply.structured(blog_plan(), usage=(100, 10))


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    release = threading.Event()
    with FakeOpenAIServer(api_key="sk-test") as server:
        server.script([functools.partial(scripted, release=release)] * 200)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("TOOLPLAN_LLM_RETRIES", "0")
        try:
            yield server
        finally:
            release.set()


def _asks(request: dict[str, Any], prefix: str) -> bool:
    """Whether a chat request to the model is about a query starting with ``prefix``."""
    return any(
        m["role"] == "user" and str(m["content"]).startswith(prefix) for m in request["messages"]
    )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_query_files_parse_and_report_bad_lines(tmp_path: Path) -> None:
    txt = tmp_path / "q.txt"
    txt.write_text("# comment\nfirst query\n\nsecond query\n")
    assert [(i.id, i.query) for i in load_queries(txt)] == [
        ("2", "first query"),
        ("4", "second query"),
    ]
    items = load_queries(write_jsonl(tmp_path / "q.jsonl", CRAFTED))
    assert (
        items[0].expected_tools == ("createAuthor", "createBlog")
        and items[3].expected_tools is None
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "query": "ok"}\n{"id": "y"}\n')
    with pytest.raises(InvalidInput, match=r"bad\.jsonl:2"):
        load_queries(bad)
    with pytest.raises(InvalidInput, match=r"\.txt or \.jsonl"):
        load_queries(tmp_path / "q.csv")


async def test_summary_numbers_on_a_crafted_file_with_a_failing_line(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    items = load_queries(write_jsonl(tmp_path / "crafted.jsonl", CRAFTED))
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    planner = Toolplan(settings=settings).planner_context()
    out = tmp_path / "results.jsonl"
    written = await run_batch(items, planner, out=out, concurrency=2)
    assert sorted(line["id"] for line in written) == ["a", "b", "c", "d"]
    rows = read_results(out)
    assert set(rows["a"]) == {
        "id",
        "query",
        "requestId",
        "planId",
        "status",
        "error",
        "tools",
        "llmCalls",
        "usage",
        "planMs",
        "execMs",
        "reusedFrom",
    }
    assert rows["a"]["status"] == "planned" and rows["a"]["tools"] == ["createAuthor", "createBlog"]
    assert (
        rows["c"]["status"] == "invalid"
        and rows["c"]["llmCalls"] == ATTEMPTS
        and "createAuthr" in rows["c"]["error"]
    )
    assert rows["c"]["planId"] is None

    summary = summarize(items, rows)
    assert summary["byStatus"] == {"invalid": 1, "planned": 3}
    calls = 3 + ATTEMPTS  # one for each planned line, and every attempt of the broken one
    assert summary["llmCalls"] == calls
    assert summary["inputTokens"] == 100 * calls and summary["outputTokens"] == 10 * calls
    assert summary["toolSelection"] == {
        "scored": 3,
        "precision": 0.75,
        "recall": 0.75,
        "exactSetAccuracy": 0.3333,
    }
    assert summary["planMs"]["p50"] is not None and summary["execMs"]["p50"] is None


async def test_resumable_and_execute(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    items = load_queries(write_jsonl(tmp_path / "crafted.jsonl", CRAFTED))
    settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{tmp_path / 'tp.db'}")
    store = open_store(settings.store_uri)
    planner = Toolplan(settings=settings, store=store).planner_context()
    executor = ExecutionContext(store=store, catalog=load_tool_modules(settings.tool_modules))
    out = tmp_path / "results.jsonl"
    await run_batch(items[:2], planner, out=out, executor=executor)
    rows = read_results(out)
    assert rows["a"]["status"] == "succeeded" and rows["b"]["status"] == "succeeded"
    assert rows["a"]["execMs"] is not None

    requests_before = len(llm.requests)
    second = await run_batch(items, planner, out=out, executor=executor)
    assert sorted(line["id"] for line in second) == ["c", "d"]  # a and b were skipped
    assert len(llm.requests) == requests_before + ATTEMPTS + 1
    assert len(out.read_text().splitlines()) == 4

    out.write_text(out.read_text() + '{"id": "torn', encoding="utf-8")  # a line cut by a hard kill
    assert set(read_results(out)) == {"a", "b", "c", "d"}


def test_cli_batch_progress_summary_and_ctrl_c(
    cli: Cli, llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    cli.env.update(
        {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.base_url, "TOOLPLAN_LLM_RETRIES": "0"}
    )
    queries = write_jsonl(tmp_path / "crafted.jsonl", CRAFTED)
    out = tmp_path / "out.jsonl"
    summary_file = tmp_path / "summary.json"
    done = cli(
        "batch", str(queries), "--out", str(out), "--summary-json", str(summary_file), "--execute"
    )
    assert done.code == 0, done.stderr
    assert "batch summary" in done.stdout and "tool precision" in done.stdout
    assert "4/4" in done.stderr  # the progress bar reached the end
    summary = json.loads(summary_file.read_text())
    assert summary["byStatus"] == {"invalid": 1, "succeeded": 3}

    as_json = cli("batch", str(queries), "--out", str(out), "--json")
    assert as_json.code == 0 and as_json.json()["done"] == 4  # everything skipped, summary only

    slow = write_jsonl(
        tmp_path / "slow.jsonl",
        [{"id": "fast", "query": "blog: quick"}, {"id": "slow", "query": "slow: takes ages"}],
    )
    slow_out = tmp_path / "slow.out.jsonl"
    cli.env["PYTHONFAULTHANDLER"] = "1"  # a hung CLI shows its threads (see interrupt)
    process = cli.popen("batch", str(slow), "--out", str(slow_out), "--concurrency", "2")
    # Ctrl-C with one query done and the other waiting for the model, whatever the load
    wait_for(lambda: "fast" in read_results(slow_out), "the fast query's result", process)
    wait_for(lambda: any(_asks(r, "slow") for r in llm.requests), "the slow query", process)
    _, stderr = interrupt(process)
    assert process.returncode == 130, stderr
    assert "interrupted: 1 of 2 queries are done" in stderr and "Traceback" not in stderr
    assert set(read_results(slow_out)) == {"fast"}
