"""The result of an execution, built from the durable records (the single source of truth)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    ExecutionRecord,
    PlanRecord,
    StepRecord,
)

__all__ = ["WAITING_EXIT_CODE", "ExecutionResult", "overall_status", "step_json"]

WAITING_EXIT_CODE = 4
"""The exit code of a run that stopped because steps wait for a person's approval."""


def overall_status(
    steps: list[StepRecord],
) -> Literal["waiting", "succeeded", "partial", "failed"]:
    """``waiting`` while a step waits for a person's approval; else ``succeeded`` if every step
    succeeded or was skipped by a condition (a decision, not a failure), ``failed`` if none
    succeeded, else ``partial`` (a denied step counts as a step that did not succeed)."""
    if any(step.status == "waiting_approval" for step in steps):
        return "waiting"
    succeeded = sum(1 for step in steps if step.status == "succeeded")
    decided = sum(1 for step in steps if step.status == "skipped" and step.reason == "condition")
    if succeeded + decided == len(steps):
        return "succeeded"
    return "failed" if succeeded == 0 else "partial"


def step_json(step: StepRecord) -> dict[str, Any]:
    """One step in the CLI/API JSON contract."""
    data: dict[str, Any] = {
        "id": step.step_id,
        "tool": step.tool,
        "status": step.status,
        "attempts": step.attempts,
        "output": step.output,
        "error": step.error,
        "resolvedParameters": step.resolved_parameters,
        "startedAt": step.started_at,
        "finishedAt": step.finished_at,
        "durationMs": step.duration_ms,
    }
    if step.timeout is not None:
        data["timeout"] = step.timeout
        data["timeoutSource"] = step.timeout_source
    if step.output_truncated:
        data["outputTruncated"] = True
    if step.used_fallback:
        data["usedFallback"] = True
    if step.cached:
        data["cached"] = True
        data["cacheAgeSeconds"] = step.cache_age_seconds
    if step.reused_from is not None:
        data["reusedFrom"] = step.reused_from
    if step.reason is not None:
        data["reason"] = step.reason
    if step.items is not None:
        data["items"] = [item.to_json() for item in step.items]
    if step.decision is not None:
        data["decision"] = step.decision.to_json()
    return data


@dataclass(frozen=True)
class ExecutionResult:
    """What ``toolplan run/execute --json`` prints and :func:`toolplan.execute_plan` returns."""

    request_id: str
    plan_id: str
    status: str
    """``succeeded``, ``partial``, ``failed`` or ``cancelled`` when finished; ``waiting`` while
    a step waits for a person's approval; ``queued``/``running`` otherwise."""
    steps: list[StepRecord]
    outputs: dict[str, Any]
    """Output of each ``outputSteps`` step (every step when absent); ``None`` if it did not succeed."""
    plan: Plan
    error: str | None = None
    cancel_requested_at: str | None = None
    """When a cancel was requested (``toolplan cancel``), if one was."""
    stored: bool = False
    """Whether the execution had finished before and this is its stored result: executing it
    called no tool."""

    @property
    def finished(self) -> bool:
        """Whether the execution reached a final status."""
        return self.status in TERMINAL_EXECUTION_STATUSES

    @property
    def exit_code(self) -> int:
        """0 when every step succeeded, 4 while a step waits for approval, 1 otherwise
        (``cancelled`` too: the CLI contract)."""
        if self.status == "waiting":
            return WAITING_EXIT_CODE
        return 0 if self.status == "succeeded" else 1

    @property
    def waiting(self) -> list[StepRecord]:
        """The steps waiting for a person's approval, in plan order."""
        return [step for step in self.steps if step.status == "waiting_approval"]

    def step(self, step_id: str) -> StepRecord:
        """The record of one step."""
        for step in self.steps:
            if step.step_id == step_id:
                return step
        raise KeyError(step_id)

    @classmethod
    def from_records(cls, plan: PlanRecord, execution: ExecutionRecord) -> ExecutionResult:
        """Combine a stored plan and its execution record."""
        model = parse_plan(plan.plan)
        by_id = {step.step_id: step for step in execution.steps}
        outputs = {
            step_id: by_id[step_id].output if by_id[step_id].status == "succeeded" else None
            for step_id in model.result_steps
            if step_id in by_id
        }
        return cls(
            request_id=plan.request_id,
            plan_id=plan.plan_id,
            status=execution.status,
            steps=list(execution.steps),
            outputs=outputs,
            plan=model,
            error=execution.error,
            cancel_requested_at=execution.cancel_requested_at,
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON contract of ``toolplan run --json``."""
        data: dict[str, Any] = {
            "requestId": self.request_id,
            "planId": self.plan_id,
            "status": self.status,
            "steps": [step_json(step) for step in self.steps],
            "outputs": self.outputs,
        }
        if self.error:
            data["error"] = self.error
        if self.cancel_requested_at:
            data["cancelRequestedAt"] = self.cancel_requested_at
        return data
