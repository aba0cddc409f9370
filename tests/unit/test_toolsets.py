"""The built-in offline toolsets: deterministic data, business errors, idempotent writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import ToolException
from pydantic import ValidationError

from toolplan.builtin_tools import blog, metrics, weather
from toolplan.engine.step import STORE_CONFIG_KEY
from toolplan.store.sqlite import SqliteStore


def config(store: SqliteStore, key: str) -> dict[str, Any]:
    return {"configurable": {STORE_CONFIG_KEY: store}, "metadata": {"idempotency_key": key}}


def test_blog_writes_are_idempotent_per_key_and_persisted(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    first = blog.createAuthor.invoke(
        {"name": "Alice", "email": "a@x.io"}, config=config(store, "plan_1:author")
    )
    again = blog.createAuthor.invoke(
        {"name": "Alice", "email": "a@x.io"}, config=config(store, "plan_1:author")
    )
    other = blog.createAuthor.invoke(
        {"name": "Alice", "email": "a@x.io"}, config=config(store, "plan_2:author")
    )
    assert first == again and first["_id"] != other["_id"]
    assert len(store.find_records("authors", {"name": "Alice"})) == 2
    post = blog.createBlog.invoke(
        {"authorId": first["_id"], "title": "T", "content": "C"}, config=config(store, "k:b")
    )
    assert (
        blog.listBlogs.invoke({"authorId": first["_id"]}, config=config(store, "k:l"))["count"] == 1
    )
    assert (
        blog.createComment.invoke(
            {"blogId": post["_id"], "text": "hi"}, config=config(store, "k:c")
        )["author"]
        == "anonymous"
    )


def test_blog_business_errors(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    with pytest.raises(ToolException, match="does not exist"):
        blog.createBlog.invoke(
            {"authorId": "nope", "title": "T", "content": "C"}, config=config(store, "k")
        )
    with pytest.raises(ToolException, match="invalid email"):
        blog.createAuthor.invoke({"name": "A", "email": "no-at-sign"}, config=config(store, "k2"))


def test_metrics_and_weather_are_deterministic() -> None:
    assert metrics.query_metric.invoke({"name": "cpu_usage"})["current"] == 72.5
    assert (
        metrics.check_threshold.invoke({"metric_name": "cpu_usage", "threshold": 80})["exceeded"]
        is False
    )
    assert metrics.check_threshold.invoke(
        {"metric_name": "error_rate", "threshold": 1, "value": 2, "operator": "gt"}
    )["exceeded"]
    assert [m["name"] for m in metrics.list_metrics.invoke({"category": "compute"})["metrics"]] == [
        "cpu_usage",
        "memory_usage",
    ]
    with pytest.raises(ValidationError, match="cpu_usage"):  # a closed set, checked before it runs
        metrics.query_metric.invoke({"name": "nope"})
    tokyo = weather.get_weather.invoke({"location": "Tokyo"})
    assert tokyo == weather.get_weather.invoke({"location": "tokyo "}) | {"city": "Tokyo"}
    london = weather.get_weather.invoke({"location": "London"})
    comparison = weather.compare_data.invoke({"data_a": tokyo, "data_b": london})
    assert comparison["warmer"] in ("Tokyo", "London") and comparison["difference"] >= 0
    assert weather.summarize.invoke({"data": [tokyo, london]})["count"] == 2


def test_blog_tools_work_without_a_store() -> None:
    created = blog.createDraft.invoke({"title": "x"})
    assert created["status"] == "draft" and created["_id"]
