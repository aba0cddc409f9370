"""Human-readable output for the CLI (rich tables); ``--json`` output bypasses this module."""

from __future__ import annotations

import inspect
import json
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from toolplan.engine.recorder import StepEvent
from toolplan.engine.result import ExecutionResult
from toolplan.plan_format.plan import parse_plan
from toolplan.plan_format.python_print import render_python_plan
from toolplan.planning.progress import PlanningEvent
from toolplan.store.protocol import ItemRecord
from toolplan.tools.catalog import ToolInfo
from toolplan.tools.returns import shown_shape

__all__ = [
    "PlanningPrinter",
    "ProgressPrinter",
    "age_text",
    "execution_status_meaning",
    "plan_status_meaning",
    "planning_line",
    "print_described",
    "print_execution",
    "print_plan",
    "print_plan_list",
    "print_python_form",
    "print_tool",
    "print_tools",
    "progress_line",
    "short",
    "summary",
    "tries_per_item",
]

_STATUS_STYLE = {
    "succeeded": "green",
    "failed": "red",
    "skipped": "yellow",
    "running": "cyan",
    "pending": "dim",
    "partial": "yellow",
    "queued": "dim",
    "planned": "green",
    "needs_review": "yellow",
    "cancelled": "magenta",
    "waiting": "bold yellow",
    "waiting_approval": "bold yellow",
    "denied": "red",
}


def _status(value: str) -> Text:
    return Text(value, style=_STATUS_STYLE.get(value, ""))


def call_text(tool: str, arguments: Any, limit: int = 60) -> str:
    """A call as a person reads it before approving it: ``wire_money(to="NO12", amount=50)``;
    an argument longer than ``limit`` is cut (``toolplan show --json`` has it whole)."""
    if isinstance(arguments, list):  # a forEach step: one call per item
        return "; ".join(call_text(tool, item, limit) for item in arguments)
    if not isinstance(arguments, dict):
        return f"{tool}({short(arguments, limit)})"
    shown = ", ".join(
        f"{key}={short(json.dumps(value, ensure_ascii=False, default=str), limit)}"
        for key, value in arguments.items()
    )
    return f"{tool}({shown})"


def decision_text(decision: dict[str, Any]) -> str:
    """A stored decision in one line: ``approved by ada at 2025-…`` (with the reason)."""
    text = f"{decision['decision']} by {decision['by']} at {decision['at']}"
    return text + (f": {decision['reason']}" if decision.get("reason") else "")


def waiting_lines(result: ExecutionResult) -> list[str]:
    """What an execution that waits for approval says last: each waiting call, and how to
    approve or deny it."""
    lines = [
        f"waiting for approval: {step.step_id} → {call_text(step.tool, step.resolved_parameters)}"
        for step in result.waiting
    ]
    first = result.waiting[0].step_id if result.waiting else "STEP_ID"
    lines.append(
        f"approve with: toolplan approve {result.plan_id}"
        f" · deny with: toolplan deny {result.plan_id} {first} --reason TEXT"
    )
    return lines


def short(value: Any, limit: int = 60) -> str:
    """One-line preview of a JSON value."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def print_plan(console: Console, plan_json: dict[str, Any], analysis: dict[str, Any]) -> None:
    """The steps of a plan with their dependencies and layer."""
    layer_of = {step: i for i, layer in enumerate(analysis.get("layers", [])) for step in layer}
    table = Table(title="plan", title_justify="left")
    for column in ("step", "tool", "depends on", "layer", "parameters"):
        table.add_column(column)
    ordered = analysis.get("orderEdges") or {}
    for step in plan_json["steps"]:
        deps = list(analysis.get("dependencies", {}).get(step["id"], []))
        deps += [
            f"after {earlier} (order on {', '.join(on)})"
            for earlier, on in (ordered.get(step["id"]) or {}).items()
        ]
        table.add_row(
            step["id"],
            step["tool"],
            ", ".join(deps) or "-",
            str(layer_of.get(step["id"], "?")),
            short(step.get("parameters"), 50),
        )
    console.print(table)
    critical = analysis.get("criticalPath") or []
    if critical:
        console.print(f"critical path: {' -> '.join(critical)}")
    if ordered:
        console.print(
            "order: a step waits for the earlier steps on a resource it shares with them when "
            "either one writes it (toolplan tools shows each tool's effect)"
        )


def print_python_form(console: Console, plan_json: dict[str, Any]) -> None:
    """The plan as Python statements (what ``toolplan run --file plan.py`` reads back)."""
    console.print("as Python (read, never run):")
    text = render_python_plan(parse_plan(plan_json))
    console.print(Text("".join(f"  {line}\n" for line in text.splitlines())), end="")


def estimate_text(estimate: dict[str, Any] | None) -> str:
    """``1.20 s (history), $0.0031``: a plan's estimate for people (cost only when known)."""
    if not estimate:
        return "none (stored before estimates)"
    text = f"{estimate['durationMs'] / 1000:.2f} s ({estimate['basis']})"
    if estimate.get("costUsd") is not None:
        text += f", ${estimate['costUsd']:.4g}"
    return text


def print_execution(console: Console, result: ExecutionResult) -> None:
    """A table of steps with status and timing, then the outputs."""
    table = Table(title=f"{result.plan_id}  ({result.request_id})", title_justify="left")
    for column in ("step", "tool", "status", "tries", "ms"):
        table.add_column(column, no_wrap=True)
    table.add_column("output / error", overflow="fold", ratio=1)
    for step in result.steps:
        detail = step.error if step.status != "succeeded" else short(step.output, 80)
        if step.status == "waiting_approval":
            detail = "would call " + call_text(step.tool, step.resolved_parameters)
        text = Text(detail or "")
        if step.used_fallback:
            # Text, not markup: "[fallback]" as markup would vanish as an unknown style.
            text = Text.assemble(("fallback: ", "yellow"), text)
        if step.cached:
            text = Text.assemble(
                (f"cached ({step.cache_age_seconds or 0:.0f} s old): ", "cyan"), text
            )
        if step.reused_from is not None:
            text = Text.assemble((f"reused from {step.reused_from}: ", "cyan"), text)
        if step.items is not None:
            done = sum(1 for item in step.items if item.status == "succeeded")
            text = Text.assemble(items_summary(done, len(step.items)), text)
        table.add_row(
            step.step_id,
            step.tool,
            _status(step.status),
            str(step.attempts) if step.items is None else tries_per_item(step.items),
            f"{step.duration_ms:.1f}" if step.duration_ms is not None else "-",
            text,
        )
    console.print(table)
    console.print(Text.assemble("execution status: ", _status(result.status)))


def tries_per_item(items: list[ItemRecord]) -> str:
    """A ``forEach`` step's tries, per item (``1 each``, ``1-3 each``): its own count is the
    tool calls over all its items, which would read as retries of one call."""
    if not items:
        return "-"
    low = min(item.attempts for item in items)
    high = max(item.attempts for item in items)
    return f"{low} each" if low == high else f"{low}-{high} each"


def items_summary(succeeded: int, total: int) -> tuple[str, str]:
    """How a ``forEach`` step's items read in a table, one cell for all: ``3/5 items``."""
    return f"{succeeded}/{total} items  ", "green" if succeeded == total else "yellow"


def summary(text: str) -> str:
    """The summary of a description: its first paragraph (up to the first blank line, as a
    docstring's summary is), whitespace collapsed. Not its first sentence: where a sentence ends
    is a guess in any language (``e.g. 3 km`` is not the end of one), and the table cuts the
    text to its width anyway (``toolplan tools NAME`` shows it whole)."""
    first = text.strip().split("\n\n", 1)[0]
    return " ".join(first.split())


def plan_status_meaning(status: str, plan_id: str, *, executed: bool) -> str | None:
    """What a plan's status says (the plan itself, not a run of it): before it ran, the command
    that runs it; once it ran, where its outcome is (the execution status)."""
    if status == "needs_review":
        if executed:
            return "the planner was unsure; a person chose to run it"
        return f"the planner was unsure; it runs only with toolplan execute {plan_id} --yes"
    if status == "planned":
        if executed:
            return "validated and stored; how its latest run went is the execution status"
        return f"validated and stored; it runs with toolplan execute {plan_id}"
    return None


def execution_status_meaning(
    execution: dict[str, Any], plan_id: str, plan_status: str
) -> str | None:
    """What an execution's status says (the latest run of a plan), with the command that moves
    an unfinished one on from where it stands; a finished one needs none."""
    yes = " --yes" if plan_status == "needs_review" else ""
    status = execution["status"]
    if status == "waiting":
        waiting = [
            step["id"] for step in execution["steps"] if step["status"] == "waiting_approval"
        ]
        if waiting:
            return (
                f"steps wait for approval: toolplan approve {plan_id}, or toolplan deny "
                f"{plan_id} {waiting[0]} --reason TEXT"
            )
        # Decided, but the run that would take the decision in ended first (a process that
        # recorded it and stopped): approving again refuses, continuing runs the decided steps.
        return f"decided, not continued yet: toolplan execute {plan_id}{yes} continues it"
    meanings = {
        "queued": "waiting for a worker: toolplan worker runs it",
        "running": f"running now, or interrupted: toolplan execute {plan_id}{yes} resumes it",
        "succeeded": "every step succeeded",
        "partial": "some steps succeeded, others failed, were denied or were skipped",
        "failed": "no step succeeded",
        "cancelled": f"stopped; toolplan execute {plan_id} --resume{yes} runs the rest",
    }
    return meanings.get(status)


def _with_meaning(status: str, meaning: str | None) -> Text:
    text = _status(status)
    if meaning:
        text.append(f" ({meaning})", style="dim")
    return text


def _timeout_cell(step: dict[str, Any]) -> str:
    """A step's effective timeout and its source (``2.5 s (history)``); ``-`` before it ran."""
    if step.get("timeout") is None:
        return "-"
    return f"{step['timeout']:g} s ({step.get('timeoutSource') or 'default'})"


def print_described(console: Console, data: dict[str, Any]) -> None:
    """``toolplan show``: a plan (status, steps, latest execution) or a request with its plans."""
    plans = [data] if data["kind"] == "plan" else data["plans"]
    if data["kind"] == "request":
        console.print(
            f"request [bold]{data['requestId']}[/]: {escape(data['query'] or '(no query)')}"
        )
        console.print(f"{len(plans)} plan version(s)")
    for plan in plans:
        plan_id = plan["planId"]
        replan_of = (plan.get("meta") or {}).get("replanOf")
        replaces = f"  replan of {replan_of}" if replan_of else ""
        console.print(f"\n[bold]{plan_id}[/]  created {plan['createdAt']}{replaces}")
        execution = plan["execution"]
        meaning = plan_status_meaning(plan["status"], plan_id, executed=execution is not None)
        console.print(Text.assemble("plan status: ", _with_meaning(plan["status"], meaning)))
        reused = (plan.get("meta") or {}).get("reusedFrom")
        if reused:
            kind = plan["meta"].get("reuse", "exact")
            console.print(f"reused from {reused} ({kind} match, 0 LLM calls)", highlight=False)
        print_plan(console, plan["plan"], plan["analysis"])
        print_python_form(console, plan["plan"])
        if execution is None:
            yes = " --yes" if plan["status"] == "needs_review" else ""
            console.print(
                f"execution status: none (not executed yet: toolplan execute {plan_id}{yes})"
            )
            console.print(f"estimate: {estimate_text(plan.get('estimate'))}", highlight=False)
            continue
        console.print(
            Text.assemble(
                "execution status: ",
                _with_meaning(
                    execution["status"],
                    execution_status_meaning(execution, plan_id, plan["status"]),
                ),
            )
        )
        if execution.get("error"):
            # Why it ended so, or why it waits (a worker that lacked the plan's tools).
            console.print(f"reason: {escape(execution['error'])}", highlight=False)
        actual = plan.get("actualDurationMs")
        console.print(
            f"duration: estimate {estimate_text(plan.get('estimate'))}"
            + (f" · actual {actual / 1000:.2f} s" if actual is not None else ""),
            highlight=False,
        )
        table = Table(show_header=True, box=None, pad_edge=False)
        for column in ("step", "status", "timeout", "output / error"):
            table.add_column(column, no_wrap=column != "output / error", overflow="fold")
        for step in execution["steps"]:
            status = _status(step["status"])
            succeeded = step["status"] == "succeeded"
            detail = short(step["output"]) if succeeded else step["error"] or ""
            if step["status"] == "waiting_approval":
                detail = "would call " + call_text(step["tool"], step["resolvedParameters"])
            text = Text(detail)
            if step.get("decision") is not None:
                text = Text.assemble((decision_text(step["decision"]) + "  ", "cyan"), text)
            if step.get("usedFallback"):
                text = Text.assemble(("fallback: ", "yellow"), text)
            if step.get("cached"):
                age = step.get("cacheAgeSeconds") or 0
                text = Text.assemble((f"cached ({age:.0f} s old): ", "cyan"), text)
            if step.get("reusedFrom"):
                text = Text.assemble((f"reused from {step['reusedFrom']}: ", "cyan"), text)
            if step.get("items") is not None:
                items = step["items"]
                done = sum(1 for item in items if item["status"] == "succeeded")
                text = Text.assemble(items_summary(done, len(items)), text)
            table.add_row(step["id"], status, _timeout_cell(step), text)
        console.print(table)
    if data.get("answer") is not None:
        console.print(f"\n[bold]answer:[/] {escape(data['answer'])}")


def print_tools(console: Console, infos: list[ToolInfo]) -> None:
    """The tool catalog, one line per tool: names are never cut, effects wrap; the description's
    summary (:func:`summary`) gets the width that is left. Tags show from 100 columns,
    statistics from 140 (``toolplan tools NAME`` shows everything about one tool)."""
    show_tags, show_stats = console.width >= 100, console.width >= 140
    columns: list[tuple[str, int | None]] = [("name", None), ("effect", 14)]  # (header, cap)
    if show_tags:
        columns.append(("tags", 18))
    columns.append(("arguments", 26 if show_tags else 18))
    if show_stats:
        columns += [("calls", None), ("avg ms", None), ("failure rate", None)]
    rows = []
    for info in infos:
        cells = {
            "name": _named(info),
            "effect": effect_cell(info),
            "tags": ", ".join(info.tags),
            "arguments": ", ".join(info.parameters.get("properties", {})),
        }
        cells.update(zip(("calls", "avg ms", "failure rate"), _stats_cells(info), strict=True))
        rows.append([cells[header] for header, _ in columns] + [summary(info.description)])
    # The description gets the width left once the other columns have theirs (rich would
    # otherwise squeeze them to nothing, or wrap the description one word per line).
    used = 1
    table = Table(title="tools", title_justify="left")
    for index, (header, cap) in enumerate(columns):
        width = max([len(header), *(len(row[index]) for row in rows)])
        width = min(width, cap) if cap else width
        used += width + 3
        # A column without a cap (the name) is never cut: min_width holds it against rich.
        table.add_column(
            header, no_wrap=cap is None, max_width=cap, min_width=None if cap else width
        )
    table.add_column(
        "description",
        no_wrap=True,
        overflow="ellipsis",
        max_width=max(16, console.width - used - 3),
    )
    for row in rows:
        table.add_row(*row)
    console.print(table)
    console.print("details of one tool: toolplan tools NAME", style="dim", highlight=False)


def _named(info: ToolInfo) -> str:
    """The tool's name, with the name a Python plan calls it by when that differs."""
    if info.python_name == info.name:
        return info.name
    return f"{info.name} (Python: {info.python_name or 'none, it collides'})"


def effect_cell(info: ToolInfo) -> str:
    """``reads blog``, ``writes blog`` or ``writes mail (commutes)``: what a call may do, to
    which resources."""
    effect = info.effect
    text = f"{'reads' if effect.read_only else 'writes'} {', '.join(effect.resources)}"
    return text + " (commutes)" if effect.commutative else text


def _stats_cells(info: ToolInfo) -> list[str]:
    stats = info.stats
    return [
        str(stats.calls) if stats else "-",
        f"{stats.avg_duration_ms:.1f}" if stats and stats.avg_duration_ms is not None else "-",
        f"{stats.failure_rate:.0%}" if stats and stats.failure_rate is not None else "-",
    ]


def print_tool(console: Console, info: ToolInfo) -> None:
    """One tool in full: description, source, tags, arguments with types and defaults,
    examples and the statistics observed in past executions."""

    console.print(Text(info.name, style="bold"))
    console.print(inspect.cleandoc(info.description) or "(no description)", highlight=False)
    console.print(f"source: {info.source or '-'}    tags: {', '.join(info.tags) or '-'}")
    console.print(f"effect: {info.effect.describe()}", highlight=False)
    if info.python_name != info.name:
        called = info.python_name or "none: its alias is another tool's too (rename one)"
        console.print(f"in a Python plan: {called}", highlight=False)
    properties: dict[str, Any] = info.parameters.get("properties", {})
    required = set(info.parameters.get("required", []))
    table = Table(title="arguments", title_justify="left")
    for column in ("name", "type", "required", "default"):
        # A type lists a Literal's values, which may be long: it wraps, the others never do.
        table.add_column(column, no_wrap=column != "type", overflow="fold")
    described = any(schema.get("description") for schema in properties.values())
    if described:
        table.add_column("description", ratio=1)
    for name, schema in properties.items():
        cells = [
            name,
            _type_of(schema),
            "yes" if name in required else "no",
            json.dumps(schema["default"], ensure_ascii=False) if "default" in schema else "-",
        ]
        table.add_row(*cells, *([schema.get("description", "")] if described else []))
    if properties:
        console.print(table)
    else:
        console.print("arguments: none")
    console.print(
        f"returns: {shown_shape(info.returns) or '(not declared)'}",
        highlight=False,
    )
    for example in info.examples:
        console.print(
            f"example: {json.dumps(example, ensure_ascii=False)}", highlight=False, soft_wrap=True
        )
    calls, avg, failures = _stats_cells(info)
    console.print(
        f"observed: {calls} calls, {avg} ms on average, {failures} failed"
        if info.stats
        else "observed: not called in this store yet",
        highlight=False,
    )


def _type_of(schema: dict[str, Any]) -> str:
    """An argument's type as a person reads it: the listed values of a ``Literal`` or an enum
    (``"gt" | "lt"``), not the ``string`` they all are."""
    if "enum" in schema:
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if "type" in schema:
        kind = schema["type"]
        if kind == "array" and isinstance(schema.get("items"), dict):
            return f"array of {_type_of(schema['items'])}"
        return " | ".join(kind) if isinstance(kind, list) else str(kind)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_type_of(option) for option in schema[key])
    return "any"


class ProgressPrinter:
    """Prints one line per step transition to stderr while a plan runs."""

    _SYMBOL = {
        "started": "▶",
        "retrying": "↻",
        "fallback": "↪",
        "succeeded": "✓",
        "failed": "✗",
        "skipped": "-",
        "cancelled": "■",
        "waiting": "⏸",
        "denied": "✗",
    }

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: StepEvent) -> None:
        self.console.print(
            Text(progress_line(event), style=_STATUS_STYLE.get(event.kind, "")), highlight=False
        )


def progress_line(event: StepEvent) -> str:
    """One step transition as a line of text, e.g. ``✓ blog (createBlog) succeeded in 3 ms``."""
    step = event.step_id if event.item is None else f"{event.step_id}[{event.item}]"
    head = f"{ProgressPrinter._SYMBOL[event.kind]} {step} ({event.tool})"
    if event.kind == "fallback":
        return f"{head} failed: {event.error}; calling its fallback {event.fallback_tool!r}"
    if event.kind == "waiting":
        return f"{head} waits for approval to call {call_text(event.tool, event.arguments)}"
    if event.kind == "skipped":
        reason = event.error or "skipped"
        return f"{head} {reason if reason.startswith('skipped') else f'skipped: {reason}'}"
    line = f"{head} {event.kind}"
    if event.kind == "started" and event.attempt > 1:
        line += f", attempt {event.attempt}"
    if event.used_fallback:
        line += " with its fallback"
    if event.duration_ms is not None:
        line += f" in {event.duration_ms:.0f} ms"
    if event.error:
        line += f": {event.error}"
    return line


class PlanningPrinter:
    """Prints one line per planning event to stderr while the model plans: small models take
    10 to 60 s, and silence looks like a hang."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: PlanningEvent) -> None:
        if event.kind == "rewritten":  # one line per change the rewrite rules made, if any
            for line in change_lines(event.changes):
                self.console.print(Text(line), highlight=False)
            return
        self.console.print(Text(planning_line(event), style="dim"), highlight=False)


def change_lines(changes: list[dict[str, Any]]) -> list[str]:
    """One line per change the rewrite rules made to the model's plan, e.g. ``rewrite nulls:
    step 'w' argument units null → dropped`` (:mod:`toolplan.planning.rewrites`)."""
    lines = []
    for change in changes:
        step = change.get("step")
        where = f"step {step!r} " if step is not None else ""
        lines.append(
            f"rewrite {change.get('rule')}: {where}{change.get('before')} → {change.get('after')}"
        )
    return lines


def planning_line(event: PlanningEvent) -> str:
    """One planning event as a line of text, e.g. ``planning with openai:gpt-4o-mini…``,
    ``  + get_weather(city="Berlin")  4.1 s, 212 tokens`` (a step of the answer being written:
    each argument cut at 40 characters, the call at 100) or
    ``repairing (attempt 2 of 4): step 'blog': unknown tool 'createBlg' (+1 more)`` (or, for
    the first JSON attempt of a Python planning, ``asking afresh for a JSON plan (attempt 3 of
    4) after: ...``)."""
    if event.kind == "planning":
        return f"planning with {event.model}…"
    if event.kind == "step":
        step = event.step or {}
        call = short(call_text(str(step.get("tool")), step.get("parameters") or {}, 40), 100)
        return f"  + {call}  {event.elapsed_ms / 1000:.1f} s, {event.tokens or 0} tokens"
    if event.kind == "early":
        return _early_line(event)
    if event.kind == "repairing":
        more = f" (+{event.problems - 1} more)" if event.problems > 1 else ""
        problem = short(" ".join((event.problem or "").split()), 160)
        if event.afresh is not None:
            return (
                f"asking afresh for a {event.afresh.upper()} plan (attempt {event.attempt} of "
                f"{event.attempts}) after: {problem}{more}"
            )
        return f"repairing (attempt {event.attempt} of {event.attempts}): {problem}{more}"
    if event.kind == "retrying":
        return (
            f"the answer stopped at the output limit; asking again with {event.max_tokens} tokens…"
        )
    if event.kind == "rewritten":
        return "; ".join(change_lines(event.changes)) or "stored as the model wrote it"
    found = "no plan" if event.steps is None else f"{event.steps} step(s)"
    usage = event.usage
    return (
        f"answered after {event.elapsed_ms / 1000:.1f} s: {found}; {event.llm_calls} LLM "
        f"call(s), {usage.get('inputTokens', 0)} input / {usage.get('outputTokens', 0)} output "
        "tokens"
    )


_EARLY_WORDS = {
    "started": "started early",
    "finished": "finished early",
    "failed": "failed early (it runs as usual if the plan has it)",
    "adopted": "started early: the plan has it, its tool is not called again",
    "cancelled": "cancelled: the final plan does not have it",
    "unused": "unused: the final plan does not have it (its output is kept in the record)",
}


def _early_line(event: PlanningEvent) -> str:
    """A step started while the model wrote the plan (streamed execution), e.g.
    ``  > lookup(key="x")  started early``, or the time it saved."""
    if event.early == "saved":
        return (
            f"streamed execution: about {(event.duration_ms or 0) / 1000:.1f} s saved against "
            "plan-then-execute"
        )
    step = event.step or {}
    call = short(call_text(str(step.get("tool")), step.get("parameters") or {}, 40), 100)
    took = (
        f" in {event.duration_ms:.0f} ms" if event.early == "finished" and event.duration_ms else ""
    )
    words = _EARLY_WORDS.get(str(event.early), str(event.early))
    return f"  > {step.get('id')} = {call}  {words}{took}"


def age_text(created_at: str, now: datetime | None = None) -> str:
    """How long ago an ISO time was, in its largest unit: ``40s``, ``5m``, ``3h``, ``2d``."""
    then = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def print_plan_list(console: Console, plans: list[dict[str, Any]], next_cursor: str | None) -> None:
    """``toolplan list``: one line per plan, newest first, then how to see the next page."""
    if not plans:
        console.print("no plans")
        return
    rows = [
        [
            plan["planId"],
            plan["status"],
            plan["requestId"],
            age_text(plan["createdAt"]),
            f"{plan['durationMs'] / 1000:.2f} s" if plan["durationMs"] is not None else "-",
        ]
        for plan in plans
    ]
    # Plain aligned columns rather than a rich table: IDs and states are never cut, and only
    # the query gives way to a narrow terminal.
    header = ["plan", "status", "request", "age", "duration"]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    room = max(20, console.width - sum(widths) - 2 * len(widths))
    console.print(
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + "  query",
        highlight=False,
    )
    for row, plan in zip(rows, plans, strict=True):
        line = Text()
        for index, (cell, width) in enumerate(zip(row, widths, strict=True)):
            style = _STATUS_STYLE.get(cell, "") if index == 1 else ""
            line.append(cell.ljust(width) + "  ", style=style)
        line.append(short(plan["query"] or "", room))
        console.print(line, highlight=False, no_wrap=True, overflow="ignore")
    if next_cursor is not None:
        console.print(f"more: toolplan list --after {next_cursor}", highlight=False)
