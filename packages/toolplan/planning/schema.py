"""The LLM-facing plan schema, and its conversion into the engine's plan format.

Real OpenAI strict ``json_schema`` rejects free-form objects, so ``parameters`` travels as a JSON
*string* here; the field names are exactly the plan format's. Conversion is lenient where it is
safe (an object where a string was asked for is accepted) and reports everything else as
validation issues that go back to the model in the repair loop.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from toolplan.errors import ValidationIssue

__all__ = ["LLMPlan", "LLMStep", "to_plan_data"]


class LLMStep(BaseModel):
    """One tool call, as the model writes it."""

    id: str = Field(description="Unique step id: letters, digits, _ or -, starting with a letter.")
    tool: str = Field(description="Exact tool name from the catalog.")
    parameters: str = Field(
        description='The arguments as a JSON object encoded as a string, e.g. "{\\"name\\": \\"Alice\\"}". '
        "Strings may contain templates like {{stepId.field}}."
    )
    dependsOn: list[str] = Field(
        description="Ids of steps that must finish first; template references are added automatically."
    )
    confidence: float = Field(description="Confidence from 0 to 1 that this step is right.")


class LLMPlan(BaseModel):
    """A complete plan: a DAG of tool calls run by a deterministic engine."""

    reasoning: str = Field(description="One or two sentences on how the steps achieve the request.")
    steps: list[LLMStep] = Field(description="The tool calls.")
    outputSteps: list[str] = Field(description="Ids of the steps whose outputs answer the request.")


def to_plan_data(payload: Any) -> tuple[dict[str, Any] | None, list[ValidationIssue]]:
    """Turn the model's structured output into canonical plan JSON, or issues for the repair loop."""
    if isinstance(payload, BaseModel):
        payload = payload.model_dump()
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError as error:
            return None, [ValidationIssue("json", f"the response is not valid JSON: {error}")]
    if not isinstance(payload, dict) or not isinstance(payload.get("steps"), list):
        return None, [
            ValidationIssue("shape", "the response must be an object with a 'steps' list")
        ]
    issues: list[ValidationIssue] = []
    steps = []
    for index, raw in enumerate(payload["steps"]):
        if not isinstance(raw, dict):
            issues.append(ValidationIssue("shape", f"steps[{index}] must be an object"))
            continue
        step = dict(raw)
        label = f"step {step.get('id', index)!r}"
        parameters = step.get("parameters", {})
        if isinstance(parameters, str):
            try:
                parameters = json.loads(parameters) if parameters.strip() else {}
            except (ValueError, RecursionError) as error:
                issues.append(
                    ValidationIssue(
                        "json", f"{label}: parameters is not a valid JSON object string: {error}"
                    )
                )
                continue
        step["parameters"] = parameters
        if step.get("confidence") is not None:
            try:
                step["confidence"] = min(1.0, max(0.0, float(step["confidence"])))
            except (TypeError, ValueError):
                step.pop("confidence")
        steps.append(step)
    data: dict[str, Any] = {"steps": steps}
    if payload.get("reasoning"):
        data["reasoning"] = str(payload["reasoning"])
    if payload.get("outputSteps"):
        data["outputSteps"] = payload["outputSteps"]
    return (None if issues else data), issues
