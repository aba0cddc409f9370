"""The respond node's work (LLMCompiler's joiner): show the model what the plan produced, within
a token budget, and read its decision: ``{"action": "answer", "answer": ...}`` or
``{"action": "replan", "reason": ...}``.

The prompts are files (``prompts/respond.md``, ``respond-input.md``, ``replan.md``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from toolplan.agent.budget import truncate_tokens
from toolplan.engine.result import ExecutionResult
from toolplan.plan_format.templates import key_writable, reference_text
from toolplan.planning.call import StructuredRequest, call_model
from toolplan.planning.context import PlannerContext
from toolplan.planning.llm_errors import LLMOutputTruncated
from toolplan.planning.parsing import message_payload
from toolplan.planning.prompts import Prompt, load_prompt

__all__ = [
    "DEFAULT_RESPOND_BUDGET",
    "RESPOND_SCHEMA",
    "Decision",
    "decide",
    "failure_summary",
    "replan_context",
    "respond_messages",
]

DEFAULT_RESPOND_BUDGET = 4000
"""Tokens of plan outputs and failures the respond node shows the model, at most."""

RESPOND_SCHEMA: dict[str, Any] = {
    "title": "Respond",
    "description": "Answer the request from the plan's results, or ask for a new plan.",
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["answer", "replan"]},
        "answer": {"type": "string", "description": "The answer for the user (action answer)."},
        "reason": {
            "type": "string",
            "description": "What went wrong and what the next plan should change (action replan).",
        },
    },
    "required": ["action"],
}


@dataclass(frozen=True)
class Decision:
    """What the respond node decided, and what the call cost."""

    action: Literal["answer", "replan"]
    text: str
    """The answer, or the reason to replan."""
    usage: dict[str, int]
    truncated: bool
    """Whether the results shown to the model were cut to fit the budget."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _problems(result: ExecutionResult) -> list[tuple[str, str]]:
    """(step id, one line) for every step that failed, was denied by a person (the reason is
    in its error) or was skipped."""
    found = []
    for step in result.steps:
        if step.status in ("failed", "skipped", "denied"):
            found.append((step.step_id, f"{step.tool} {step.status}: {step.error or 'no error'}"))
    return found


def failure_summary(result: ExecutionResult) -> str:
    """The failed and skipped steps, one per line (empty when none)."""
    return "\n".join(f"- {step}: {line}" for step, line in _problems(result))


def _bounded(blocks: list[str], budget: int) -> tuple[list[str], bool]:
    """Each block cut to an equal share of ``budget`` tokens (at least 40)."""
    if not blocks:
        return [], False
    share = max(40, budget // len(blocks))
    cut_any = False
    out = []
    for block in blocks:
        text, cut = truncate_tokens(block, share)
        out.append(text)
        cut_any = cut_any or cut
    return out, cut_any


def respond_messages(
    query: str,
    result: ExecutionResult,
    *,
    replan_allowed: bool,
    budget: int = DEFAULT_RESPOND_BUDGET,
    prompts: tuple[Prompt, Prompt] | None = None,
    prompts_dir: str | None = None,
) -> tuple[list[BaseMessage], bool]:
    """The respond call's messages and whether anything was truncated. Outputs get three
    quarters of ``budget``, failures the rest; a cut says so, in the text and in a note."""
    system, template = prompts or (
        load_prompt("respond", settings=prompts_dir),
        load_prompt("respond-input", settings=prompts_dir),
    )
    outputs = [f"- {step}: {_json(value)}" for step, value in result.outputs.items()]
    failures = [f"- {step}: {line}" for step, line in _problems(result)]
    shown_outputs, cut_outputs = _bounded(outputs, budget * 3 // 4)
    shown_failures, cut_failures = _bounded(failures, budget // 4)
    cut = cut_outputs or cut_failures
    note = (
        f"\nNote: some results were truncated to fit {budget} tokens (marked '[truncated: ...]'); "
        "do not guess what was cut."
        if cut
        else ""
    )
    text = template.render(
        query=query,
        status=result.status,
        replan_allowed="yes" if replan_allowed else "no (answer, and say what failed)",
        outputs="\n".join(shown_outputs) or "(none)",
        failures="\n".join(shown_failures) or "(none)",
        truncation=note,
    )
    return [SystemMessage(system.template), HumanMessage(text)], cut


def _paths(step_id: str, output: Any) -> str:
    """The templates a later step could use for ``output``'s top-level fields
    (``{{author._id}}``, ``{{author.name}}``), or the whole output's (``{{author}}``)."""
    if isinstance(output, dict) and output:
        keys = [key for key in output if isinstance(key, str) and key_writable(key)][:8]
        if keys:
            return ", ".join("{{" + reference_text(step_id, (key,)) + "}}" for key in keys)
    return "{{" + step_id + "}}"


def replan_context(
    query: str,
    plan: dict[str, Any],
    result: ExecutionResult,
    reason: str,
    *,
    prompts_dir: str | None = None,
) -> str:
    """The planner's extra message for a replan (``prompts/replan.md``): the previous plan, what
    each step did (bounded: outputs with the templates that reach them, errors with the arguments
    that caused them), why a new plan is needed, and the request again, last, so that a small
    model plans for the request and not for the failure report."""
    lines = []
    for step in result.steps:
        head = f"- {step.step_id} ({step.tool}) {step.status}"
        if step.status == "succeeded":
            lines.append(
                f"{head}: {_json(step.output)}; a new plan that repeats this step reads it as "
                f"{_paths(step.step_id, step.output)}"
            )
        elif step.status == "failed":
            lines.append(
                f"{head} with arguments {_json(step.resolved_parameters)}: {step.error or ''}"
            )
        else:
            lines.append(f"{head}: {step.error or ''}")
    results, _ = truncate_tokens("\n".join(lines), DEFAULT_RESPOND_BUDGET)
    previous, _ = truncate_tokens(_json(plan), DEFAULT_RESPOND_BUDGET)
    return load_prompt("replan", settings=prompts_dir).render(
        previous_plan=previous, results=results, reason=reason, query=query
    )


async def _call(
    ctx: PlannerContext,
    messages: list[BaseMessage],
    *,
    usage: dict[str, int] | None,
    calls: int,
    config: RunnableConfig | None,
    about: dict[str, Any] | None = None,
) -> tuple[Any, dict[str, int]]:
    """One structured call through :func:`~toolplan.planning.call.call_model` (client errors
    become :class:`~toolplan.errors.LLMUnavailable`, exit 3; usage counted; an answer cut off at
    the output-token limit refused), with the planner's model and settings."""
    try:
        reply = await call_model(
            ctx.model_call(),
            StructuredRequest(messages, RESPOND_SCHEMA, about=about),
            usage=usage,
            calls=calls,
            config=config,
        )
    except LLMOutputTruncated as cut:  # its own message speaks of a plan, and nothing stored
        raise LLMOutputTruncated(
            f"model {ctx.model_name!r} stopped at the output limit of "
            f"{ctx.max_tokens or 'its'} tokens before finishing the answer (finish_reason "
            "'length'); the plan's steps are stored. Raise TOOLPLAN_LLM_MAX_TOKENS if answers "
            "are that long; a model that repeats itself needs a stronger model",
            details=cut.details,
        ) from None
    return message_payload(reply.answer.message), reply.usage


def read_decision(payload: Any) -> tuple[Literal["answer", "replan"], str]:
    """The model's decision, read leniently: a JSON object (or its text), else plain text is
    taken as the answer."""
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            return "answer", payload.strip()
    if not isinstance(payload, dict):
        return "answer", "" if payload is None else _json(payload)
    if payload.get("action") == "replan":
        return "replan", str(payload.get("reason") or "the model asked for a new plan")
    text = payload.get("answer")
    if not isinstance(text, str) or not text.strip():
        text = str(payload.get("reason") or "")
    return "answer", text


async def decide(
    ctx: PlannerContext,
    query: str,
    result: ExecutionResult,
    *,
    replan_allowed: bool,
    usage: dict[str, int] | None = None,
    calls: int = 0,
    budget: int = DEFAULT_RESPOND_BUDGET,
    config: RunnableConfig | None = None,
) -> Decision:
    """Ask the model to answer or to replan; a replan when none is allowed becomes an answer
    that says what failed."""
    messages, cut = respond_messages(
        query, result, replan_allowed=replan_allowed, budget=budget, prompts_dir=ctx.prompts_dir
    )
    about = {  # what the call is for: tracing shows it, a scripted model answers from it
        "call": "respond",
        "request": query,
        "status": result.status,
        "outputs": result.outputs,
        "failures": [f"{step}: {line}" for step, line in _problems(result)],
        "replan_allowed": replan_allowed,
    }
    payload, total = await _call(
        ctx, messages, usage=usage, calls=calls, config=config, about=about
    )
    action, text = read_decision(payload)
    if action == "replan" and not replan_allowed:
        action, text = "answer", unanswered(result, text)
    if action == "answer" and not text:
        text = unanswered(result, "the model gave no answer")
    return Decision(action, text, total, cut)


def unanswered(result: ExecutionResult, reason: str) -> str:
    """The answer when the request could not be done: what failed, and why."""
    failures = failure_summary(result)
    text = f"The request could not be completed ({result.status}): {reason}"
    return f"{text}\nFailed or skipped steps:\n{failures}" if failures else text
