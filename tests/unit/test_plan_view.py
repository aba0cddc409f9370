"""The plan page's timeline (toolplan.service.plan_view): bars from the first start, running
steps up to now, and an axis that shows the estimate unless it would squash the run."""

from __future__ import annotations

from datetime import UTC, datetime

from toolplan.service.plan_view import _timeline


def test_the_timeline_covers_the_estimate_unless_it_would_squash_the_run() -> None:
    steps = [
        {
            "id": "a",
            "state": "succeeded",
            "critical": True,
            "startedAt": "2026-01-01T00:00:00Z",
            "finishedAt": "2026-01-01T00:00:01Z",
        },
        {
            "id": "b",
            "state": "running",
            "critical": False,
            "startedAt": "2026-01-01T00:00:00.500Z",
            "finishedAt": None,
        },
        {"id": "c", "state": "pending", "critical": False, "startedAt": None, "finishedAt": None},
    ]
    now = datetime(2026, 1, 1, 0, 0, 2, tzinfo=UTC)
    near = _timeline(steps, {"durationMs": 3000.0}, now)
    assert [(r["id"], r["startMs"], r["endMs"], r["running"]) for r in near["rows"]] == [
        ("a", 0.0, 1000.0, False),
        ("b", 500.0, 2000.0, True),
    ]
    assert near["spanMs"] == 3000.0 and near["estimateOffScale"] is False
    far = _timeline(steps, {"durationMs": 60_000.0}, now)
    assert far["spanMs"] == 2000.0 and far["estimateOffScale"] is True
    assert _timeline(steps[2:], None, now) == {
        "origin": None,
        "rows": [],
        "estimateMs": None,
        "estimateOffScale": False,
        "spanMs": 1.0,
    }
