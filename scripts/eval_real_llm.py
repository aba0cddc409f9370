"""Evaluate the planner against a real model: plan AND execute query files, then report.

    eval "$(REAL_LLM_RUNTIME=llama-server bash ../shared/real-llm/serve.sh)"
    python scripts/eval_real_llm.py --out /tmp/eval-1                      # scripts/queries/*.jsonl
    python scripts/eval_real_llm.py scripts/queries-heldout/heldout.jsonl --out /tmp/eval-h
    python scripts/eval_real_llm.py --cache-check --out /tmp/eval-c         # prompt-cache hit, 2x?

Every query file goes through ``toolplan batch FILE --execute --concurrency 1`` (the installed
CLI: whichever toolplan the active venv holds, so an older checkout is measured the same way), in
one store for the whole run, as a real deployment accumulates tool statistics. The model endpoint
(``OPENAI_BASE_URL``) is reached through a small logging proxy: every raw request and answer,
with the server's own ``timings`` (llama.cpp), lands in ``OUT/llm-log.jsonl``.

The report (``OUT/report.md``, ``OUT/report.json``) gives, per file and in total: valid plans,
exact tool set, executions succeeded, repairs per query, planning latency, prompt tokens, cached
prompt tokens, and how many plans chain steps deeper than their data flow needs.

``--schema-sizes 12,24,48`` plans one query per catalog size (the built-in tools plus made-up
ones), with the typed and with the generic schema, and reports schema size, prompt tokens and
latency: where the typed schema stops paying.

``--cache-check`` plans one query cold (after an unrelated request evicts the server's prompt
cache), runs an offline plan (which changes the tools' observed statistics), then plans the same
query again, and reports both calls' latency and the server's ``cache_n``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


# -- logging proxy -------------------------------------------------------------------------------


class _Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        upstream = self.server.upstream.rstrip("/") + self.path.removeprefix("/v1")
        headers = {
            k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
        }
        request = urllib.request.Request(
            upstream, data=body or None, headers=headers, method=self.command
        )
        started = time.time()
        try:
            answer = urllib.request.urlopen(request, timeout=3600)
        except urllib.error.HTTPError as error:
            answer = error
        with answer:
            status = answer.status  # an HTTPError's too (its code)
            ctype = answer.headers.get("Content-Type", "application/json")
            if ctype.startswith("text/event-stream"):
                self._relay(answer, status, ctype, body, started)
                return
            data = answer.read()
        if self.command == "POST":
            self.server.record(body, status, data, started, time.time() - started)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _relay(self, answer: Any, status: int, ctype: str, body: bytes, started: float) -> None:
        """A streamed answer passed on piece by piece as it comes, as the server sends it (the
        planner shows steps and stops runaways while the model writes); when the client hangs
        up, the upstream request is closed too, so the model stops writing. Logged whole, or
        as far as it went (``clientClosed``)."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces: list[bytes] = []
        closed = False
        while piece := answer.read1(65536):
            pieces.append(piece)
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            except OSError:  # the client hung up (a runaway stopped): stop reading upstream
                closed = True
                break
        self.server.record(
            body, status, b"".join(pieces), started, time.time() - started, client_closed=closed
        )
        if not closed:
            with contextlib.suppress(OSError):
                self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = _forward


def _loads(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace")
        return _from_stream(text) if text.lstrip().startswith("data:") else text


def _from_stream(text: str) -> dict[str, Any]:
    """A streamed answer (SSE chunks, as the planner asks since it shows steps while the model
    writes) put back together in the shape of a plain one: the content and tool-call arguments
    joined, the last finish reason, usage and llama.cpp timings."""
    content: list[str] = []
    arguments: list[str] = []
    answer: dict[str, Any] = {}
    finish = None
    for line in text.splitlines():
        data = line.removeprefix("data:").strip()
        if not line.startswith("data:") or not data or data == "[DONE]":
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        for key in ("usage", "timings"):
            if chunk.get(key):
                answer[key] = chunk[key]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            for call in delta.get("tool_calls") or []:
                arguments.append((call.get("function") or {}).get("arguments") or "")
            finish = choice.get("finish_reason") or finish
    message = {"role": "assistant", "content": "".join(content) or "".join(arguments)}
    return {"choices": [{"message": message, "finish_reason": finish}], "streamed": True, **answer}


@contextmanager
def logging_proxy(upstream: str, log: Path) -> Iterator[str]:
    """A proxy on a free loopback port forwarding to ``upstream``; yields its base URL."""
    lock = threading.Lock()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    httpd.daemon_threads = True

    def record(
        body: bytes,
        status: int,
        data: bytes,
        started: float,
        seconds: float,
        *,
        client_closed: bool = False,
    ) -> None:
        line = {
            "t": started,
            "status": status,
            "seconds": round(seconds, 3),
            "request": _loads(body),
            "response": _loads(data),
        }
        if client_closed:
            line["clientClosed"] = True
        with lock, log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")

    httpd.upstream = upstream  # type: ignore[attr-defined]
    httpd.record = record  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def read_log(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


# -- plan depth ----------------------------------------------------------------------------------


def _longest(dependencies: dict[str, list[str]]) -> int:
    depth: dict[str, int] = {}

    def visit(node: str, trail: frozenset[str]) -> int:
        if node not in depth:
            deps = [d for d in dependencies.get(node, []) if d in dependencies and d not in trail]
            depth[node] = 1 + max((visit(d, trail | {d}) for d in deps), default=0)
        return depth[node]

    return max((visit(n, frozenset({n})) for n in dependencies), default=0)


def plan_depths(plan: dict[str, Any]) -> tuple[int, int]:
    """(depth of the plan as written, depth its data flow needs): dependsOn vs templates only."""
    from toolplan.plan_format.templates import find_templates

    ids = {step["id"] for step in plan["steps"]}
    written: dict[str, list[str]] = {}
    data: dict[str, list[str]] = {}
    for step in plan["steps"]:
        flow = [t.step for t in find_templates(step.get("parameters", {})) if t.step in ids]
        data[step["id"]] = flow
        written[step["id"]] = flow + [d for d in step.get("dependsOn", []) if d in ids]
    return _longest(written), _longest(data)


# -- running -------------------------------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, -(-int(q * 100) * len(ordered) // 100) - 1)]


def _expected(file: Path, field: str) -> dict[str, list[str] | None]:
    """Per query id, its ``expected[field]`` (``tools``, or ``control``: the ``forEach``/``when``
    its plan must use), ``None`` where not given."""
    out: dict[str, list[str] | None] = {}
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            item = json.loads(line)
            out[str(item.get("id", number))] = (item.get("expected") or {}).get(field)
    return out


def control_used(plan: dict[str, Any]) -> list[str]:
    """The control fields a plan uses: ``forEach`` and ``when``, in that order."""
    return [
        name
        for name in ("forEach", "when")
        if any(step.get(name) is not None for step in plan.get("steps", []))
    ]


def run_file(file: Path, out: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run one query file through ``toolplan batch --execute``; return its rows and log slice."""
    name = file.stem
    before = len(read_log(log))
    started = time.time()
    subprocess.run(
        [
            "toolplan",
            "batch",
            str(file),
            "--execute",
            "--no-reuse",  # every query measures the planner, even one asked before
            "--concurrency",
            "1",
            "--out",
            str(out / f"{name}.out.jsonl"),
            "--summary-json",
            str(out / f"{name}.summary.json"),
        ],
        env=env,
        stdout=(out / f"{name}.stdout").open("w"),
        stderr=(out / f"{name}.stderr").open("w"),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    rows = [
        json.loads(line)
        for line in (out / f"{name}.out.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return {
        "file": str(file),
        "seconds": round(time.time() - started, 1),
        "rows": rows,
        "expected": _expected(file, "tools"),
        "control": _expected(file, "control"),
        "calls": read_log(log)[before:],
    }


def _server_cached(calls: list[dict[str, Any]]) -> tuple[int, int]:
    """(prompt tokens, cached prompt tokens) as the server reported them."""
    prompt = cached = 0
    for call in calls:
        response = call.get("response")
        if not isinstance(response, dict):
            continue
        usage = response.get("usage") or {}
        prompt += int(usage.get("prompt_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        timings = response.get("timings") or {}
        cached += int(details.get("cached_tokens") or timings.get("cache_n") or 0)
    return prompt, cached


def score(runs: list[dict[str, Any]], store_uri: str) -> dict[str, Any]:
    """The report's figures, per file and in total."""
    from toolplan.store import open_store

    store = open_store(store_uri)
    per_file: dict[str, Any] = {}
    all_rows: list[dict[str, Any]] = []
    for run in runs:
        rows = []
        for row in run["rows"]:
            expected = run["expected"].get(str(row["id"]))
            row = dict(row)
            row["exact"] = expected is not None and set(row.get("tools") or []) == set(expected)
            row["valid"] = row.get("planId") is not None
            row["repairs"] = max(0, int(row.get("llmCalls") or 0) - 1)
            if row["valid"]:
                record = store.get_plan(row["planId"])
                if record is not None:
                    row["depth"], row["dataDepth"] = plan_depths(record.plan)
                    row["plan"] = record.plan
            wanted = run.get("control", {}).get(str(row["id"]))
            if wanted is not None:
                used = control_used(row.get("plan") or {})
                # a map/branch query counts when its plan uses the control it needs, calls the
                # expected tools and executes
                row["controlOk"] = (
                    set(wanted) <= set(used) and row["exact"] and row.get("status") == "succeeded"
                )
            rows.append(row)
        per_file[Path(run["file"]).stem] = figures(rows, run["calls"])
        per_file[Path(run["file"]).stem]["seconds"] = run["seconds"]
        all_rows += rows
        run["scored"] = rows
    calls = [call for run in runs for call in run["calls"]]
    return {"total": figures(all_rows, calls), "files": per_file}


def figures(rows: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    plan_ms = [float(r["planMs"]) for r in rows if isinstance(r.get("planMs"), int | float)]
    prompt_tokens = sum(int((r.get("usage") or {}).get("inputTokens", 0)) for r in rows)
    cached = [(r.get("usage") or {}).get("cachedInputTokens") for r in rows]
    server_prompt, server_cached = _server_cached(calls)
    planner_calls = sum(int(r.get("llmCalls") or 0) for r in rows)
    deeper = [r for r in rows if "depth" in r and r["depth"] > r["dataDepth"]]
    return {
        "queries": n,
        "validPlans": sum(r["valid"] for r in rows),
        "exactToolSet": sum(r["exact"] for r in rows),
        "executionsSucceeded": sum(r.get("status") == "succeeded" for r in rows),
        "repairsPerQuery": round(sum(r["repairs"] for r in rows) / n, 2) if n else None,
        "queriesRepaired": sum(r["repairs"] > 0 for r in rows),
        "llmCalls": planner_calls,
        "planMs": {
            "p50": _percentile(plan_ms, 0.5),
            "p95": _percentile(plan_ms, 0.95),
            "mean": round(statistics.fmean(plan_ms), 1) if plan_ms else None,
        },
        "promptTokensPerCall": round(prompt_tokens / planner_calls) if planner_calls else None,
        "cachedInputTokens": (
            sum(int(c) for c in cached if c is not None)
            if any(c is not None for c in cached)
            else None
        ),
        "server": {
            "promptTokens": server_prompt,
            "cachedTokens": server_cached,
            "cachedShare": round(server_cached / server_prompt, 3) if server_prompt else None,
            "finishLength": sum(
                1
                for call in calls
                if isinstance(call.get("response"), dict)
                and (call["response"].get("choices") or [{}])[0].get("finish_reason") == "length"
            ),
        },
        "deeperThanDataFlow": len(deeper),
        "mapBranch": (
            {
                "queries": sum("controlOk" in r for r in rows),
                "ok": sum(bool(r.get("controlOk")) for r in rows),
            }
            if any("controlOk" in r for r in rows)
            else None
        ),
    }


def markdown(report: dict[str, Any]) -> str:
    head = (
        "| file | queries | valid plans | exact tool set | executions succeeded | repairs/query "
        "| plan ms p50 / p95 | prompt tokens/call | cached (server) | deeper than data flow |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )

    def row(name: str, f: dict[str, Any]) -> str:
        share = f["server"]["cachedShare"]
        return (
            f"| {name} | {f['queries']} | {f['validPlans']} | {f['exactToolSet']} "
            f"| {f['executionsSucceeded']} | {f['repairsPerQuery']} "
            f"| {f['planMs']['p50']} / {f['planMs']['p95']} | {f['promptTokensPerCall']} "
            f"| {f['server']['cachedTokens']} ({share if share is not None else '-'}) "
            f"| {f['deeperThanDataFlow']} |\n"
        )

    body = "".join(row(name, f) for name, f in report["files"].items())
    text = head + body + row("**total**", report["total"])
    mapped = report["total"].get("mapBranch")
    if mapped:
        text += (
            f"\nmap/branch queries planned with the forEach/when they need, the expected tools, "
            f"and executed: {mapped['ok']}/{mapped['queries']}\n"
        )
    return text


def failures(runs: list[dict[str, Any]]) -> str:
    lines = []
    for run in runs:
        for row in run.get("scored", []):
            if (
                row["valid"]
                and row["exact"]
                and row.get("status") == "succeeded"
                and row.get("controlOk", True)
            ):
                continue
            wanted = run["expected"].get(str(row["id"]))
            lines.append(
                f"- {row['id']} [{row.get('status')}, calls={row.get('llmCalls')}] "
                f"tools={row.get('tools')} expected={wanted}: "
                + str(row.get("error") or "").replace("\n", " ")[:400]
            )
    return "\n".join(lines)


# -- prompt cache --------------------------------------------------------------------------------


def cache_check(out: Path, env: dict[str, str], log: Path, upstream: str, query: str) -> str:
    """Cold planning call, an offline execution, then the identical planning call again."""
    evict = json.dumps(
        {
            "model": env.get("TOOLPLAN_MODEL", "x").partition(":")[2] or "x",
            "messages": [{"role": "user", "content": f"Count to three. ({time.time()})"}],
            "max_tokens": 8,
        }
    ).encode()
    urllib.request.urlopen(
        urllib.request.Request(
            upstream.rstrip("/") + "/chat/completions",
            data=evict,
            headers={"Content-Type": "application/json", "Authorization": "Bearer unused"},
        ),
        timeout=600,
    ).read()
    rows = []
    for label in (
        "first (cold)",
        "between: toolplan run --file examples/blog_chain.json",
        "second",
    ):
        if label.startswith("between"):
            subprocess.run(
                ["toolplan", "run", "--file", str(ROOT / "examples/blog_chain.json"), "--json"],
                env=env,
                capture_output=True,
                check=False,
            )
            continue
        before = len(read_log(log))
        started = time.time()
        done = subprocess.run(
            ["toolplan", "plan", query, "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.time() - started
        calls = read_log(log)[before:]
        first = calls[0] if calls else {}
        timings = (first.get("response") or {}).get("timings") or {}
        try:
            planning_ms = json.loads(done.stdout).get("planningMs")
        except ValueError:
            planning_ms = None
        rows.append(
            {
                "call": label,
                "exit": done.returncode,
                "llmCalls": len(calls),
                "httpSeconds": first.get("seconds"),
                "wallSeconds": round(wall, 2),
                "planningMs": planning_ms,
                "cache_n": timings.get("cache_n"),
                "prompt_n": timings.get("prompt_n"),
                "prompt_ms": timings.get("prompt_ms"),
                "predicted_ms": timings.get("predicted_ms"),
            }
        )
    (out / "cache-check.json").write_text(json.dumps(rows, indent=2))
    text = "| call | exit | LLM calls | HTTP s | cache_n | prompt_n | prompt ms | generation ms |\n"
    text += "|---|---|---|---|---|---|---|---|\n"
    for r in rows:
        text += (
            f"| {r['call']} | {r['exit']} | {r['llmCalls']} | {r['httpSeconds']} | {r['cache_n']} "
            f"| {r['prompt_n']} | {r['prompt_ms']} | {r['predicted_ms']} |\n"
        )
    if len(rows) == 2 and rows[0]["httpSeconds"] and rows[1]["httpSeconds"]:
        text += f"\nspeedup of the second call: {rows[0]['httpSeconds'] / rows[1]['httpSeconds']:.2f}x\n"
    return text


def synthetic_catalog(size: int) -> Any:
    """The built-in catalog plus made-up tools up to ``size`` tools (a string, a number and an
    optional free-form object argument each, like the built-ins)."""
    from langchain_core.tools import StructuredTool

    from toolplan.tools import load_tool_modules

    catalog = load_tool_modules(["blog", "metrics", "weather"])
    extra = []
    for index in range(max(0, size - len(catalog))):

        def fake(
            query: str, limit: int = 10, options: dict[str, Any] | None = None
        ) -> dict[str, Any]:
            return {"query": query, "limit": limit}

        extra.append(
            StructuredTool.from_function(
                fake,
                name=f"lookup_{index:03d}",
                description=f'Look up records in collection {index}. Returns `{{"items": [...]}}`.',
            )
        )
    catalog.add(extra, source="synthetic")
    return catalog


def schema_sizes(out: Path, env: dict[str, str], log: Path, sizes: list[int]) -> str:
    """Per catalog size: schema size, prompt tokens and one planning call's latency and outcome,
    with the typed and with the generic schema."""
    import asyncio

    from toolplan.client import Toolplan
    from toolplan.config import Settings
    from toolplan.pipeline.planning import create_plan
    from toolplan.planning.schema import generic_plan_schema, typed_plan_schema

    rows = []
    method = env.get("TOOLPLAN_STRUCTURED_METHOD") or "function_calling"
    for size in sizes:
        catalog = synthetic_catalog(size)
        for kind in ("typed", "generic"):
            schema = (
                typed_plan_schema(catalog, strict=method == "json_schema")
                if kind == "typed"
                else generic_plan_schema()
            )
            os.environ.update(env)
            os.environ["TOOLPLAN_TYPED_SCHEMA_MAX_TOOLS"] = str(size if kind == "typed" else 0)
            settings = Settings.from_env().with_overrides(store_uri=f"sqlite:///{out}/sizes.db")
            ctx = Toolplan(settings=settings, tools=catalog).planner_context(max_repairs=0)
            before = len(read_log(log))
            started = time.time()
            try:
                outcome = asyncio.run(create_plan("What's the weather in Oslo?", ctx))
                result = "valid" if outcome.plan else "?"
            except Exception as error:  # the figure is whether it works
                result = f"{type(error).__name__}: {str(error)[:120]}"
            calls = read_log(log)[before:]
            response = (calls[0].get("response") if calls else None) or {}
            timings = response.get("timings") if isinstance(response, dict) else None
            usage = response.get("usage") if isinstance(response, dict) else None
            rows.append(
                {
                    "tools": size,
                    "schema": kind,
                    "schemaChars": schema.size,
                    "promptTokens": (usage or {}).get("prompt_tokens"),
                    "seconds": round(time.time() - started, 1),
                    "promptMs": (timings or {}).get("prompt_ms"),
                    "generationMs": (timings or {}).get("predicted_ms"),
                    "status": calls[0].get("status") if calls else None,
                    "result": result,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    (out / "schema-sizes.json").write_text(json.dumps(rows, indent=2))
    text = "| tools | schema | schema chars | prompt tokens | seconds | prompt ms | generation ms | HTTP | result |\n"
    text += "|---|---|---|---|---|---|---|---|---|\n"
    for r in rows:
        text += (
            f"| {r['tools']} | {r['schema']} | {r['schemaChars']} | {r['promptTokens']} "
            f"| {r['seconds']} | {r['promptMs']} | {r['generationMs']} | {r['status']} "
            f"| {r['result']} |\n"
        )
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="*", type=Path, help="default: scripts/queries/*.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="a new or empty directory")
    parser.add_argument("--cache-check", action="store_true", help="only the prompt-cache check")
    parser.add_argument(
        "--cache-query", default="Compare the weather in Tokyo and London", metavar="QUERY"
    )
    parser.add_argument(
        "--schema-sizes",
        metavar="N,N,...",
        help="only: plan once per catalog size (built-ins + made-up tools), typed and generic",
    )
    args = parser.parse_args(argv)
    upstream = os.environ.get("OPENAI_BASE_URL")
    if not upstream:
        print("error: set OPENAI_BASE_URL (start the server with serve.sh)", file=sys.stderr)
        return 2
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = out / "llm-log.jsonl"
    store_uri = f"sqlite:///{out}/toolplan.db"
    with logging_proxy(upstream, log) as proxied:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=proxied,
            TOOLPLAN_STORE=store_uri,
            TOOLPLAN_LLM_TIMEOUT=os.environ.get("TOOLPLAN_LLM_TIMEOUT", "600"),
        )
        if args.schema_sizes:
            sizes = [int(n) for n in args.schema_sizes.split(",")]
            text = schema_sizes(out, env, log, sizes)
            (out / "schema-sizes.md").write_text(text)
            print(text)
            return 0
        if args.cache_check:
            text = cache_check(out, env, log, upstream, args.cache_query)
            (out / "cache-check.md").write_text(text)
            print(text)
            return 0
        files = args.files or sorted((ROOT / "scripts" / "queries").glob("*.jsonl"))
        runs = []
        for file in files:
            run = run_file(file, out, env, log)
            runs.append(run)
            rows = run["rows"]
            print(
                f"{file.stem:10} {run['seconds']:>6}s  "
                f"planned {sum(r.get('planId') is not None for r in rows)}/{len(rows)}  "
                f"succeeded {sum(r.get('status') == 'succeeded' for r in rows)}",
                flush=True,
            )
    report = score(runs, store_uri)
    (out / "report.json").write_text(
        json.dumps({**report, "rows": [r for run in runs for r in run["scored"]]}, indent=2)
    )
    text = markdown(report) + "\nNot valid, not exact or not succeeded:\n" + failures(runs) + "\n"
    (out / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
