"""The six round-trip scenarios, the extra tools they need, and a simulated-latency wrapper.

Scenarios come from the seeds (blog chain, weather comparison, metrics check) plus the shapes the
issue asks for (a 5-way search fan-out, a 6-step chain, a mixed DAG). Each is written once, as the
ideal plan; the ReAct policy derives its ideal turn-by-turn tool calls from the same steps.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool

from bench.dags import kahn_layers
from toolplan.plan_format.plan import parse_plan
from toolplan.tools import ToolCatalog, load_tool_modules, tagged
from toolplan.validation import analyze

__all__ = ["EXTRA_TOOLS", "SCENARIOS", "Scenario", "SimulatedLatency", "bench_tools"]

_WORDS = [
    "scheduler",
    "latency",
    "throughput",
    "dependency",
    "graph",
    "planner",
    "executor",
    "checkpoint",
    "durable",
    "eager",
    "parallel",
    "critical",
    "path",
    "superstep",
    "barrier",
    "worker",
    "queue",
    "lease",
    "retry",
    "backoff",
    "idempotent",
    "template",
    "resolution",
    "token",
    "budget",
    "prompt",
    "catalog",
    "schema",
    "validation",
    "topology",
    "layer",
    "fan-out",
    "join",
    "chain",
    "agent",
    "reasoning",
    "observation",
    "action",
    "tool",
    "call",
    "round-trip",
    "cost",
    "model",
    "inference",
    "cache",
    "memory",
    "store",
    "index",
    "replica",
    "shard",
    "cluster",
    "benchmark",
    "median",
    "percentile",
    "overhead",
]


def _rng(*parts: Any) -> random.Random:
    return random.Random(hashlib.sha256(repr(parts).encode()).hexdigest())


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


@tool
def web_search(query: str, max_results: int = 3) -> dict[str, Any]:
    """Search the web. Returns `{"query", "results": [{"title", "url", "snippet"}]}`."""
    rng = _rng("search", query.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-")
    results = [
        {
            "title": f"{query.title()}: {rng.choice(_WORDS)} {rng.choice(_WORDS)} ({rank})",
            "url": f"https://example.org/{slug}/{rank}",
            "snippet": _sentence(rng, 18),
        }
        for rank in range(1, max_results + 1)
    ]
    return {"query": query, "results": results}


@tool
def fetch_page(url: str) -> dict[str, Any]:
    """Fetch a web page. Returns `{"url", "title", "text"}` (plain text)."""
    rng = _rng("page", url)
    text = " ".join(_sentence(rng, rng.randint(10, 16)) for _ in range(8))
    return {"url": url, "title": url.rsplit("/", 2)[-2].replace("-", " ").title(), "text": text}


@tool
def extract_keywords(text: str, top_k: int = 3) -> dict[str, Any]:
    """The most frequent words of a text. Returns `{"keywords": [...]}`, most frequent first."""
    words = re.findall(r"[a-z][a-z-]{3,}", text.lower())
    return {"keywords": [word for word, _ in Counter(words).most_common(top_k)]}


@tool
def summarize_text(text: str, max_words: int = 30) -> dict[str, Any]:
    """Summarize a text in at most `max_words` words. Returns `{"summary", "words"}`."""
    words = text.split()[:max_words]
    return {"summary": " ".join(words), "words": len(words)}


for _tool in (web_search, fetch_page):
    tagged(_tool, "web", "read")
for _tool in (extract_keywords, summarize_text):
    tagged(_tool, "text", "analysis")

EXTRA_TOOLS = [web_search, fetch_page, extract_keywords, summarize_text]


class SimulatedLatency(BaseTool):
    """Wraps a tool: same name, description and schema; sleeps ``delay`` seconds, then calls it."""

    inner: BaseTool
    delay: float

    def __init__(self, inner: BaseTool, delay: float) -> None:
        super().__init__(
            name=inner.name,
            description=inner.description,
            args_schema=inner.tool_call_schema,
            tags=list(inner.tags or []),
            metadata=dict(inner.metadata or {}),
            inner=inner,
            delay=delay,
        )

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - async only
        raise NotImplementedError("SimulatedLatency is async only")

    async def _arun(self, *args: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        await asyncio.sleep(self.delay)
        return await self.inner.ainvoke(kwargs, config=config)


def bench_tools(delay: float) -> list[BaseTool]:
    """Every tool both agents get: blog, metrics, weather and the extra ones, each delayed."""
    catalog = load_tool_modules(["blog", "metrics", "weather"])
    catalog.add(EXTRA_TOOLS, source="bench.scenarios")
    return [SimulatedLatency(t, delay) for t in catalog]


def bench_catalog(delay: float) -> ToolCatalog:
    """:func:`bench_tools` as a toolplan catalog."""
    return ToolCatalog(bench_tools(delay), source="bench")


def _step(sid: str, tool_name: str, **parameters: Any) -> dict[str, Any]:
    return {"id": sid, "tool": tool_name, "parameters": parameters}


@dataclass(frozen=True)
class Scenario:
    """One query, its ideal plan, and the final answer an ideal model would write."""

    key: str
    title: str
    query: str
    steps: list[dict[str, Any]]
    output_steps: list[str]
    answer: str
    reasoning: str = "Independent steps run in parallel; later steps reference earlier outputs."
    tags: tuple[str, ...] = field(default=())

    @property
    def plan(self) -> dict[str, Any]:
        """The canonical plan."""
        return {"reasoning": self.reasoning, "steps": self.steps, "outputSteps": self.output_steps}

    @property
    def dependencies(self) -> dict[str, list[str]]:
        """Edges as toolplan infers them (templates)."""
        return analyze(parse_plan(self.plan), bench_catalog(0.0), max_steps=100).dependencies

    @property
    def depth(self) -> int:
        """Length of the longest dependency chain, in steps."""
        deps = self.dependencies
        return len(kahn_layers([s["id"] for s in self.steps], deps))


SCENARIOS: list[Scenario] = [
    Scenario(
        "blog_chain",
        "author → blog → comment",
        "Create the author Alice (alice@test.com), have her publish a blog post titled 'Hello' "
        "about the world, then add the comment 'Great post!' to it.",
        [
            _step("author", "createAuthor", name="Alice", email="alice@test.com"),
            _step(
                "blog",
                "createBlog",
                authorId="{{author._id}}",
                title="Hello",
                content="About the world.",
            ),
            _step(
                "comment",
                "createComment",
                blogId="{{blog._id}}",
                text="Great post!",
                author="Alice",
            ),
        ],
        ["author", "blog", "comment"],
        "Alice (alice@test.com) was created, her post 'Hello' was published and it now has the "
        "comment 'Great post!'.",
    ),
    Scenario(
        "weather_compare",
        "weather in 3 cities, then compare",
        "What is the weather in Paris, Tokyo and Lima right now? Tell me which is warmest, "
        "which is coldest, and the average temperature.",
        [
            _step("paris", "get_weather", location="Paris"),
            _step("tokyo", "get_weather", location="Tokyo"),
            _step("lima", "get_weather", location="Lima"),
            _step("summary", "summarize", data=["{{paris}}", "{{tokyo}}", "{{lima}}"]),
        ],
        ["paris", "tokyo", "lima", "summary"],
        "Tokyo is the warmest (22.5 °C, rainy), Lima the coldest (-5.0 °C, windy); Paris is "
        "-1.5 °C and foggy. The average of the three is 5.3 °C.",
    ),
    Scenario(
        "metrics_threshold",
        "metrics list → query → threshold",
        "List the compute metrics, query the first one, and tell me whether its current value "
        "is above 70.",
        [
            _step("metrics", "list_metrics", category="compute"),
            _step("query", "query_metric", name="{{metrics.metrics[0].name}}"),
            _step(
                "check",
                "check_threshold",
                metric_name="{{query.name}}",
                value="{{query.current}}",
                threshold=70,
                operator="gt",
            ),
        ],
        ["query", "check"],
        "cpu_usage is the first compute metric; its current value of 72.5% is above the "
        "threshold of 70.",
    ),
    Scenario(
        "search_fanout",
        "5-way search fan-out",
        "Search the web for each of: LangGraph, LLMCompiler, ReAct agents, MongoDB change "
        "streams and SQLite WAL mode, and give me the top result for each.",
        [
            _step(f"search{i}", "web_search", query=q)
            for i, q in enumerate(
                [
                    "LangGraph",
                    "LLMCompiler",
                    "ReAct agents",
                    "MongoDB change streams",
                    "SQLite WAL mode",
                ],
                1,
            )
        ],
        [f"search{i}" for i in range(1, 6)],
        "Top results: LangGraph, LLMCompiler, ReAct agents, MongoDB change streams and SQLite "
        "WAL mode each have an overview page at example.org (links above).",
    ),
    Scenario(
        "chain6",
        "6-step chain",
        "Find the top web result about eager DAG scheduling, read it, extract its main keyword, "
        "search for that keyword, read the top result, and summarize that page in 30 words.",
        [
            _step("search", "web_search", query="eager DAG scheduling"),
            _step("page", "fetch_page", url="{{search.results[0].url}}"),
            _step("keywords", "extract_keywords", text="{{page.text}}", top_k=1),
            _step("search2", "web_search", query="{{keywords.keywords[0]}}"),
            _step("page2", "fetch_page", url="{{search2.results[0].url}}"),
            _step("summary", "summarize_text", text="{{page2.text}}", max_words=30),
        ],
        ["keywords", "summary"],
        "The top page on eager DAG scheduling is mostly about 'topology'; the top result for "
        "that keyword, https://example.org/topology/1, is summarized in 30 words above.",
    ),
    Scenario(
        "mixed_dag",
        "mixed DAG",
        "Create the author Bob (bob@test.com). Compare the weather in Oslo and Rome, and have "
        "Bob publish a post titled 'Oslo vs Rome' saying which is warmer and by how much. Also "
        "check whether latency_p95 is above 200.",
        [
            _step("author", "createAuthor", name="Bob", email="bob@test.com"),
            _step("oslo", "get_weather", location="Oslo"),
            _step("rome", "get_weather", location="Rome"),
            _step("compare", "compare_data", data_a="{{oslo}}", data_b="{{rome}}"),
            _step(
                "post",
                "createBlog",
                authorId="{{author._id}}",
                title="Oslo vs Rome",
                content="{{compare.warmer}} is warmer by {{compare.difference}} degrees.",
            ),
            _step("latency", "query_metric", name="latency_p95"),
            _step(
                "check",
                "check_threshold",
                metric_name="latency_p95",
                value="{{latency.current}}",
                threshold=200,
                operator="gt",
            ),
        ],
        ["compare", "post", "check"],
        "Rome is warmer than Oslo by 4.1 degrees; Bob's post 'Oslo vs Rome' says so and is "
        "published. latency_p95 is 240 ms, above the threshold of 200.",
    ),
]
