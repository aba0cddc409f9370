"""``execute_plan``: toolplan as one LangChain tool that an existing agent can call.

The agent keeps its single tools and gains a meta-tool: the model writes a whole plan in one tool
call, toolplan validates it, stores it with request/plan IDs and runs it with the durable engine
(:func:`toolplan.service.operations.submit_plan` + :func:`toolplan.service.operations.execute_stored_plan`).

The result is dual: the model reads a short summary (each output step's status and output, cut to
``output_limit`` characters, plus errors and skipped steps), while the tool message's ``artifact``
holds the full record (``ExecutionResult.to_json()`` and the plan) for UIs, logs and tests.
Intermediate outputs never enter the model's context. An invalid plan comes back as an error tool
message listing every problem, and nothing runs.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from langchain_core.tools import BaseTool, ToolException
from pydantic import ConfigDict, PrivateAttr

from toolplan._blocking import run_blocking
from toolplan.client import AsyncToolplan
from toolplan.config import Settings
from toolplan.engine.result import ExecutionResult
from toolplan.errors import InvalidInput, PlanInvalid, ToolplanError, ValidationIssue
from toolplan.pipeline.flow import FromDocument
from toolplan.plan_format.limits import InputLimits, check_json, parse_json_text
from toolplan.planning.parsing import to_plan_data
from toolplan.planning.prompts import load_prompt
from toolplan.service.wiring import resolve_catalog
from toolplan.store import Store
from toolplan.store.protocol import StepRecord
from toolplan.tools.catalog import ToolCatalog, ToolInfo
from toolplan.tools.returns import shown_shape

__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "PLAN_ARGUMENT_SCHEMA",
    "PLAN_STRING_SCHEMA",
    "PlanFormat",
    "PlanTool",
    "describe_tools",
    "plan_tool",
    "summarize",
]

DEFAULT_OUTPUT_LIMIT = 2_000
"""Characters of each output step's output that the model sees; the artifact keeps everything."""

_STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "Unique step id: letters, digits, _ or -."},
        "tool": {"type": "string", "description": "Exact name of the tool to call."},
        "parameters": {
            "type": "object",
            "description": "The tool's arguments. Strings may contain templates such as "
            "{{stepId.field}} that refer to earlier steps' outputs.",
        },
        "dependsOn": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Steps that must finish first, when no template refers to them.",
        },
    },
    "required": ["id", "tool", "parameters"],
}

PLAN_ARGUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plan": {
            "description": "The plan: an object with steps (and optionally reasoning and "
            "outputSteps), or that object encoded as a JSON string.",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "reasoning": {
                            "type": "string",
                            "description": "One sentence on how the steps answer the request.",
                        },
                        "steps": {"type": "array", "items": _STEP_SCHEMA},
                        "outputSteps": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Ids of the steps whose outputs you need "
                            "(default: all).",
                        },
                    },
                    "required": ["steps"],
                },
                {"type": "string"},
            ],
        }
    },
    "required": ["plan"],
}
"""The JSON schema of ``execute_plan``'s arguments, as the model sees it (``plan_format="object"``).

No ``$ref``, no nullable types and one required field, so providers with a restricted schema
dialect accept it; the plan may also travel as a JSON string, which small models handle better.
Arguments are not validated against it before the tool runs: :func:`toolplan.plan_format.plan.parse_plan` and
:func:`toolplan.validation.dag.analyze` report every problem at once, in words the model can act on.
"""

PLAN_STRING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plan": {
            "type": "string",
            "description": 'The plan as a JSON string: {"reasoning": "...", "steps": [{"id": '
            '"...", "tool": "...", "parameters": {...}}], "outputSteps": ["..."]}',
        }
    },
    "required": ["plan"],
    "additionalProperties": False,
}
"""The schema with ``plan_format="string"``: one string field. OpenAI's strict mode accepts it
(it cannot express free-form ``parameters`` objects), and so do models that only manage flat
string arguments."""

PlanFormat = Literal["object", "string"]
"""How the model passes the plan: ``object`` (an object, or a JSON string) or ``string`` only."""


def _signature(info: ToolInfo) -> str:
    properties = info.parameters.get("properties") or {}
    required = set(info.parameters.get("required") or [])
    arguments = ", ".join(name if name in required else f"{name}?" for name in properties)
    first_line = (info.description or "").strip().splitlines()[0:1]
    summary = first_line[0][:120] if first_line else ""
    shape = shown_shape(info.returns)
    returns = f" -> {shape}" if shape else ""
    return f"- {info.name}({arguments}){returns}" + (f": {summary}" if summary else "")


def describe_tools(catalog: ToolCatalog, *, prompts_dir: str | None = None) -> str:
    """The tool's description: how to write a plan, and the catalog in one line per tool."""
    tools = "\n".join(_signature(info) for info in catalog.infos()) or "(none)"
    return load_prompt("execute-plan", settings=prompts_dir).render(tools=tools).strip()


# -- the summary the model reads -----------------------------------------------------------------


def _clip(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated: {len(text)} characters in total]"


def _line(step: StepRecord) -> str:
    return f"- {step.step_id} ({step.tool}): {step.status}"


def summarize(result: ExecutionResult, *, output_limit: int = DEFAULT_OUTPUT_LIMIT) -> str:
    """The concise text the model reads after a plan ran.

    Each ``outputSteps`` step (every step when absent) with its status and its output (at most
    ``output_limit`` characters) or error; then the other steps that failed or were skipped.
    Outputs of other steps are left out.
    """
    succeeded = sum(1 for step in result.steps if step.status == "succeeded")
    lines = [
        f"Plan {result.plan_id} {result.status}: {succeeded} of {len(result.steps)} steps "
        "succeeded."
    ]
    if result.error:
        lines.append(f"Error: {result.error}")
    wanted = set(result.plan.result_steps)
    outputs = [step for step in result.steps if step.step_id in wanted]
    if outputs:
        lines.append("Outputs:")
    for step in outputs:
        if step.status == "succeeded":
            lines.append(_line(step))
            lines.append("  " + _clip(step.output, output_limit).replace("\n", "\n  "))
        else:
            lines.append(f"{_line(step)}: {step.error or 'no output'}")
    others = [
        s for s in result.steps if s.step_id not in wanted and s.status in ("failed", "skipped")
    ]
    if others:
        lines.append("Other steps that did not succeed:")
        lines.extend(f"{_line(step)}: {step.error or 'no reason recorded'}" for step in others)
    return "\n".join(lines)


def _rejection(error: PlanInvalid) -> str:
    lines = [f"The plan was rejected and nothing ran ({len(error.issues)} problem(s)):"]
    lines.extend(f"- {issue.message}" for issue in error.issues)
    if any(issue.code == "recursion" for issue in error.issues):
        lines.append(
            "execute_plan runs a plan; it cannot be a step of one. Put the tools' own calls "
            "in the steps instead."
        )
    lines.append("Fix the plan and call execute_plan again.")
    return "\n".join(lines)


# -- arguments -----------------------------------------------------------------------------------


def _plan_data(plan: Any, extra: Mapping[str, Any], limits: InputLimits) -> dict[str, Any]:
    """The plan as canonical JSON, accepting an object, a JSON string, or the plan's fields at
    the top level; the input limits are checked first; shape problems raise
    :class:`PlanInvalid`."""
    if plan is None and "steps" in extra:
        plan = dict(extra)  # the model left out the "plan" wrapper
    if plan is None:
        raise PlanInvalid(
            [ValidationIssue("shape", "execute_plan needs a 'plan' argument: {\"steps\": [...]}")]
        )
    if isinstance(plan, str):
        plan = parse_json_text(plan, "the plan string", limits)
    else:
        check_json(plan, limits)
    data, issues = to_plan_data(plan)
    if issues or data is None:
        raise PlanInvalid(issues)
    return data  # an empty outputSteps means every step, as for the planner


# -- the tool ------------------------------------------------------------------------------------


class PlanTool(BaseTool):
    """The ``execute_plan`` meta-tool. Build it with :func:`plan_tool`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "execute_plan"
    description: str = ""
    args_schema: Any = PLAN_ARGUMENT_SCHEMA
    response_format: Any = "content_and_artifact"
    handle_tool_error: Any = True
    catalog: ToolCatalog
    """The tools plans may call."""
    settings: Settings
    """Store URI, step limit and execution options."""
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    """Characters of each output the model sees."""

    _client: AsyncToolplan | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def client(self) -> AsyncToolplan:
        """The client plans run through: this tool's catalog and settings, and its store."""
        with self._lock:
            if self._client is None:
                self._client = AsyncToolplan(tools=self.catalog, settings=self.settings)
            return self._client

    @property
    def store(self) -> Store:
        """The store plans are kept in, opened on first use."""
        return self.client.store

    def close(self) -> None:
        """Close the store if this tool opened it."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    async def _execute(self, plan: Any, extra: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        try:
            data = await asyncio.to_thread(_plan_data, plan, extra, self.settings.limits)
            outcome = await self.client.run(FromDocument(data, meta={"source": "execute_plan"}))
        except PlanInvalid as error:
            raise ToolException(_rejection(error)) from None
        except ToolplanError as error:
            raise ToolException(f"execute_plan could not run the plan: {error.message}") from None
        result = outcome.result
        assert result is not None  # a submitted plan never needs review
        artifact = {**result.to_json(), "plan": result.plan.to_json()}
        return summarize(result, output_limit=self.output_limit), artifact

    async def _arun(self, plan: Any = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        extra = {k: v for k, v in kwargs.items() if k not in ("run_manager", "config")}
        return await self._execute(plan, extra)

    def _run(self, plan: Any = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        extra = {k: v for k, v in kwargs.items() if k not in ("run_manager", "config")}
        return run_blocking(self._execute(plan, extra))


def plan_tool(
    tools: ToolCatalog | Iterable[BaseTool | Callable[..., Any]],
    *,
    store: Store | None = None,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    settings: Settings | None = None,
    plan_format: PlanFormat = "object",
) -> PlanTool:
    """The ``execute_plan`` tool over ``tools`` (LangChain tools, functions or a catalog).

    Give it to an agent next to its single tools (``create_agent(model, [*tools, plan_tool(tools)])``).
    ``store`` defaults to the one in ``settings`` (``TOOLPLAN_STORE``, else the embedded SQLite
    file), opened on first use; ``settings`` (default :meth:`Settings.from_env`) also gives the
    step limit and execution options. Each call returns ``(summary, artifact)``: the model reads
    the summary, the ``ToolMessage.artifact`` holds the full execution record. ``plan_format``
    chooses the argument schema: :data:`PLAN_ARGUMENT_SCHEMA` or :data:`PLAN_STRING_SCHEMA`
    (for OpenAI ``strict=True`` tools); both forms are accepted at run time either way.
    """
    if output_limit < 1:
        raise InvalidInput(f"output_limit must be at least 1 character, got {output_limit}")
    # An agent's tool list may include the meta-tool itself; plans cannot call it anyway.
    settings = settings or Settings.from_env()
    catalog = resolve_catalog(tools, settings=settings, drop_reserved=True)
    tool = PlanTool(
        description=describe_tools(catalog, prompts_dir=settings.planner.prompts_dir),
        args_schema=PLAN_STRING_SCHEMA if plan_format == "string" else PLAN_ARGUMENT_SCHEMA,
        catalog=catalog,
        settings=settings,
        output_limit=output_limit,
    )
    if store is not None:
        tool._client = AsyncToolplan(store=store, tools=catalog, settings=tool.settings)
    return tool
