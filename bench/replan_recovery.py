"""Replan recovery (issue 16): queries whose first plan fails by design, through the agent loop.

    python -m bench.replan_recovery                  # scripted model: deterministic, seconds
    . /tmp/serve.env && python -m bench.replan_recovery --real --out /tmp/recovery.json

Every query goes through :func:`toolplan.answer_query` (planner → executor → respond → replan →
executor → respond, ``max_replans=1``) with the real ``ChatOpenAI`` client, against a local
OpenAI-compatible server (``tests/support/fake_openai.py``) that:

* answers the **first** planning call of each query with a fixed plan that is valid but fails at
  run time (a metric name that does not exist, an author or blog ID that does not exist): the
  failure is by design, not up to the model;
* answers every later call (the respond calls and the replanning call) with the **scripted**
  model, or, with ``--real``, forwards it to the real model at ``OPENAI_BASE_URL`` (the small
  model of ``../shared/real-llm/``) and passes its answer back unchanged.

Token usage of scripted answers (and of the designed first plan, with either model) is counted
with tiktoken's ``o200k_base`` over the request's messages and schema; the real model's is the
server's own count.

The scripted model is an ideal but blind policy: respond asks for a new plan when a step failed
(its reason is the failure lines it was shown), and the replanning call returns the fixed plan
only if the replan message it receives contains the evidence the fix needs (the tool's error:
``known: cpu_usage, ...``, ``create the author first``). So it checks that the loop carries the
failure to the planner; the real model checks whether a small model can use it.

A query **recovers** when the second plan version (``meta.replanOf`` = the first) ran to
``succeeded``, its outputs are right (each query's check), and there is an answer; it recovers
**cleanly** when, besides, the second plan calls no tool with side effects (``createAuthor``...)
that the fix does not need. A designed first plan that the planner's own checks refuse (an id
passed by name, :mod:`toolplan.planning.id_by_name`) is repaired at planning time and never runs: the
query counts as **caught at planning**, not as a replan recovery. The metric
tools here take free-text names on purpose: the built-in ``query_metric`` declares its names as a
closed set, so a wrong name is refused at planning time (and repaired there), never reaching a
replan.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import ToolException, tool
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.support.plans import llm_step

__all__ = ["QUERIES", "run_recovery"]

_METRICS: dict[str, float] = {
    "cpu_usage": 72.5,
    "memory_usage": 58.1,
    "disk_io": 120.0,
    "error_rate": 1.2,
    "latency_p95": 240.0,
}


def _known(name: str) -> float:
    if name not in _METRICS:
        raise ToolException(f"unknown metric {name!r}; known: {', '.join(_METRICS)}")
    return _METRICS[name]


@tool
def read_metric(name: str) -> dict[str, Any]:
    """Read a monitoring metric's current value by its name."""
    return {"name": name, "current": _known(name)}


@tool
def check_metric(name: str, threshold: float) -> dict[str, Any]:
    """Whether a monitoring metric's current value is above a threshold."""
    value = _known(name)
    return {"name": name, "value": value, "threshold": threshold, "exceeded": value > threshold}


def _tools() -> list[Any]:
    from toolplan.builtin_tools.blog import TOOLS as BLOG

    return [read_metric, check_metric, *BLOG]


def _plan(steps: list[dict[str, Any]], outputs: list[str]) -> dict[str, Any]:
    # The reasoning reads like a model's: a hint that the plan was designed (the first version
    # said "designed for the benchmark") was echoed by the real model in its replan.
    return {
        "reasoning": "These steps do what the request asks.",
        "steps": steps,
        "outputSteps": outputs,
    }


def _values(outputs: dict[str, Any]) -> list[Any]:
    return list(outputs.values())


@dataclass(frozen=True)
class Query:
    name: str
    query: str
    first: dict[str, Any]
    """The first plan: valid, fails at run time."""
    fixed: dict[str, Any]
    """What the scripted model plans when the replan message shows ``evidence``."""
    evidence: str
    check: Callable[[dict[str, Any]], bool]
    """Are the last plan's outputs right?"""


def _metric(name: str, value: float) -> Callable[[dict[str, Any]], bool]:
    return lambda out: any(
        isinstance(v, dict)
        and v.get("name") == name
        and value in (v.get("current"), v.get("value"))
        for v in _values(out)
    )


def _blog(title: str) -> Callable[[dict[str, Any]], bool]:
    return lambda out: any(
        isinstance(v, dict) and v.get("title") == title and str(v.get("authorId", "")).strip()
        for v in _values(out)
    )


def _comment(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda out: any(
        isinstance(v, dict) and v.get("text") == text and v.get("blogId") for v in _values(out)
    )


def _author(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda out: any(isinstance(v, dict) and v.get("name") == name for v in _values(out))


KNOWN = "known: cpu_usage"
CREATE_FIRST = "create the author first"

QUERIES: list[Query] = [
    Query(
        "metric_cpu",
        "What is the CPU load right now?",
        _plan([llm_step("cpu", "read_metric", {"name": "cpu_load"})], ["cpu"]),
        _plan([llm_step("cpu", "read_metric", {"name": "cpu_usage"})], ["cpu"]),
        KNOWN,
        _metric("cpu_usage", 72.5),
    ),
    Query(
        "metric_errors",
        "How many errors are we getting? Give me the error rate.",
        _plan([llm_step("err", "read_metric", {"name": "errors"})], ["err"]),
        _plan([llm_step("err", "read_metric", {"name": "error_rate"})], ["err"]),
        KNOWN,
        _metric("error_rate", 1.2),
    ),
    Query(
        "threshold_latency",
        "Is the p95 latency above 200 ms?",
        _plan(
            [llm_step("check", "check_metric", {"name": "p95_latency", "threshold": 200})],
            ["check"],
        ),
        _plan(
            [llm_step("check", "check_metric", {"name": "latency_p95", "threshold": 200})],
            ["check"],
        ),
        KNOWN,
        _metric("latency_p95", 240.0),
    ),
    Query(
        "threshold_disk",
        "Has disk throughput gone over 100 MB/s?",
        _plan(
            [llm_step("check", "check_metric", {"name": "disk_throughput", "threshold": 100})],
            ["check"],
        ),
        _plan(
            [llm_step("check", "check_metric", {"name": "disk_io", "threshold": 100})], ["check"]
        ),
        KNOWN,
        _metric("disk_io", 120.0),
    ),
    Query(
        "metrics_two",
        "Show me memory usage and CPU usage.",
        _plan(
            [
                llm_step("mem", "read_metric", {"name": "mem_usage"}),
                llm_step("cpu", "read_metric", {"name": "cpu_usage"}),
            ],
            ["mem", "cpu"],
        ),
        _plan(
            [
                llm_step("mem", "read_metric", {"name": "memory_usage"}),
                llm_step("cpu", "read_metric", {"name": "cpu_usage"}),
            ],
            ["mem", "cpu"],
        ),
        KNOWN,
        lambda out: _metric("memory_usage", 58.1)(out) and _metric("cpu_usage", 72.5)(out),
    ),
    Query(
        "blog_missing_author",
        "Publish a blog post titled 'Hello' about the world by Alice (alice@test.com).",
        _plan(
            [
                llm_step(
                    "blog",
                    "createBlog",
                    {"authorId": "Alice", "title": "Hello", "content": "about the world"},
                )
            ],
            ["blog"],
        ),
        _plan(
            [
                llm_step("author", "createAuthor", {"name": "Alice", "email": "alice@test.com"}),
                llm_step(
                    "blog",
                    "createBlog",
                    {"authorId": "{{author._id}}", "title": "Hello", "content": "about the world"},
                ),
            ],
            ["blog"],
        ),
        CREATE_FIRST,
        _blog("Hello"),
    ),
    Query(
        "comment_missing_blog",
        "Bob (bob@test.com) writes a blog post titled 'Tips' about testing; comment 'Nice!' on it.",
        _plan(
            [
                llm_step("author", "createAuthor", {"name": "Bob", "email": "bob@test.com"}),
                llm_step("comment", "createComment", {"blogId": "Tips", "text": "Nice!"}),
            ],
            ["comment"],
        ),
        _plan(
            [
                llm_step("author", "createAuthor", {"name": "Bob", "email": "bob@test.com"}),
                llm_step(
                    "blog",
                    "createBlog",
                    {"authorId": "{{author._id}}", "title": "Tips", "content": "testing"},
                ),
                llm_step("comment", "createComment", {"blogId": "{{blog._id}}", "text": "Nice!"}),
            ],
            ["comment"],
        ),
        "blog 'Tips' does not exist",
        _comment("Nice!"),
    ),
    Query(
        # an id the model made up, not a name of this plan: that one the planner refuses
        # (toolplan.planning.id_by_name) before anything runs, so it would never reach a replan
        "author_invented_id",
        "Create author Carol with email carol@test.com, then fetch her author record.",
        _plan(
            [
                llm_step("author", "createAuthor", {"name": "Carol", "email": "carol@test.com"}),
                llm_step("profile", "getAuthor", {"authorId": "author_1"}),
            ],
            ["profile"],
        ),
        _plan(
            [
                llm_step("author", "createAuthor", {"name": "Carol", "email": "carol@test.com"}),
                llm_step("profile", "getAuthor", {"authorId": "{{author._id}}"}),
            ],
            ["profile"],
        ),
        "author 'author_1' does not exist",
        _author("Carol"),
    ),
]


# -- the model side ------------------------------------------------------------------------------


def _kind(request: dict[str, Any]) -> str:
    """``respond`` or ``plan``, from the structured-output schema's name."""
    schema = (request.get("response_format") or {}).get("json_schema") or {}
    choice = request.get("tool_choice")
    name = schema.get("name") or (
        choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    )
    return "respond" if name == "Respond" else "plan"


def _user_text(request: dict[str, Any]) -> str:
    return "\n".join(
        str(m.get("content")) for m in request.get("messages", []) if m.get("role") == "user"
    )


def _counted(request: dict[str, Any], answer: Any) -> Reply:
    """A structured reply whose usage is counted (o200k) from the request's messages and schema
    and from the answer, as a provider would bill it, roughly."""
    from toolplan._tokens import count_tokens

    sent = [request.get("messages"), request.get("response_format"), request.get("tools")]
    usage = (count_tokens(json.dumps(sent)), count_tokens(json.dumps(answer)))
    return Reply.structured(answer, usage=usage)


def _scripted(query: Query, request: dict[str, Any]) -> Reply:
    text = _user_text(request)
    if _kind(request) == "plan":
        return _counted(request, query.fixed if query.evidence in text else query.first)
    failures = text.split("Failed and skipped steps:", 1)[-1].strip()
    if failures.startswith("(none)"):
        outputs = text.split("Outputs of the plan's output steps:", 1)[-1]
        outputs = outputs.split("Failed and skipped steps:", 1)[0].strip()
        return _counted(request, {"action": "answer", "answer": f"From the results: {outputs}"})
    if "Replanning allowed: yes" in text:
        return _counted(request, {"action": "replan", "reason": failures})
    return _counted(request, {"action": "answer", "answer": f"It failed: {failures}"})


def _forward(upstream: str, request: dict[str, Any]) -> Reply:
    """The real model's answer, passed back as it came (content, or one tool call)."""
    data = json.dumps(request).encode()
    post = urllib.request.Request(
        upstream.rstrip("/") + "/chat/completions",
        data=data,
        headers={"Content-Type": "application/json", "Authorization": "Bearer unused"},
    )
    with urllib.request.urlopen(post, timeout=1200) as answer:
        body = json.loads(answer.read())
    choice = body["choices"][0]
    message = choice["message"]
    usage = body.get("usage") or {}
    tokens = (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
    calls = message.get("tool_calls") or []
    if calls:
        fn = calls[0]["function"]
        reply = Reply.tool_call(fn["name"], fn["arguments"], usage=tokens)
    else:
        reply = Reply.content(message.get("content") or "", usage=tokens)
    return reply.with_(finish_reason=choice.get("finish_reason"))


@dataclass
class _Model:
    query: Query
    upstream: str | None
    calls: list[dict[str, Any]]

    def __call__(self, request: dict[str, Any]) -> Reply:
        started = time.perf_counter()
        first = _kind(request) == "plan" and not any(c["kind"] == "plan" for c in self.calls)
        if first:
            reply = _counted(request, self.query.first)  # by design
        elif self.upstream is None:
            reply = _scripted(self.query, request)
        else:
            reply = _forward(self.upstream, request)
        self.calls.append(
            {
                "kind": _kind(request),
                "designed": first,
                "seconds": round(time.perf_counter() - started, 2),
                "reply": reply.text or reply.arguments or json.dumps(reply.obj),
            }
        )
        return reply


# -- the run -------------------------------------------------------------------------------------


async def _one(query: Query, server: FakeOpenAIServer, upstream: str | None) -> dict[str, Any]:
    import toolplan

    model = _Model(query, upstream, [])
    server.script([model] * 12)
    started = time.perf_counter()
    row: dict[str, Any] = {"name": query.name, "query": query.query}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            outcome = await toolplan.answer_query(
                query.query,
                tools=_tools(),
                store=f"sqlite:///{Path(tmp) / 'recovery.db'}",
                max_replans=1,
            )
        except toolplan.ToolplanError as error:
            row.update(error=error.message, exitCode=error.exit_code, recovered=False, clean=False)
        else:
            plans = outcome.plans
            second = plans[1] if len(plans) > 1 else None
            outputs = outcome.result.outputs
            recovered = bool(
                second is not None
                and second["replanOf"] == plans[0]["planId"]
                and second["status"] == "succeeded"
                and query.check(outputs)
                and outcome.answer.strip()
            )
            extra = _extra_tools(query.fixed, outcome.plan) if second is not None else []
            writes = _writes()
            # the designed first plan was refused at planning time (toolplan.planning.id_by_name) and
            # repaired there: the failure never ran, so there was nothing to replan
            caught = bool(
                second is None
                and plans[0]["status"] == "succeeded"
                and query.check(outputs)
                and any(c["kind"] == "plan" and not c["designed"] for c in model.calls)
            )
            row.update(
                recovered=recovered,
                caughtAtPlanning=caught,
                extraTools=extra,
                clean=recovered and not any(tool in writes for tool in extra),
                statuses=[p["status"] for p in plans],
                exitCode=outcome.exit_code,
                llmCalls=outcome.llm_calls,
                usage=outcome.usage,
                answer=outcome.answer,
                outputs=outputs,
                secondPlan=[
                    {"tool": s["tool"], "parameters": s["parameters"]}
                    for s in outcome.plan.get("steps", [])
                ]
                if second is not None
                else None,
            )
    server.script([])
    row["seconds"] = round(time.perf_counter() - started, 2)
    row["calls"] = model.calls
    row["firstRespond"] = next(
        (_action(c["reply"]) for c in model.calls if c["kind"] == "respond"), None
    )
    return row


def _writes() -> frozenset[str]:
    """Tools with side effects, as the toolset tags them (``write``): a recovery whose plan
    calls one the fix does not need is not clean (the real model once added
    ``createAuthor("newAuthor")`` to a metric query)."""
    from toolplan.tools.catalog import ToolCatalog

    catalog = ToolCatalog(_tools())
    return frozenset(name for name in catalog.names if "write" in catalog.info(name).tags)


def _extra_tools(fixed: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    """The tools of ``plan``'s steps beyond those of the fixed plan (a multiset difference)."""
    needed = [step["tool"] for step in fixed["steps"]]
    extra = []
    for step in plan.get("steps", []):
        if step["tool"] in needed:
            needed.remove(step["tool"])
        else:
            extra.append(step["tool"])
    return extra


def _action(reply: str) -> str:
    try:
        data = json.loads(reply)
    except ValueError:
        return "unreadable"
    return str(data.get("action")) if isinstance(data, dict) else "unreadable"


async def run_recovery(
    *,
    real: bool,
    only: list[str] | None = None,
    log: Callable[[str], None] = print,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    upstream = os.environ.get("OPENAI_BASE_URL") if real else None
    if real and not upstream:
        raise SystemExit("--real needs OPENAI_BASE_URL (. /tmp/serve.env)")
    model_name = os.environ.get("TOOLPLAN_MODEL", "openai:qwen2.5-coder-1.5b-instruct")
    rows = []
    with FakeOpenAIServer(api_key="unused") as server:
        saved = dict(os.environ)
        os.environ.update(
            {
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "unused",
                "TOOLPLAN_MODEL": model_name if real else "openai:gpt-4o-mini",
                "TOOLPLAN_STRUCTURED_METHOD": os.environ.get(
                    "TOOLPLAN_STRUCTURED_METHOD", "json_schema"
                ),
                "TOOLPLAN_LLM_RETRIES": "0",
            }
        )
        try:
            for query in QUERIES:
                if only and query.name not in only:
                    continue
                row = await _one(query, server, upstream)
                log(
                    f"{query.name}: recovered={row['recovered']} clean={row['clean']} "
                    f"caught at planning={row.get('caughtAtPlanning')} "
                    f"extra={row.get('extraTools')} "
                    f"first respond={row['firstRespond']} calls={row.get('llmCalls')} "
                    f"{row['seconds']} s {row.get('error', '')}"
                )
                rows.append(row)
                if on_row is not None:
                    on_row(row)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    recovered = sum(r["recovered"] for r in rows)
    ok = [r for r in rows if "llmCalls" in r]
    return {
        "model": model_name if real else "scripted",
        "queries": len(rows),
        "recovered": recovered,
        "recoveredClean": sum(r["clean"] for r in rows),
        "caughtAtPlanning": sum(bool(r.get("caughtAtPlanning")) for r in rows),
        "askedToReplan": sum(r["firstRespond"] == "replan" for r in rows),
        "medianLlmCalls": statistics.median(r["llmCalls"] for r in ok) if ok else None,
        "medianInputTokens": statistics.median(r["usage"]["inputTokens"] for r in ok)
        if ok
        else None,
        "medianOutputTokens": statistics.median(r["usage"]["outputTokens"] for r in ok)
        if ok
        else None,
        "medianSeconds": statistics.median(r["seconds"] for r in rows) if rows else None,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="forward to OPENAI_BASE_URL")
    parser.add_argument("--only", help="comma-separated query names")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    args = parser.parse_args()
    only = args.only.split(",") if args.only else None

    def keep(row: dict[str, Any]) -> None:  # a slow real run keeps what it has so far
        if args.out:
            with args.out.with_suffix(".rows.jsonl").open("a") as rows:
                rows.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")

    report = asyncio.run(
        run_recovery(
            real=args.real,
            only=only,
            log=lambda m: print(m, file=sys.stderr, flush=True),
            on_row=keep,
        )
    )
    text = json.dumps(report, indent=2, ensure_ascii=False, default=str)
    if args.out:
        args.out.write_text(text + "\n")
    summary = {k: v for k, v in report.items() if k != "rows"}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
