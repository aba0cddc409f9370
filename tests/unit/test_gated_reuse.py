"""A reused plan goes through the gate as a new one does (issue 42, item 1: "replans and
reuse"): a stored plan whose fallback became a gated tool's, or was one before validation
refused such plans, is never reused; the query is planned anew. (A replan is a new plan from
the planner, validated by the same :func:`~toolplan.validation.dag.analyze`; the planner's plan
schema has no ``fallback`` at all.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import tools as test_tools
from toolplan.pipeline.flow import FromQuery, _reuse
from toolplan.plan_format.limits import InputLimits
from toolplan.planning.reuse import find_reusable
from toolplan.runs.context import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog

QUERY = "Try the primary, and wire the refund if it fails"
PLAN: dict[str, Any] = {
    "steps": [
        {
            "id": "x",
            "tool": "business_error",
            "parameters": {"message": "primary fails"},
            "fallback": {"tool": "wire_money", "parameters": {"to": "NO12", "amount": 5}},
        }
    ]
}


def test_a_stored_plan_with_a_fallback_now_gated_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(tmp_path / "calls.jsonl"))
    store = SqliteStore(tmp_path / "toolplan.db")
    # Yesterday's catalog: the same tool, not gated yet (tags are not part of the catalog's
    # fingerprint, so today's catalog matches it for reuse).
    ungated = test_tools.wire_money.model_copy(update={"tags": []})
    before = ToolCatalog([test_tools.business_error, ungated])
    ref = submit_plan(PLAN, store=store, catalog=before, query=QUERY, max_steps=10, reusable=True)
    result = asyncio.run(execute_stored_plan(ref.plan_id, ExecutionContext(store, before)))
    assert result.status == "succeeded" and result.step("x").used_fallback

    today = ToolCatalog([test_tools.business_error, test_tools.wire_money])
    assert today.gated("wire_money") and not before.gated("wire_money")
    assert find_reusable(store, QUERY, today, "exact") is not None  # it would match...
    reused = asyncio.run(
        _reuse(
            FromQuery(QUERY, reuse="exact"),
            store,
            today,
            10,
            InputLimits(),
            None,
            time.perf_counter(),
        )
    )
    assert reused is None  # ...but it does not validate any more: planned anew
    assert len(store.list_plans(ref.request_id)) == 1  # and nothing new was stored
