"""What the client's calls return carries what a user reaches for first, under the names the
JSON uses: ``status``, ``steps`` (each with its ``id``), ``outputs``, ``plan_id``."""

from __future__ import annotations

from pathlib import Path

from toolplan import AsyncToolplan, Toolplan

PLAN = Path(__file__).resolve().parents[2] / "examples" / "blog_chain.json"


def test_a_run_has_status_steps_with_ids_and_outputs(tmp_path: Path) -> None:
    with Toolplan(tools=["blog"], store=f"sqlite:///{tmp_path / 'tp.db'}") as tp:
        outcome = tp.run(PLAN)
    assert outcome.status == "succeeded"  # was outcome.result.status only: AttributeError
    assert [step.id for step in outcome.steps] == ["author", "blog", "comment"]
    assert outcome.outputs == outcome.result.outputs and set(outcome.outputs) == {"blog", "comment"}
    assert outcome.plan_id == outcome.result.plan_id
    assert outcome.request_id == outcome.result.request_id
    assert outcome.exit_code == 0


async def test_step_records_have_the_id_the_json_has(tmp_path: Path) -> None:
    async with AsyncToolplan(tools=["blog"], store=f"sqlite:///{tmp_path / 'tp.db'}") as tp:
        ref = await tp.submit(PLAN)
        result = await tp.execute(ref.plan_id)
    assert [step.id for step in result.steps] == [s["id"] for s in result.to_json()["steps"]]
    assert result.step("blog").id == "blog"
