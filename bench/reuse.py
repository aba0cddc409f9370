"""Plan reuse, measured: ``python -m bench.reuse [--json]``.

1. **Batch twice.** ``toolplan batch --execute`` over a query file (real CLI processes, a real
   SQLite store, the scripted OpenAI-compatible server answering each query with its ideal plan):
   pass 1 plans every query; pass 2 (same file, new results file) should make 0 planning calls;
   pass 3 runs a re-parametrised copy (other cities, names, metrics) with
   ``TOOLPLAN_PLAN_REUSE=parametric`` and should make 0 calls too, with every output checked
   against what the tools return for the new values.
2. **Held-out safety.** :data:`HELD_OUT`: stored query and plan, a new query, and the values a
   correct reuse substitutes (``None``: reusing would be wrong). Different phrasings, queries
   differing outside the slots, values in the plan that are not whole literals, a value twice,
   numbers, phrases and lists where a name was. A false reuse is one that happens where it
   should not, or with other values; the substituted plan must also validate (as in
   :func:`toolplan.pipeline.flow.obtain_plan`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CORPUS", "HELD_OUT", "Family", "check_outputs", "held_out", "ideal_reply", "main"]


def _step(sid: str, tool: str, parameters: dict[str, Any], deps: list[str] | None = None) -> dict:
    return {
        "id": sid,
        "tool": tool,
        "parameters": json.dumps(parameters),
        "dependsOn": deps or [],
        "confidence": 0.9,
    }


def _plan(steps: list[dict[str, Any]], outputs: list[str]) -> dict[str, Any]:
    return {"reasoning": "the ideal plan", "steps": steps, "outputSteps": outputs}


@dataclass(frozen=True)
class Family:
    """A kind of query: its text, its ideal plan, and what a correct run outputs."""

    name: str
    text: str
    plan: Callable[..., dict[str, Any]]
    first: dict[str, str]
    """The values of the query file."""
    second: dict[str, str]
    """The values of the re-parametrised copy."""

    def query(self, values: dict[str, str]) -> str:
        """The query for ``values``."""
        return self.text.format(**values)


def _weather(city: str) -> dict[str, Any]:
    from toolplan.builtin_tools.weather import get_weather

    return dict(get_weather.invoke({"location": city}))


CORPUS: list[Family] = [
    Family(
        "weather",
        "What is the weather in {city}?",
        lambda city: _plan([_step("a", "get_weather", {"location": city})], ["a"]),
        {"city": "Tokyo"},
        {"city": "New York"},
    ),
    Family(
        "compare",
        "Compare the weather in {a} and {b}",
        lambda a, b: _plan(
            [
                _step("a", "get_weather", {"location": a}),
                _step("b", "get_weather", {"location": b}),
                _step("c", "compare_data", {"data_a": "{{a}}", "data_b": "{{b}}"}, ["a", "b"]),
            ],
            ["c"],
        ),
        {"a": "London", "b": "Paris"},
        {"a": "Berlin", "b": "Madrid"},
    ),
    Family(
        "summary",
        "Summarize the weather in {a}, {b} and {c}",
        lambda a, b, c: _plan(
            [
                _step("a", "get_weather", {"location": a}),
                _step("b", "get_weather", {"location": b}),
                _step("c", "get_weather", {"location": c}),
                _step("s", "summarize", {"data": ["{{a}}", "{{b}}", "{{c}}"]}, ["a", "b", "c"]),
            ],
            ["s"],
        ),
        {"a": "Oslo", "b": "Lima", "c": "Cairo"},
        {"a": "Seoul", "b": "Nairobi", "c": "Quito"},
    ),
    Family(
        "metric",
        "What is the current value of {metric}?",
        lambda metric: _plan([_step("m", "query_metric", {"name": metric})], ["m"]),
        {"metric": "cpu_usage"},
        {"metric": "memory_usage"},
    ),
    Family(
        "threshold",
        "Is {metric} above 80?",
        lambda metric: _plan(
            [_step("t", "check_threshold", {"metric_name": metric, "threshold": 80})], ["t"]
        ),
        {"metric": "error_rate"},
        {"metric": "latency_p95"},
    ),
    Family(
        "author",
        "Create author {name} with email {email}",
        lambda name, email: _plan(
            [_step("author", "createAuthor", {"name": name, "email": email})], ["author"]
        ),
        {"name": "Alice", "email": "alice@test.com"},
        {"name": "Bob", "email": "bob@test.com"},
    ),
    Family(
        "blog",
        "Create author {name} with email {email}, then a blog titled {title}",
        lambda name, email, title: _plan(
            [
                _step("author", "createAuthor", {"name": name, "email": email}),
                _step(
                    "blog",
                    "createBlog",
                    {"authorId": "{{author._id}}", "title": title, "content": "draft"},
                    ["author"],
                ),
            ],
            ["blog"],
        ),
        {"name": "Carol", "email": "carol@test.com", "title": "Hello"},
        {"name": "Dave", "email": "dave@test.com", "title": "Spring"},
    ),
]
"""The query families of the batch measurement (the default tools: blog, metrics, weather)."""


def check_outputs(family: Family, values: dict[str, str], outputs: dict[str, Any]) -> list[str]:
    """What is wrong with an execution's outputs for ``values`` (empty: correct)."""
    expected: dict[str, Any]
    if family.name == "weather":
        expected = {"a": _weather(values["city"])}
    elif family.name == "compare":
        wa, wb = _weather(values["a"]), _weather(values["b"])
        warmer = wa["city"] if wa["temp"] >= wb["temp"] else wb["city"]
        diff = round(abs(wa["temp"] - wb["temp"]), 1)
        expected = {"c": {"warmer": warmer, "difference": diff, "a": values["a"], "b": values["b"]}}
    elif family.name == "summary":
        reports = sorted((_weather(values[k]) for k in "abc"), key=lambda r: r["temp"])
        avg = round(sum(r["temp"] for r in reports) / 3, 1)
        expected = {
            "s": {
                "count": 3,
                "warmest": reports[-1]["city"],
                "coldest": reports[0]["city"],
                "averageTemp": avg,
            }
        }
    elif family.name == "metric":
        return [] if outputs.get("m", {}).get("name") == values["metric"] else [f"m: {outputs}"]
    elif family.name == "threshold":
        got = outputs.get("t", {})
        ok = got.get("metric") == values["metric"] and got.get("threshold") == 80
        return [] if ok else [f"t: {got}"]
    elif family.name == "author":
        got = outputs.get("author", {})
        ok = got.get("name") == values["name"] and got.get("email") == values["email"]
        return [] if ok else [f"author: {got}"]
    else:
        got = outputs.get("blog", {})
        return [] if got.get("title") == values["title"] else [f"blog: {got}"]
    return [f"{k}: {outputs.get(k)!r} != {v!r}" for k, v in expected.items() if outputs.get(k) != v]


def ideal_reply(request: dict[str, Any]) -> Any:
    """The scripted server's answer: the ideal plan of the corpus query found in the request."""
    from tests.support.fake_openai import Reply

    text = json.dumps(request.get("messages"), ensure_ascii=False)
    for family in CORPUS:
        for values in (family.first, family.second):
            if json.dumps(family.query(values), ensure_ascii=False)[1:-1] in text:
                return Reply.structured(family.plan(**values))
    return Reply.error(400, "not a corpus query")


# --- held-out safety -------------------------------------------------------------------------

_W2 = CORPUS[1].plan("Tokyo", "London")

HELD_OUT: list[tuple[str, str, dict[str, Any], str, dict[str, str] | None]] = [
    # (kind, stored query, stored plan, new query, values of a correct reuse or None)
    ("reuse", "Compare the weather in Tokyo and London", _W2,
     "compare the weather in Paris and Oslo.", {"Tokyo": "Paris", "London": "Oslo"}),
    ("reuse", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Rio de Janeiro and Buenos Aires",
     {"Tokyo": "Rio de Janeiro", "London": "Buenos Aires"}),
    ("reuse", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "what is the weather in   New York", {"Tokyo": "New York"}),
    ("reuse", "What is the current value of cpu_usage?", CORPUS[3].plan("cpu_usage"),
     "What is the current value of disk_io?", {"cpu_usage": "disk_io"}),
    ("reuse", "Is error_rate above 80?", CORPUS[4].plan("error_rate"),
     "Is memory_usage above 80?", {"error_rate": "memory_usage"}),
    ("reuse", "Create author Alice with email alice@test.com",
     CORPUS[5].plan("Alice", "alice@test.com"),
     "Create author Bob with email bob@test.com", {"Alice": "Bob", "alice@test.com": "bob@test.com"}),
    ("reuse", "Weather in Tokyo, then compare Tokyo with London", _W2,
     "Weather in Lima, then compare Lima with Oslo", {"Tokyo": "Lima", "London": "Oslo"}),
    ("reuse", "Summarize the weather in Oslo, Lima and Cairo", CORPUS[2].plan("Oslo", "Lima", "Cairo"),
     "Summarize the weather in Seoul, Quito and Nairobi",
     {"Oslo": "Seoul", "Lima": "Quito", "Cairo": "Nairobi"}),
    # other phrasings: the planner decides
    ("phrasing", "Compare the weather in Tokyo and London", _W2,
     "How does the weather in Paris compare with Oslo?", None),
    ("phrasing", "Compare the weather in Tokyo and London", _W2,
     "Compare Paris and Oslo weather", None),
    ("phrasing", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What's the weather in Paris?", None),
    ("phrasing", "What is the current value of cpu_usage?", CORPUS[3].plan("cpu_usage"),
     "Show me the current value of disk_io", None),
    # differing outside the slots
    ("outside", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Paris and Oslo tomorrow", None),
    ("outside", "Compare the weather in Tokyo and London", _W2,
     "Compare the humidity in Paris and Oslo", None),
    ("outside", "Compare the weather in Tokyo and London", _W2,
     "Do not compare the weather in Paris and Oslo", None),
    ("outside", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What was the weather in Tokyo?", None),
    ("outside", "Create author Alice with email alice@test.com",
     CORPUS[5].plan("Alice", "alice@test.com"),
     "Delete author Bob with email bob@test.com", None),
    # values in the plan that are not whole literals of the query
    ("derived", "Create author Alice", CORPUS[5].plan("Alice", "alice@example.com"),
     "Create author Bob", None),
    ("derived", "What is the weather in tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in paris?", None),
    ("derived", "What is the weather in the capital of Japan?", CORPUS[0].plan("Tokyo"),
     "What is the weather in the capital of France?", None),
    ("derived", "What is the weather for Tokyoites?", CORPUS[0].plan("Tokyo"),
     "What is the weather for Parisians?", None),
    ("derived", "Write a blog titled Hello", _plan(
        [_step("d", "createDraft", {"title": "Hello", "content": "Hello world"})], ["d"]),
     "Write a blog titled Goodbye", None),
    # a value twice
    ("twice", "Weather in Tokyo, then compare Tokyo with London", _W2,
     "Weather in Lima, then compare Rome with Oslo", None),
    ("twice", "Compare the weather in Tokyo and London", CORPUS[1].plan("Tokyo", "Tokyo"),
     "Compare the weather in Tokyo and London", {}),
    # numbers are fixed text, never slots
    ("number", "Is error_rate above 80?", CORPUS[4].plan("error_rate"),
     "Is error_rate above 95?", None),
    ("number", "Is error_rate above 80?", CORPUS[4].plan("error_rate"),
     "Is error_rate above 80 percent?", None),
    ("number", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in 10001?", None),
    # phrases, lists, templates and closed sets where a name was
    ("shape", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Tokyo and the day before", None),
    ("shape", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Paris and the capital of France", None),
    ("shape", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Paris and Oslo and Rome", None),
    ("shape", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Tokyo, Paris and London", None),
    ("shape", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in {{a}} and London", None),
    ("shape", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in Tokyo and London?", None),
    ("shape", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in every city we have an office in?", None),
    ("shape", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in not Tokyo?", None),
    ("shape", "What is the current value of cpu_usage?", CORPUS[3].plan("cpu_usage"),
     "What is the current value of gpu_usage?", None),
    ("shape", "What is the current value of cpu_usage?", CORPUS[3].plan("cpu_usage"),
     "What is the current value of cpu usage?", None),
    ("shape", "Create author Alice with email alice@test.com",
     CORPUS[5].plan("Alice", "alice@test.com"),
     "Create author Bob Smith Jr the Third with email bob@test.com", None),
    # written after the last rule change, run once: not tuned on
    ("unseen", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Paris and Oslo right now", None),
    ("unseen", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Paris and Oslo in Celsius", None),
    ("unseen", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in Tokyo Disneyland?", {"Tokyo": "Tokyo Disneyland"}),
    ("unseen", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in Paris, France?", None),
    ("unseen", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in Paris tonight?", None),
    ("unseen", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in Paris in Fahrenheit?", None),
    ("unseen", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in PARIS?", {"Tokyo": "PARIS"}),
    ("unseen", "Is error_rate above 80?", CORPUS[4].plan("error_rate"),
     "Is error_rate or cpu_usage above 80?", None),
    ("unseen", "Create author Alice with email alice@test.com",
     CORPUS[5].plan("Alice", "alice@test.com"),
     "Create author Alice Cooper with email alice@test.com", {"Alice": "Alice Cooper"}),
    ("unseen", "Create author Alice with email alice@test.com",
     CORPUS[5].plan("Alice", "alice@test.com"),
     "Create author the admin with email alice@test.com", None),
    ("unseen", "What is the current value of cpu_usage?", CORPUS[3].plan("cpu_usage"),
     "What is the current value of cpu_usage in the last hour?", None),
    ("unseen", "Summarize the weather in Oslo, Lima and Cairo",
     CORPUS[2].plan("Oslo", "Lima", "Cairo"),
     "Summarize the weather in Oslo, Lima, Rome and Cairo", None),
    ("unseen", "Compare the weather in Tokyo and London", _W2,
     "Compare the weather in Tokyo and London and tell me which to visit", None),
    ("unseen", "What is the weather in Tokyo?", CORPUS[0].plan("Tokyo"),
     "What is the weather in Tokyo? Also create author Bob", None),
]  # fmt: skip
"""Held-out style queries for parametric reuse."""


def held_out() -> dict[str, Any]:
    """Run :data:`HELD_OUT` through :func:`toolplan.planning.reuse.match_plan` and the validator."""
    from toolplan.config import Settings
    from toolplan.errors import PlanInvalid
    from toolplan.plan_format.plan import load_plan
    from toolplan.store.protocol import PlanRecord
    from toolplan.tools.loading import load_catalog
    from toolplan.validation import analyze

    catalog = load_catalog(Settings.from_env({}))
    rows: list[dict[str, Any]] = []
    for kind, stored_query, plan, query, want in HELD_OUT:
        steps = [{**s, "parameters": json.loads(s["parameters"])} for s in plan["steps"]]
        record = PlanRecord("p", "r", {**plan, "steps": steps}, {}, "planned", "now", stored_query)
        from toolplan.planning.reuse import match_plan

        found = match_plan(query, record)
        got: dict[str, str] | None = None
        if found is not None:
            try:
                analyze(load_plan(found.plan), catalog)
                got = found.values
            except PlanInvalid:
                got = None  # refused by the validator: planned instead
        rows.append(
            {
                "kind": kind,
                "query": query,
                "want": want,
                "got": got,
                "false": got is not None and got != want,
                "missed": want is not None and got is None,
            }
        )
    return {
        "cases": len(rows),
        "shouldReuse": sum(r["want"] is not None for r in rows),
        "reused": sum(r["got"] is not None for r in rows),
        "falseReuses": [r for r in rows if r["false"]],
        "missed": [r for r in rows if r["missed"]],
    }


# --- batch twice ---------------------------------------------------------------------------------


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    toolplan = str(Path(sys.executable).with_name("toolplan"))
    # a real model on a shared CPU can take minutes per query
    return subprocess.run([toolplan, *args], env=env, capture_output=True, text=True, timeout=3600)


def batch_passes(
    workdir: Path,
    base_url: str,
    requests: Callable[[], int] | None,
    *,
    api_key: str = "sk-test",
    concurrency: int = 4,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Pass 1 and 2 over the corpus file, pass 3 over its re-parametrised copy (parametric):
    planning calls the server saw (``requests``: its count of requests; ``None``: not counted),
    the calls the batch reports, wall time, reused plans and output errors of each pass."""
    from toolplan.store import open_store

    store_uri = f"sqlite:///{workdir / 'store.db'}"
    env = {
        **os.environ,
        "OPENAI_API_KEY": api_key,
        "OPENAI_BASE_URL": base_url,
        "TOOLPLAN_MODEL": "openai:gpt-4o-mini",
        "TOOLPLAN_LLM_RETRIES": "0",
        "TOOLPLAN_STORE": store_uri,
        "TOOLPLAN_TOOLS": "blog,metrics,weather",
    }
    env.pop("TOOLPLAN_PLAN_REUSE", None)
    env.update(extra_env or {})
    first = workdir / "queries.jsonl"
    second = workdir / "queries-other-values.jsonl"
    for path, pick in ((first, "first"), (second, "second")):
        path.write_text(
            "".join(
                json.dumps({"id": f.name, "query": f.query(getattr(f, pick))}) + "\n"
                for f in CORPUS
            )
        )
    passes: dict[str, Any] = {}
    runs = [("pass1", first, "exact"), ("pass2", first, "exact"), ("pass3", second, "parametric")]
    for name, path, mode in runs:
        out = workdir / f"{name}.results.jsonl"
        before = requests() if requests is not None else 0
        started = time.perf_counter()
        done = _cli(
            {**env, "TOOLPLAN_PLAN_REUSE": mode},
            "batch", str(path), "--execute", "--json", "--out", str(out),
            "--concurrency", str(concurrency),
        )  # fmt: skip
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{name}: toolplan batch exited {done.returncode}: {done.stderr}")
        summary = json.loads(done.stdout)
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        errors: dict[str, list[str]] = {}
        store = open_store(store_uri)
        try:
            pick = "second" if path == second else "first"
            for line in lines:
                family = next(f for f in CORPUS if f.name == line["id"])
                execution = store.get_execution(line["planId"]) if line.get("planId") else None
                outputs = (
                    {s.step_id: s.output for s in execution.steps} if execution is not None else {}
                )
                problems = check_outputs(family, getattr(family, pick), outputs)
                if line.get("status") != "succeeded" or problems:
                    errors[line["id"]] = [str(line.get("status")), *problems]
        finally:
            store.close()
        passes[name] = {
            "queries": len(lines),
            "succeeded": summary["byStatus"].get("succeeded", 0),
            "planningCalls": requests() - before if requests is not None else None,
            "llmCallsReported": summary["llmCalls"],
            "reused": summary["reused"],
            "reusedByMode": summary["reusedByMode"],
            "wallSeconds": round(wall, 2),
            "planMsP50": summary["planMs"]["p50"],
            "wrongOutputs": errors,
        }
    return passes


def main(argv: list[str] | None = None) -> None:
    """Print both measurements (``--json``: as one JSON object)."""
    parser = argparse.ArgumentParser(prog="python -m bench.reuse", description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--real",
        action="store_true",
        help="plan with the model at $OPENAI_BASE_URL ($TOOLPLAN_MODEL, $OPENAI_API_KEY) "
        "instead of the scripted server; planning calls are then the batch's own count",
    )
    parser.add_argument(
        "--latency", type=float, default=0.8, help="seconds per scripted planning call (0.8)"
    )
    args = parser.parse_args(argv)
    from tests.support.fake_openai import FakeOpenAIServer

    results: dict[str, Any] = {"heldOut": held_out(), "latencySeconds": args.latency}
    if args.real:
        with tempfile.TemporaryDirectory() as tmp:
            results["latencySeconds"] = None
            results["batch"] = batch_passes(
                Path(tmp),
                os.environ["OPENAI_BASE_URL"],
                None,
                api_key=os.environ.get("OPENAI_API_KEY", "none"),
                concurrency=1,
                extra_env={"TOOLPLAN_MODEL": os.environ.get("TOOLPLAN_MODEL", "openai:local")},
            )
        _report(results, args.json)
        return
    with FakeOpenAIServer(api_key="sk-test") as server, tempfile.TemporaryDirectory() as tmp:

        def slow(request: dict[str, Any]) -> Any:
            time.sleep(args.latency)  # a hosted model's latency; the server has one thread each
            return ideal_reply(request)

        server.script([slow] * 100)
        results["batch"] = batch_passes(Path(tmp), server.base_url, lambda: len(server.requests))
    _report(results, args.json)


def _report(results: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(results, indent=2))
        return
    ho = results["heldOut"]
    print(
        f"held-out: {ho['cases']} cases, {ho['shouldReuse']} should reuse, {ho['reused']} reused, "
        f"{len(ho['falseReuses'])} false reuses, {len(ho['missed'])} missed"
    )
    for row in ho["falseReuses"] + ho["missed"]:
        print("  ", row)
    for name, data in results["batch"].items():
        print(name, json.dumps(data))


if __name__ == "__main__":
    main()
