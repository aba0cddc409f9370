"""A client loads the tools recorded with stored plans once per distinct set of sources, however
many plans run with them (a lease-queue worker runs many)."""

from __future__ import annotations

from toolplan.client import Toolplan
from toolplan.plan_format.meta import TOOL_SOURCES_KEY
from toolplan.store.protocol import PlanRecord
from toolplan.tools.sources import ToolSources


def _record(plan_id: str, sources: ToolSources) -> PlanRecord:
    return PlanRecord(
        plan_id=plan_id,
        request_id="req_1",
        plan={"steps": []},
        analysis={},
        status="planned",
        created_at="2026-11-26T00:00:00Z",
        meta={TOOL_SOURCES_KEY: sources.to_json()},
    )


def test_recorded_tools_load_once_per_client_and_sources() -> None:
    sources = ToolSources.of(("tests.support.tools",), None)
    loads: list[str] = []
    client = Toolplan(store="sqlite:///unused.db")  # no tools chosen: recorded ones are used

    def told(record: PlanRecord, _: ToolSources) -> None:
        loads.append(record.plan_id)

    first = client.catalog_for(_record("plan_a", sources), on_load=told)
    second = client.catalog_for(_record("plan_b", sources), on_load=told)

    assert "echo" in first.names and second is first
    assert loads == ["plan_a"]  # told once: the second plan reuses the loaded catalog
