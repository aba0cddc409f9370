"""One BFCL run: every entry planned by toolplan and answered natively by the same model, scored.

Per entry, two model calls:

* **toolplan** — the real planner (:func:`toolplan.pipeline.planning.create_plan`: one planning
  call plus its bounded repairs, the prompts and schema as they stand) over a catalog built from
  the entry's function docs, with a fresh in-memory store; nothing is executed. The plan's steps,
  in order, are the answer: ``[{tool: parameters}]`` with BFCL's names. A plan that could not
  be made is no answer.
* **native** — the same chat model (same settings, temperature 0) with the entry's messages and
  ``tools=`` (LangChain ``bind_tools``, ``tool_choice`` left to the model, as BFCL's function-
  calling mode does). Two readings of that one reply: **native** takes its ``tool_calls`` only;
  **text** takes its tool calls, or when there are none, reads its text leniently
  (:mod:`bench.bfcl.lenient`), as a harness would that parses the text itself.

Each answer goes through :func:`bench.bfcl.checker.check` (the official AST checker).
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from bench.bfcl.checker import Verdict, check
from bench.bfcl.data import IRRELEVANCE_CATEGORIES, TUNING_CATEGORIES, Entry
from bench.bfcl.functions import Toolbox
from bench.bfcl.lenient import read_calls
from toolplan.config import Settings
from toolplan.errors import ToolplanError

__all__ = ["CONTESTANTS", "Attempt", "run_entries", "summarize"]

Contestant = Literal["toolplan", "python", "prompting", "native", "text"]
CONTESTANTS: tuple[Contestant, ...] = ("toolplan", "python", "prompting", "native", "text")
"""Columns of the summary, in order. ``python`` is toolplan's planner writing Python
(``TOOLPLAN_PLAN_FORMAT=python``); ``prompting`` is BFCL's prompting mode
(:mod:`bench.bfcl.prompting`)."""

PLANNERS: tuple[Contestant, ...] = ("toolplan", "python")
"""The contestants that are toolplan's planner (in its JSON and Python formats)."""

NATIVE_MAX_TOKENS = 1024
"""Output limit of the native call: far above any right answer here, and it bounds a runaway."""


@dataclass
class Attempt:
    """One contestant's answer to one entry, and its verdict."""

    calls: list[dict[str, Any]] | None
    """``[{bfcl_name: {arg: value}}]``; ``None`` when no answer could be had (no plan)."""
    verdict: Verdict
    seconds: float
    detail: dict[str, Any] = field(default_factory=dict)
    """llmCalls, usage, the raw reply, or the error that prevented an answer."""

    def to_json(self) -> dict[str, Any]:
        """JSON form for the per-entry rows."""
        return {
            **self.verdict.to_json(),
            "calls": self.calls,
            "seconds": round(self.seconds, 2),
            **self.detail,
        }


async def _plan(entry: Entry, box: Toolbox, settings: Settings) -> Attempt:
    from bench.memstore import MemoryStore
    from toolplan.client import Toolplan
    from toolplan.errors import LLMUnavailable, ToolplanError
    from toolplan.pipeline.planning import create_plan
    from toolplan.planning.llm_errors import LLMOutputTruncated

    started = time.perf_counter()
    store = MemoryStore()  # a fresh store: no plan history leaks from one entry into the next
    try:
        ctx = Toolplan(settings=settings, store=store, tools=box.catalog()).planner_context()
        outcome = await create_plan(entry.query, ctx)
    except LLMUnavailable as error:
        if not isinstance(error, LLMOutputTruncated):
            raise  # the server, not the model: a run without a model measures nothing
        return _unplanned(entry, error, started)  # the model ran away: this entry's answer
    except ToolplanError as error:
        return _unplanned(entry, error, started)
    finally:
        store.close()
    steps = outcome.plan.get("steps", [])
    calls = [{box.bfcl_name(s["tool"]): dict(s.get("parameters") or {})} for s in steps]
    return Attempt(
        calls,
        check(entry, calls),
        time.perf_counter() - started,
        {
            "llmCalls": outcome.llm_calls,
            "usage": outcome.usage,
            "status": outcome.ref.status,
            **({"changes": [c.get("rule") for c in outcome.changes]} if outcome.changes else {}),
        },
    )


def _unplanned(entry: Entry, error: ToolplanError, started: float) -> Attempt:
    """An entry the planner could not plan: wrong (unless nothing was to be called), with the
    error and what the planning spent (``llmCalls``, ``usage``, ``stoppedAfterTokens``)."""
    detail: dict[str, Any] = {
        "error": error.message,
        "llmCalls": error.details.get("llmCalls", getattr(error, "llm_calls", None)),
    }
    usage = error.details.get("usage", getattr(error, "usage", None))
    if usage:
        detail["usage"] = usage
    if "stoppedAfterTokens" in error.details:
        detail["stoppedAfterTokens"] = error.details["stoppedAfterTokens"]
    detail["errorKind"] = type(error).__name__
    return Attempt(None, check(entry, None), time.perf_counter() - started, detail)


def native_model(settings: Settings) -> Any:
    """The planner's chat model (same provider, endpoint, temperature 0), for the baselines."""
    from toolplan.planning.model import create_chat_model

    return create_chat_model(settings.planner, max_tokens=NATIVE_MAX_TOKENS)


async def _native(entry: Entry, box: Toolbox, model: Any) -> tuple[Attempt, Attempt]:
    started = time.perf_counter()
    reply = await model.bind_tools(box.openai_tools()).ainvoke(
        [{"role": m["role"], "content": m["content"]} for m in entry.messages]
    )
    seconds = time.perf_counter() - started
    text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
    tool_calls = [{box.bfcl_name(c["name"]): dict(c["args"])} for c in reply.tool_calls]
    usage = reply.usage_metadata or {}
    detail = {
        "usage": {
            "inputTokens": usage.get("input_tokens", 0),
            "outputTokens": usage.get("output_tokens", 0),
        },
        "reply": text[:2000],
        "invalidToolCalls": len(reply.invalid_tool_calls),
    }
    native = Attempt(tool_calls, check(entry, tool_calls), seconds, detail)
    read = tool_calls or read_calls(text, box)
    lenient = Attempt(
        read, check(entry, read), seconds, {"readFrom": "tool_calls" if tool_calls else "text"}
    )
    return native, lenient


async def _prompting(entry: Entry, model: Any) -> Attempt:
    """BFCL's prompting mode: its system prompt, a plain call, its decoder."""
    from bench.bfcl.prompting import decode_answer, system_prompt

    messages = [{"role": m["role"], "content": m["content"]} for m in entry.messages]
    prompt = system_prompt(entry.functions)
    if messages and messages[0]["role"] == "system":  # as BFCL does: its prompt first
        messages[0] = {"role": "system", "content": prompt + "\n\n" + messages[0]["content"]}
    else:
        messages.insert(0, {"role": "system", "content": prompt})
    started = time.perf_counter()
    reply = await model.ainvoke(messages)
    seconds = time.perf_counter() - started
    text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
    calls = decode_answer(text)
    usage = reply.usage_metadata or {}
    detail = {
        "usage": {
            "inputTokens": usage.get("input_tokens", 0),
            "outputTokens": usage.get("output_tokens", 0),
        },
        "reply": text[:2000],
    }
    return Attempt(calls, check(entry, calls), seconds, detail)


async def run_entries(
    entries: Iterable[Entry],
    settings: Settings,
    *,
    contestants: Iterable[str] = CONTESTANTS,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Answer and score every entry, one at a time (a local server has one slot); returns the
    per-entry rows (``id``, ``category``, one object per contestant run)."""
    chosen = set(contestants)
    model = native_model(settings) if chosen & {"native", "text", "prompting"} else None
    formats = {
        # each planner in its own format, whatever the default is (Python since issue 43)
        "toolplan": replace(settings, planner=replace(settings.planner, plan_format="json")),
        "python": replace(settings, planner=replace(settings.planner, plan_format="python")),
    }
    rows = []
    for entry in entries:
        box = Toolbox.of(entry.functions)
        row: dict[str, Any] = {"id": entry.id, "category": entry.category, "query": entry.query}
        for planner in PLANNERS:
            if planner in chosen:
                row[planner] = (await _plan(entry, box, formats[planner])).to_json()
        if "prompting" in chosen:
            assert model is not None
            row["prompting"] = (await _prompting(entry, model)).to_json()
        if chosen & {"native", "text"}:
            assert model is not None
            native, lenient = await _native(entry, box, model)
            row["native"], row["text"] = native.to_json(), lenient.to_json()
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per category and contestant: entries, right answers, the failure types, median seconds
    and tokens. Categories other than the tuning ones are marked as test sets."""
    categories: dict[str, Any] = {}
    for category in dict.fromkeys(r["category"] for r in rows):
        mine = [r for r in rows if r["category"] == category]
        per: dict[str, Any] = {}
        for name in CONTESTANTS:
            answers = [r[name] for r in mine if name in r]
            if not answers:
                continue
            per[name] = {
                "correct": sum(a["valid"] for a in answers),
                "entries": len(answers),
                "failures": dict(
                    Counter(a["errorType"] or "?" for a in answers if not a["valid"]).most_common()
                ),
                "medianSeconds": _median([a["seconds"] for a in answers]),
                "medianInputTokens": _median(
                    [a["usage"]["inputTokens"] for a in answers if a.get("usage")]
                ),
                "medianOutputTokens": _median(
                    [a["usage"]["outputTokens"] for a in answers if a.get("usage")]
                ),
            }
        for planner in PLANNERS:
            if planner in per:
                planned = [r[planner] for r in mine if planner in r]
                per[planner]["answers"] = _answer_lengths(planned)
                per[planner]["declined"] = sum(
                    a.get("errorKind") == "PlanDeclined" for a in planned
                )
        categories[category] = {
            "entries": len(mine),
            "set": "tuning" if category in TUNING_CATEGORIES else "test",
            **per,
        }
    return categories


def _answer_lengths(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """How long the planner's answers were, to size its output limit against: output tokens
    (median, max), tokens per step of one-call plans (max), and the answers cut off at the limit
    or stopped as runaways."""
    spent = [a["usage"]["outputTokens"] for a in answers if a.get("usage")]
    per_step = [
        a["usage"]["outputTokens"] / len(a["calls"])
        for a in answers
        if a.get("usage") and a.get("calls") and a.get("llmCalls") == 1
    ]
    return {
        "medianOutputTokens": _median(spent),
        "maxOutputTokens": max(spent, default=None),
        "maxOutputTokensPerStep": round(max(per_step), 1) if per_step else None,
        "cutOff": sum(
            a.get("errorKind") in ("LLMOutputTruncated", "LLMOutputRepeating") for a in answers
        ),
    }


def markdown(summary: dict[str, Any]) -> str:
    """The summary as tables: right answers per category and contestant, then the failures
    by BFCL's error type."""
    shown = [c for c in CONTESTANTS if any(c in data for data in summary.values())]
    titles = {
        "toolplan": "toolplan (JSON plan)",
        "python": "toolplan (Python plan)",
        "prompting": "BFCL prompting mode",
        "native": "native tool calls",
        "text": "native reply read leniently",
    }
    lines = [
        "| category | set | n | " + " | ".join(titles[c] for c in shown) + " |",
        "|---|---|---|" + "---|" * len(shown),
    ]
    for category, data in summary.items():
        cells = [f"{data[c]['correct']}/{data[c]['entries']}" if c in data else "-" for c in shown]
        lines.append(
            f"| {category} | {data['set']} | {data['entries']} | " + " | ".join(cells) + " |"
        )
    lines += ["", "Cost (medians per entry: output tokens, input tokens, seconds):", ""]
    lines += ["| category | " + " | ".join(titles[c] for c in shown) + " |"]
    lines += ["|---|" + "---|" * len(shown)]
    for category, data in summary.items():
        cells = [
            f"{data[c]['medianOutputTokens']} / {data[c]['medianInputTokens']} / "
            f"{data[c]['medianSeconds']} s"
            if c in data
            else "-"
            for c in shown
        ]
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    declined = {
        (c, planner): d[planner]["declined"]
        for c, d in summary.items()
        for planner in PLANNERS
        if d.get(planner, {}).get("declined")
    }
    if declined:
        lines += ["", "Requests the planner declined (no tool does what was asked):", ""]
        lines += ["| category | planner | declined | right to (irrelevance) |", "|---|---|---|---|"]
        for (category, planner), n in declined.items():
            right = n if category in IRRELEVANCE_CATEGORIES else 0
            lines.append(f"| {category} | {titles[planner]} | {n} | {right} |")
    lines += ["", "Failures by BFCL error type:", ""]
    lines += ["| category | contestant | failures |", "|---|---|---|"]
    for category, data in summary.items():
        for c in CONTESTANTS:
            failures = data.get(c, {}).get("failures")
            if failures:
                listed = ", ".join(f"{kind}: {n}" for kind, n in failures.items())
                lines.append(f"| {category} | {c} | {listed} |")
    lengths = {
        c: d["toolplan"]["answers"]
        for c, d in summary.items()
        if "answers" in d.get("toolplan", {})
    }  # the JSON planner's, which its output limit is sized against
    if lengths:
        lines += ["", "Planner answers (output tokens; the limit is sized against these):", ""]
        lines += [
            "| category | median | max | max per step (one-call plans) | cut off or stopped |",
            "|---|---|---|---|---|",
        ]
        for category, a in lengths.items():
            lines.append(
                f"| {category} | {a['medianOutputTokens']} | {a['maxOutputTokens']} | "
                f"{a['maxOutputTokensPerStep']} | {a['cutOff']} |"
            )
    return "\n".join(lines) + "\n"
