"""False refusals of the grounding check, measured: ``python -m bench.grounding [--json]``.

The check (:mod:`toolplan.planning.grounding`) refuses a planner's plan whose literal arguments
carry data a tool's output should supply. A literal taken from the request must never be refused,
so it runs over plans whose literals are known to be right:

1. **BFCL ground truth** (``simple_python``, ``multiple``, ``parallel``, ``parallel_multiple``
   and the four ``live_`` ones): every entry's possible answer as plans (one step per call, each
   argument's first allowed value, then its second..., an optional argument left out when
   omitting it is allowed), checked with the entry's question as the request and its functions
   as the catalog; an entry is refused when any of its plans is. Also reported: how many
   entries hold a number the question does not (``numbersNotInQuery``): what the refusal would face if those
   steps depended on a tool with numeric output, which is the one condition BFCL's calls lack.
2. **The project's own plans**: the ideal plans of :data:`OWN` (the multi-step queries of
   ``scripts/queries*`` whose literals come from the request, written as a model does), the
   reuse corpus of ``bench.reuse`` (both value sets), ``tests/support/plans.py``'s blog plan and
   ``examples/`` (a document, with no request at all: the strictest reading).
3. **NESTFUL's gold** (when the data copy is here, :mod:`bench.nestful.data`): every sample of
   every split as a plan, with the tools the sample is offered and its query as the request.

Every refusal is a false one; the target is 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.bfcl.data import AST_CATEGORIES
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.planning.grounding import Grounds, check_grounding, literal_numbers
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "BFCL_CATEGORIES",
    "OWN",
    "bfcl_plan",
    "main",
    "measure_bfcl",
    "measure_nestful",
    "measure_own",
]

BFCL_CATEGORIES = AST_CATEGORIES
"""Every category whose answers are calls (irrelevance has none to check)."""
ROOT = Path(__file__).resolve().parent.parent


def _s(sid: str, tool: str, parameters: dict[str, Any], deps: list[str] | None = None) -> dict:
    return {"id": sid, "tool": tool, "parameters": parameters, "dependsOn": deps or []}


OWN: list[tuple[str, str, list[dict[str, Any]]]] = [
    (
        "cross-1",
        "Get the weather in Madrid and save a draft titled 'Madrid' whose content says what the "
        "condition is there",
        [
            _s("madrid", "get_weather", {"location": "Madrid"}),
            _s(
                "draft",
                "createDraft",
                {"title": "Madrid", "content": "Condition: {{madrid.condition}}"},
                ["madrid"],
            ),
        ],
    ),
    (
        "cross-2",
        "Query CPU usage and save a draft titled 'CPU report' with the current value in its content",
        [
            _s("cpu", "query_metric", {"name": "cpu_usage"}),
            _s("draft", "createDraft", {"title": "CPU report", "content": "{{cpu.current}}"}),
        ],
    ),
    (
        "cross-4",
        "Compare the weather in Tokyo and Paris and save a draft titled 'Warmer city' containing "
        "the name of the warmer one",
        [
            _s("tokyo", "get_weather", {"location": "Tokyo"}),
            _s("paris", "get_weather", {"location": "Paris"}),
            _s("cmp", "compare_data", {"data_a": "{{tokyo}}", "data_b": "{{paris}}"}),
            _s("draft", "createDraft", {"title": "Warmer city", "content": "{{cmp.warmer}}"}),
        ],
    ),
    (
        "cross-5",
        "Check whether disk io is above 100 and, independently, get the weather in Berlin",
        [
            _s("disk", "check_threshold", {"metric_name": "disk_io", "threshold": 100}),
            _s("berlin", "get_weather", {"location": "Berlin"}),
        ],
    ),
    (
        "metrics-1",
        "List compute metrics, query CPU usage, and check if it's above 80%",
        [
            _s("list", "list_metrics", {"category": "compute"}),
            _s("cpu", "query_metric", {"name": "cpu_usage"}, ["list"]),
            _s(
                "check",
                "check_threshold",
                {"metric_name": "cpu_usage", "threshold": 80, "operator": "gt"},
                ["cpu"],
            ),
        ],
    ),
    (
        "metrics-5",
        "Query the error rate, then check whether its current value is above 1 percent",
        [
            _s("rate", "query_metric", {"name": "error_rate"}),
            _s(
                "check",
                "check_threshold",
                {"metric_name": "error_rate", "threshold": 1, "value": "{{rate.current}}"},
            ),
        ],
    ),
    (
        "metrics-9",
        "List the application metrics, then check whether the first one of them is above 5",
        [
            _s("list", "list_metrics", {"category": "application"}),
            _s(
                "check",
                "check_threshold",
                {"metric_name": "{{list.metrics[0].name}}", "threshold": 5},
            ),
        ],
    ),
    (
        "weather-2",
        "Get the weather in Paris, Berlin and Rome and summarize which is warmest",
        [
            _s("paris", "get_weather", {"location": "Paris"}),
            _s("berlin", "get_weather", {"location": "Berlin"}),
            _s("rome", "get_weather", {"location": "Rome"}),
            _s("sum", "summarize", {"data": ["{{paris}}", "{{berlin}}", "{{rome}}"]}),
        ],
    ),
    (
        "h-13",
        "Get the weather in Seoul and save a draft titled 'Seoul' with the temperature in its "
        "content",
        [
            _s("seoul", "get_weather", {"location": "Seoul"}),
            _s(
                "draft",
                "createDraft",
                {"title": "Seoul", "content": "Temperature: {{seoul.temp}} °C"},
                ["seoul"],
            ),
        ],
    ),
    (
        "h-15",
        "Check whether CPU usage is above 90 and save a draft titled 'CPU check' saying whether "
        "it was exceeded",
        [
            _s("check", "check_threshold", {"metric_name": "cpu_usage", "threshold": 90}),
            _s(
                "draft",
                "createDraft",
                {"title": "CPU check", "content": "Exceeded: {{check.exceeded}}"},
                ["check"],
            ),
        ],
    ),
    (
        "blog-2",
        "Create author Bob (bob@test.com), write a blog post by him titled 'Tips' about testing, "
        "then comment 'Nice!' on it",
        [
            _s("bob", "createAuthor", {"name": "Bob", "email": "bob@test.com"}),
            _s(
                "post",
                "createBlog",
                {"authorId": "{{bob._id}}", "title": "Tips", "content": "about testing"},
            ),
            _s("comment", "createComment", {"blogId": "{{post._id}}", "text": "Nice!"}, ["post"]),
        ],
    ),
    (
        "blog-10",
        "Create author Ivan (ivan@test.com), write a post by him titled 'Hello' about greetings, "
        "and add the comment 'Great post' with the author's name as the comment author",
        [
            _s("ivan", "createAuthor", {"name": "Ivan", "email": "ivan@test.com"}),
            _s(
                "post",
                "createBlog",
                {"authorId": "{{ivan._id}}", "title": "Hello", "content": "greetings"},
            ),
            _s(
                "comment",
                "createComment",
                {"blogId": "{{post._id}}", "text": "Great post", "author": "Ivan"},
                ["post", "ivan"],
            ),
        ],
    ),
    (
        "blog-7",
        "Create author Grace (grace@test.com), then list the blog posts written by her",
        [
            _s("grace", "createAuthor", {"name": "Grace", "email": "grace@test.com"}),
            _s("list", "listBlogs", {"authorId": "{{grace._id}}"}),
        ],
    ),
]
"""Multi-step queries of ``scripts/queries*`` with an ideal plan, literals from the request."""


def _catalog() -> ToolCatalog:
    from toolplan.builtin_tools import blog, metrics, weather

    return ToolCatalog([*weather.TOOLS, *metrics.TOOLS, *blog.TOOLS])


def bfcl_plan(answer: list[dict[str, Any]], api_name: Any, choice: int = 0) -> Plan:
    """A BFCL possible answer as a plan: each call a step, each argument its ``choice``-th
    allowed value (its last when it has fewer), left out when that value is ``""`` (BFCL's
    "may be omitted")."""
    steps = []
    for i, call in enumerate(answer):
        ((name, arguments),) = call.items()
        parameters = {}
        for arg, allowed in arguments.items():
            if isinstance(allowed, list) and allowed:
                value = allowed[min(choice, len(allowed) - 1)]
                if value != "":
                    parameters[arg] = value
        steps.append({"id": f"call{i + 1}", "tool": api_name(name), "parameters": parameters})
    return parse_plan({"steps": steps})


def _choices(answer: list[dict[str, Any]]) -> int:
    """How many allowed values the answer's most open argument has."""
    counts = [
        len(allowed)
        for call in answer
        for arguments in call.values()
        for allowed in arguments.values()
        if isinstance(allowed, list)
    ]
    return max(counts, default=1)


def measure_bfcl(categories: tuple[str, ...] = BFCL_CATEGORIES) -> dict[str, Any]:
    """Refusals per category over every entry's ground truth (all of them are false). Each
    entry is checked once per allowed value (the first of every argument, then the second...),
    and is refused when any of its plans is."""
    from bench.bfcl.data import load_category
    from bench.bfcl.functions import Toolbox

    out: dict[str, Any] = {}
    for category in categories:
        refused: list[dict[str, Any]] = []
        numbers_not_in_query = 0
        entries = load_category(category)
        for entry in entries:
            toolbox = Toolbox.of(entry.functions)
            catalog = toolbox.catalog()
            answer = entry.answer or []
            plans = [
                bfcl_plan(answer, lambda name, t=toolbox: _api(t, name), choice)
                for choice in range(_choices(answer))
            ]
            for plan in plans:
                issues = check_grounding(plan, catalog, entry.query)
                if issues:
                    refused.append({"id": entry.id, "issues": [i.message for i in issues]})
                    break
            plan = plans[0]  # each argument's first allowed value
            grounds = Grounds(entry.query)
            if any(
                not grounds.has_number(n) for s in plan.steps for n in literal_numbers(s.parameters)
            ):
                numbers_not_in_query += 1
        out[category] = {
            "entries": len(entries),
            "refused": len(refused),
            "refusals": refused,
            "numbersNotInQuery": numbers_not_in_query,
        }
    return out


def _api(toolbox: Any, name: str) -> str:
    for function, api in zip(toolbox.functions, toolbox.api_names, strict=True):
        if function["name"] == name:
            return str(api)
    return name


def _own_plans() -> Iterator[tuple[str, str, Plan]]:
    from tests.support.plans import QUERY, blog_plan

    from bench.reuse import CORPUS

    for name, query, steps in OWN:
        yield name, query, parse_plan({"steps": steps})
    for family in CORPUS:
        for values in (family.first, family.second):
            yield f"reuse:{family.name}", family.query(values), parse_plan(family.plan(**values))
    yield "tests/support/plans.py:blog_plan", QUERY, parse_plan(blog_plan())
    for path in sorted((ROOT / "examples").glob("*.json")):
        yield f"examples/{path.name}", "", parse_plan(json.loads(path.read_text()))


def measure_own() -> dict[str, Any]:
    """Refusals over the project's own plans (all of them are false)."""
    catalog = _catalog()
    refused = []
    total = 0
    for name, query, plan in _own_plans():
        total += 1
        issues = check_grounding(plan, catalog, query)
        if issues:
            refused.append({"plan": name, "issues": [i.message for i in issues]})
    return {"plans": total, "refused": len(refused), "refusals": refused}


def measure_nestful(root: Path | None = None, seed: int = 0) -> dict[str, Any]:
    """Refusals per NESTFUL split over every sample's gold as a plan, with the tools the sample
    is offered (``seed``'s distractors) and its query as the request. The gold of every split
    passes each call's output on where it means to, so every refusal is a false one. Raises
    :class:`~bench.nestful.data.NestfulMissing` without the data copy."""
    from bench.nestful.data import SPLITS, load_split
    from bench.nestful.plans import gold_plan
    from bench.nestful.tools import Toolbox

    out: dict[str, Any] = {}
    for split in SPLITS:
        refused: list[dict[str, Any]] = []
        samples = load_split(split, seed=seed, root=root)
        for sample in samples:
            box = Toolbox.of(sample.tools)
            plan = parse_plan(gold_plan(sample.gold, box))
            issues = check_grounding(plan, box.catalog(), sample.query)
            if issues:
                refused.append({"id": sample.id, "issues": [i.message for i in issues]})
        out[split] = {"samples": len(samples), "refused": len(refused), "refusals": refused}
    return out


def main(argv: list[str] | None = None) -> None:
    """Print the false refusals per BFCL category, over the project's own plans and, when the data
    copy is here, over NESTFUL's gold per split."""
    parser = argparse.ArgumentParser(prog="python -m bench.grounding", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    from bench.nestful.data import NestfulMissing

    result = {"bfcl": measure_bfcl(), "own": measure_own()}
    try:
        result["nestful"] = measure_nestful()
    except NestfulMissing as missing:
        print(f"note: no NESTFUL gold checked: {missing}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print("| set | plans | refused | numbers not in the query |")
    print("|---|---|---|---|")
    for category, row in result["bfcl"].items():
        print(
            f"| BFCL {category} | {row['entries']} | {row['refused']} | "
            f"{row['numbersNotInQuery']} |"
        )
    own = result["own"]
    print(f"| own plans | {own['plans']} | {own['refused']} | - |")
    nestful = result.get("nestful", {})
    for split, row in nestful.items():
        print(f"| NESTFUL {split} gold | {row['samples']} | {row['refused']} | - |")
    bfcl = result["bfcl"].values()
    found = [*(r for c in bfcl for r in c["refusals"]), *own["refusals"]]
    for row in [*found, *(r for c in nestful.values() for r in c["refusals"])]:
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
