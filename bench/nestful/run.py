"""One NESTFUL run: every sample answered by each contestant with the same model and tools.

Four model calls per sample, the contestants of issue 51:

* **python** / **json** — toolplan's real planner (:func:`toolplan.planning.planner.create_plan`:
  one planning call plus its bounded repairs, prompts as they stand) in its Python (default) and
  JSON formats, over the sample's catalog, with a fresh in-memory store; nothing runs. The
  stored plan's steps, in order, are the answer (:func:`bench.nestful.plans.plan_calls`). A
  planning that fails or declines is no answer.
* **nestful** — NESTFUL's own direct prompt (:mod:`bench.nestful.prompting`), one plain call,
  read two ways (:mod:`bench.nestful.replies`): **nestful** strictly, as NESTFUL's parser does;
  **nestful-lenient** leniently.
* **native** — the sample's query with ``tools=`` (``bind_tools``); **native** takes the reply's
  tool calls (labelled ``var1``, ``var2``...: one turn cannot reference outputs), and
  **native-lenient** those, or when there are none, the calls read leniently from its text.

The contestants take turns in chunks of samples (:func:`run_samples`): each runs a whole chunk
in a row, so the server's prompt cache serves it as it would a user of that prompt, and the
order rotates from one chunk to the next, so load drift hits all of them alike.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import openai

from bench.nestful.data import TUNING_SPLITS, Sample
from bench.nestful.metrics import aggregate, score_sample
from bench.nestful.official import nestful_scores
from bench.nestful.plans import gold_issues, plan_calls
from bench.nestful.replies import read_lenient, read_strict
from bench.nestful.sequence import Call, read_calls, relabel, without_defaults
from bench.nestful.tools import Toolbox
from toolplan.config import Settings
from toolplan.errors import ToolplanError

__all__ = [
    "CONTESTANTS",
    "GROUPS",
    "Attempt",
    "markdown",
    "pooled",
    "run_samples",
    "summarize",
]

Group = Literal["python", "json", "nestful", "native"]
GROUPS: tuple[Group, ...] = ("python", "json", "nestful", "native")
"""The model calls per sample (``--only``)."""

Contestant = Literal["python", "json", "nestful", "nestful-lenient", "native", "native-lenient"]
CONTESTANTS: tuple[Contestant, ...] = (
    "python",
    "json",
    "nestful",
    "nestful-lenient",
    "native",
    "native-lenient",
)
"""The answers scored per sample: each call of :data:`GROUPS` read one or two ways."""

READINGS: dict[str, tuple[Contestant, ...]] = {
    "python": ("python",),
    "json": ("json",),
    "nestful": ("nestful", "nestful-lenient"),
    "native": ("native", "native-lenient"),
}
"""The contestants each call of :data:`GROUPS` is read as."""

TITLES: dict[str, str] = {
    "python": "toolplan, Python plan (default)",
    "json": "toolplan, JSON plan",
    "nestful": "NESTFUL's prompt, official parser",
    "nestful-lenient": "NESTFUL's prompt, read leniently",
    "native": "native tool calls",
    "native-lenient": "native reply read leniently",
}

POOLED = "sgd + executable"
"""The summary's key for the tuning splits together, when a run has more than one of them."""

_OWN_LABELS: frozenset[str] = frozenset({"nestful", "nestful-lenient"})
"""Contestants that write NESTFUL's labels themselves; the others' calls are relabelled
``var1``... before NESTFUL's scorer reads them (it grounds only ``$var...`` references)."""

NATIVE_MAX_TOKENS = 1024
"""Output limit of the native call, as in ``bench.bfcl``."""


@dataclass
class Attempt:
    """One contestant's answer to one sample."""

    contestant: Contestant
    calls: list[Call] | None
    """The answer in NESTFUL's names; ``None`` when there is none (no plan, unreadable)."""
    seconds: float
    detail: dict[str, Any] = field(default_factory=dict)
    """usage, llmCalls, the raw reply, or the error that prevented an answer."""


class _Trace:
    """A planning listener that keeps what each answer held as the model wrote it (the tools
    of its steps, before validation and rewrites) and why it was sent back: how a plan came to
    lose a call, or to be no plan, shows there. Passive: it changes nothing in planning."""

    def __init__(self) -> None:
        self.attempts: list[dict[str, Any]] = []

    def _attempt(self, number: int) -> dict[str, Any]:
        while len(self.attempts) < number:
            self.attempts.append({"steps": []})
        return self.attempts[number - 1]

    def __call__(self, event: Any) -> None:
        if event.kind == "step" and event.step is not None:
            steps = self._attempt(event.attempt)["steps"]
            if len(steps) < (event.steps or 0):
                steps.append(str(event.step.get("tool")))
        elif event.kind == "repairing":
            # told as the repair starts: the problems are the previous answer's
            self._attempt(event.attempt - 1)["problem"] = event.problem
            self._attempt(event.attempt - 1)["problems"] = event.problems
        elif event.kind == "answered":
            self._attempt(event.attempt)["read"] = event.steps


async def _plan(sample: Sample, box: Toolbox, settings: Settings, name: Contestant) -> Attempt:
    from bench.memstore import MemoryStore
    from toolplan.client import Toolplan
    from toolplan.errors import LLMUnavailable
    from toolplan.pipeline.planning import create_plan
    from toolplan.planning.llm_errors import LLMOutputTruncated

    started = time.perf_counter()
    store = MemoryStore()  # fresh: no plan history leaks from one sample into the next
    trace = _Trace()
    try:
        ctx = Toolplan(settings=settings, store=store, tools=box.catalog()).planner_context(
            listener=trace
        )
        outcome = await create_plan(sample.query, ctx)
    except LLMUnavailable as error:
        if not isinstance(error, LLMOutputTruncated):
            raise  # the server, not the model: a run without a model measures nothing
        return _unplanned(name, error, started, trace)
    except ToolplanError as error:
        return _unplanned(name, error, started, trace)
    finally:
        store.close()
    detail: dict[str, Any] = {
        "llmCalls": outcome.llm_calls,
        "usage": outcome.usage,
        "plan": outcome.plan,
        "trace": trace.attempts,
    }
    if outcome.changes:
        detail["changes"] = [c.get("rule") for c in outcome.changes]
    return Attempt(name, plan_calls(outcome.plan, box), time.perf_counter() - started, detail)


def _unplanned(name: Contestant, error: ToolplanError, started: float, trace: _Trace) -> Attempt:
    detail: dict[str, Any] = {
        "error": error.message,
        "errorKind": type(error).__name__,
        "llmCalls": error.details.get("llmCalls", getattr(error, "llm_calls", None)),
        "trace": trace.attempts,
    }
    usage = error.details.get("usage", getattr(error, "usage", None))
    if usage:
        detail["usage"] = usage
    return Attempt(name, None, time.perf_counter() - started, detail)


def _usage(reply: Any) -> dict[str, int]:
    usage = reply.usage_metadata or {}
    return {
        "inputTokens": usage.get("input_tokens", 0),
        "outputTokens": usage.get("output_tokens", 0),
    }


def _text(reply: Any) -> str:
    return reply.content if isinstance(reply.content, str) else json.dumps(reply.content)


def _named(raw: list[dict[str, Any]] | None, box: Toolbox) -> list[Call] | None:
    if raw is None:
        return None
    calls = [replace(c, name=box.nestful_name(c.name)) for c in read_calls(raw)]
    return calls or None


async def _direct(sample: Sample, box: Toolbox, model: Any) -> list[Attempt]:
    from bench.nestful.prompting import messages

    started = time.perf_counter()
    try:
        reply = await model.ainvoke(messages(box.prompt_tools(), sample.query))
    except openai.BadRequestError as refused:
        return _refused(("nestful", "nestful-lenient"), refused, started)
    seconds = time.perf_counter() - started
    text = _text(reply)
    detail = {"usage": _usage(reply), "reply": text[:3000]}
    strict = read_strict(text)
    return [
        Attempt("nestful", _named(strict, box), seconds, {**detail, "parsed": strict is not None}),
        Attempt("nestful-lenient", _named(read_lenient(text), box), seconds, dict(detail)),
    ]


async def _native(sample: Sample, box: Toolbox, model: Any) -> list[Attempt]:
    started = time.perf_counter()
    try:
        reply = await model.bind_tools(box.openai_tools()).ainvoke(
            [{"role": "user", "content": sample.query}]
        )
    except openai.BadRequestError as refused:
        return _refused(("native", "native-lenient"), refused, started)
    seconds = time.perf_counter() - started
    text = _text(reply)
    raw = [
        {"name": c["name"], "arguments": dict(c["args"]), "label": f"var{n}"}
        for n, c in enumerate(reply.tool_calls, 1)
    ]
    detail = {"usage": _usage(reply), "reply": text[:3000], "toolCalls": len(raw)}
    native = _named(raw, box)
    lenient = native or _named(read_lenient(text), box)
    return [
        Attempt("native", native, seconds, dict(detail)),
        Attempt(
            "native-lenient",
            lenient,
            seconds,
            {**detail, "readFrom": "tool_calls" if native else "text"},
        ),
    ]


def _refused(
    names: tuple[Contestant, ...], refused: openai.BadRequestError, started: float
) -> list[Attempt]:
    """No answer from a request the server refused (400): NESTFUL's prompt with its three
    examples and eight tools can exceed a small model's context (8,200 of 8,192 tokens on
    ``executable-76``). The sample still counts, as no answer; a server that cannot be reached
    still stops the run."""
    seconds = time.perf_counter() - started
    detail = {"error": str(refused.message)[:500], "errorKind": "RequestRefused"}
    return [Attempt(name, None, seconds, dict(detail)) for name in names]


def sample_row(sample: Sample, box: Toolbox) -> dict[str, Any]:
    """The per-sample row: the query, the tools offered, the gold and what toolplan's
    validator says about it."""
    issues = gold_issues(sample.gold, box)
    return {
        "type": "sample",
        "id": sample.id,
        "split": sample.split,
        "query": sample.query,
        "tools": list(box.api_names),
        "gold": list(sample.gold),
        "validGold": not issues,
        "goldIssues": issues,
    }


def answer_row(sample: Sample, attempt: Attempt) -> dict[str, Any]:
    """One contestant's row for one sample, scored."""
    score = score_sample(read_calls(sample.gold), attempt.calls)
    return {
        "type": "answer",
        "id": sample.id,
        "split": sample.split,
        "contestant": attempt.contestant,
        "answer": None if attempt.calls is None else [c.to_json() for c in attempt.calls],
        "score": score.to_json(),
        "seconds": round(attempt.seconds, 2),
        **attempt.detail,
    }


async def run_samples(
    samples: Sequence[Sample],
    settings: Settings,
    *,
    groups: Iterable[str] = GROUPS,
    chunk: int = 10,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    done: Iterable[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Answer and score every sample, one request at a time (a local server has one slot),
    the groups taking turns by chunks of ``chunk`` samples in a rotating order; returns the
    rows (one ``sample`` row per sample, one ``answer`` row per contestant and sample).

    ``done`` are rows of an earlier, interrupted run with the same arguments: what they hold
    is not asked again (the chunks and their order are the same), and they are not returned."""
    from toolplan.planning.model import create_chat_model

    chosen = [g for g in GROUPS if g in set(groups)]
    model = None
    if {"nestful", "native"} & set(chosen):
        model = create_chat_model(settings.planner, max_tokens=NATIVE_MAX_TOKENS)
    direct = None
    if "nestful" in chosen:
        from bench.nestful.prompting import MAX_TOKENS

        direct = create_chat_model(settings.planner, max_tokens=MAX_TOKENS)
    formats = {
        "python": replace(settings, planner=replace(settings.planner, plan_format="python")),
        "json": replace(settings, planner=replace(settings.planner, plan_format="json")),
    }
    rows: list[dict[str, Any]] = []
    earlier = list(done)
    seen = {r["id"] for r in earlier if r["type"] == "sample"}
    answered = {(r["id"], r["contestant"]) for r in earlier if r["type"] == "answer"}

    def finished(sample: Sample, group: str) -> bool:
        return all((sample.id, c) in answered for c in READINGS[group])

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        if on_row is not None:
            on_row(row)

    for number, start in enumerate(range(0, len(samples), max(1, chunk))):
        part = samples[start : start + max(1, chunk)]
        boxes = {s.id: Toolbox.of(s.tools) for s in part}
        for sample in part:
            if sample.id not in seen:
                emit(sample_row(sample, boxes[sample.id]))
        turn = number % len(chosen) if chosen else 0
        for group in chosen[turn:] + chosen[:turn]:
            for sample in part:
                if finished(sample, group):
                    continue
                box = boxes[sample.id]
                if group in ("python", "json"):
                    attempts = [await _plan(sample, box, formats[group], group)]
                elif group == "nestful":
                    attempts = await _direct(sample, box, direct)
                else:
                    attempts = await _native(sample, box, model)
                for attempt in attempts:
                    emit(answer_row(sample, attempt))
    return rows


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


Defaults = Mapping[str, Mapping[str, Mapping[str, Any]]]
"""Per split: function -> argument -> its declared default (:func:`~bench.nestful.data.
declared_defaults`)."""


def _contestant(
    answers: list[dict[str, Any]], gold: dict[str, list[Any]], defaults: Defaults | None
) -> dict[str, Any]:
    name = answers[0]["contestant"]
    scores = [
        score_sample(
            read_calls(gold[a["id"]]),
            None if a["answer"] is None else read_calls(a["answer"]),
        )
        for a in answers
    ]
    summary = aggregate(scores).to_json()
    if defaults is not None:
        summary["defaultsOmitted"] = _defaults_omitted(answers, gold, defaults)

    def official_answer(a: dict[str, Any]) -> list[dict[str, Any]] | None:
        if a["answer"] is None:
            return None
        if name in _OWN_LABELS:
            return list(a["answer"])
        return [c.to_json() for c in relabel(read_calls(a["answer"]))]

    summary["noAnswerShare"] = round(summary["noAnswer"] / len(answers), 4)
    summary["medianSeconds"] = _median([a["seconds"] for a in answers])
    summary["medianOutputTokens"] = _median(
        [a["usage"]["outputTokens"] for a in answers if a.get("usage")]
    )
    summary["medianInputTokens"] = _median(
        [a["usage"]["inputTokens"] for a in answers if a.get("usage")]
    )
    summary["nestfulScorer"] = nestful_scores(
        [(gold[a["id"]], official_answer(a)) for a in answers]
    )
    failures = Counter(a["errorKind"] for a in answers if a.get("errorKind"))
    if failures:
        summary["failures"] = dict(failures.most_common())
    return summary


def _defaults_omitted(
    answers: list[dict[str, Any]], gold: dict[str, list[Any]], defaults: Defaults
) -> dict[str, Any]:
    """The metrics again, with every argument at its declared default dropped from both
    sequences: the gold writes defaults out (``limit: 20`` where 20 is the default), and a
    call that leaves one out makes the same call. F1 functions does not change."""

    def bare(calls: list[Any], split: str) -> list[Any]:
        return without_defaults(read_calls(calls), defaults.get(split, {}))

    scores = [
        score_sample(
            bare(gold[a["id"]], a["split"]),
            None if a["answer"] is None else bare(a["answer"], a["split"]),
        )
        for a in answers
    ]
    total = aggregate(scores).to_json()
    return {k: total[k] for k in ("samples", "full", "fullShare", "partial", "f1Parameters")}


def pooled(runs: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The rows of several runs (seeds) as one run's, for one table over all of them: each
    sample of run ``k`` (from 1) is told apart as ``id#k``, since seeds draw some samples
    alike, and one seed offers a sample other distractors than another. One run is returned
    as it is. The runs should have the same contestants: :func:`summarize` counts only the
    samples every contestant of the whole answered."""
    if len(runs) == 1:
        return list(runs[0])
    return [{**row, "id": f"{row['id']}#{k}"} for k, rows in enumerate(runs, 1) for row in rows]


def summarize(rows: list[dict[str, Any]], defaults: Defaults | None = None) -> dict[str, Any]:
    """Per split, on all samples and on the samples whose gold toolplan's validator accepts:
    each contestant's metrics, NESTFUL's scorer's figures, median seconds and tokens. Only the
    samples that every contestant of the run answered count (a run may be cut short). With
    ``defaults`` (per split), also the metrics with declared defaults read as omitted."""
    samples = {r["id"]: r for r in rows if r["type"] == "sample"}
    answers = [r for r in rows if r["type"] == "answer" and r["id"] in samples]
    # a run cut short in the middle of a chunk: only the samples every contestant answered
    present = {a["contestant"] for a in answers}
    answered: dict[str, set[str]] = {}
    for a in answers:
        answered.setdefault(a["id"], set()).add(a["contestant"])
    samples = {i: r for i, r in samples.items() if answered.get(i) == present}
    answers = [a for a in answers if a["id"] in samples]
    gold = {i: r["gold"] for i, r in samples.items()}
    splits = list(dict.fromkeys(r["split"] for r in samples.values()))
    groups = {split: {split} for split in splits}
    tuning = [split for split in splits if split in TUNING_SPLITS]
    if len(tuning) > 1:  # the figures the issue holds toolplan to: the tuning splits together
        groups[POOLED] = set(tuning)
    out: dict[str, Any] = {}
    for group, members in groups.items():
        mine = [a for a in answers if a["split"] in members]
        valid = {i for i, r in samples.items() if r["split"] in members and r["validGold"]}
        per: dict[str, Any] = {"samples": sum(r["split"] in members for r in samples.values())}
        per["validGoldSamples"] = len(valid)
        for subset, ids in (("all", None), ("validGold", valid)):
            table = {}
            for name in CONTESTANTS:
                theirs = [
                    a for a in mine if a["contestant"] == name and (ids is None or a["id"] in ids)
                ]
                if theirs:
                    table[name] = _contestant(theirs, gold, defaults)
            per[subset] = table
        per["costAgainst"] = _cost_against(per["all"])
        out[group] = per
    return out


def _cost_against(table: dict[str, Any], base: str = "nestful") -> dict[str, dict[str, Any]]:
    """Each contestant's median seconds and output tokens over NESTFUL's prompt's, on the same
    samples (the issue bounds toolplan's at 1.5x and 2x)."""
    if base not in table:
        return {}
    ratios: dict[str, dict[str, Any]] = {}
    for name, s in table.items():
        if name in READINGS[base] or name.startswith("native"):
            continue
        ratios[name] = {
            key: (
                round(s[key] / table[base][key], 2)
                if s.get(key) is not None and table[base].get(key)
                else None
            )
            for key in ("medianSeconds", "medianOutputTokens")
        }
    return ratios


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def markdown(summary: dict[str, Any]) -> str:
    """The summary as tables, per split: all samples, then valid-gold samples; then NESTFUL's
    scorer's figures for the same answers."""
    lines: list[str] = []
    for split, per in summary.items():
        for subset, title in (("all", "all samples"), ("validGold", "gold valid for toolplan")):
            table = per[subset]
            n = per["samples"] if subset == "all" else per["validGoldSamples"]
            lines += [f"**{split}**, {title} ({n}):", ""]
            lines += [
                "| contestant | full sequence | partial | F1 functions | F1 parameters "
                "| no answer | median s | out tokens |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for name, s in table.items():
                lines.append(
                    f"| {TITLES[name]} | {s['full']}/{s['samples']} ({_pct(s['fullShare'])}) "
                    f"| {s['partial']:.3f} | {s['f1Functions']:.3f} | {s['f1Parameters']:.3f} "
                    f"| {s['noAnswer']} ({_pct(s['noAnswerShare'])}) | {s['medianSeconds']} "
                    f"| {s['medianOutputTokens']} |"
                )
            lines.append("")
        lines += [f"**{split}**, NESTFUL's scorer on the same answers (all samples):", ""]
        lines += [
            "| contestant | full | partial | F1 intent | F1 slot | parse errors |",
            "|---|---|---|---|---|---|",
        ]
        for name, s in per["all"].items():
            o = s["nestfulScorer"]
            lines.append(
                f"| {TITLES[name]} | {o['full']:.3f} | {o['partial']:.3f} | {o['f1Intent']:.3f} "
                f"| {o['f1Slot']:.3f} | {o['parseErrors']} |"
            )
        omitted = {n: s["defaultsOmitted"] for n, s in per["all"].items() if "defaultsOmitted" in s}
        if omitted:
            lines += [
                "",
                f"**{split}**, an argument at its declared default read as omitted (all samples):",
                "",
                "| contestant | full sequence | partial | F1 parameters |",
                "|---|---|---|---|",
            ]
            for name, o in omitted.items():
                lines.append(
                    f"| {TITLES[name]} | {o['full']}/{o['samples']} ({_pct(o['fullShare'])}) "
                    f"| {o['partial']:.3f} | {o['f1Parameters']:.3f} |"
                )
        for name, ratio in per.get("costAgainst", {}).items():
            lines.append(
                f"\n{TITLES[name]} against NESTFUL's prompt, same samples: median seconds "
                f"{ratio['medianSeconds']}x, median output tokens {ratio['medianOutputTokens']}x"
            )
        failures = {n: s["failures"] for n, s in per["all"].items() if s.get("failures")}
        if failures:
            lines += ["", f"**{split}**, why toolplan made no plan:", ""]
            lines += ["| contestant | failures |", "|---|---|"]
            for name, kinds in failures.items():
                lines.append(
                    f"| {TITLES[name]} | {', '.join(f'{k}: {v}' for k, v in kinds.items())} |"
                )
        lines.append("")
    return "\n".join(lines)
