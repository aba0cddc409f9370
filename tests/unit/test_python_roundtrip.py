"""``toolplan show``'s Python, read back, is the same plan: steps, tools, parameters and edges
(data edges and the order edges of program order), for every valid plan among the suite's and the
docs' fixtures. Where Python cannot say something, the printed form says so on its first line,
and only that is lost."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support import plans as support_plans
from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.plan_format.python_plan import parse_python_plan
from toolplan.plan_format.python_print import _python_names, render_python_plan, unsayable
from toolplan.plan_format.templates import references
from toolplan.tools import load_tool_modules
from toolplan.validation import analyze

REPO = Path(__file__).resolve().parents[2]
CATALOG = load_tool_modules(
    [
        "blog",
        "metrics",
        "weather",
        "tests.support.tools",
        "tests.support.reader_tools",
    ]
)


def _fixtures() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted((REPO / "examples").glob("*.json")):
        found.append((path.name, json.loads(path.read_text())))
    for name in ("blog_plan", "orphan_blog_plan"):
        found.append((name, getattr(support_plans, name)()))
    for page in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")]):
        for index, block in enumerate(re.findall(r"```json\n(.*?)```", page.read_text(), re.S)):
            try:
                data = json.loads(block)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("steps"), list):
                found.append((f"{page.name}#{index}", data))
    for module in sorted((REPO / "tests").rglob("*.py")):
        found += [(f"{module.name}:{n}", d) for n, d in _module_plans(module)]
    assert len(found) > 30
    return found


def _module_plans(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The plans a test module holds as literal constants (``PLAN = {"steps": [...]}``)."""
    import ast

    plans = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            try:
                data = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("steps"), list):
                plans.append((getattr(target, "id", "?"), data))
    return plans


def _valid(data: dict[str, Any]) -> Plan | None:
    try:
        plan = parse_plan(data)
        analyze(plan, CATALOG)
    except PlanInvalid:
        return None
    return plan


FIXTURES = [(name, data) for name, data in _fixtures() if _valid(data) is not None]


def _renamed(value: Any, names: dict[str, str]) -> Any:
    text = json.dumps(value, sort_keys=True)
    for old, new in names.items():
        text = re.sub(r"\{\{" + re.escape(old) + r"(?=[.\[}])", "{{" + new, text)
    return json.loads(text)


def _shape(plan: Plan, names: dict[str, str] | None = None) -> dict[str, Any]:
    names = names or {}
    analysis = analyze(plan, CATALOG)
    steps = {}
    for step in plan.steps:
        data = step.model_dump(by_alias=True, exclude_none=True)
        steps[names.get(step.id, step.id)] = {
            key: _renamed(data.get(key), names) for key in ("tool", "parameters", "forEach", "when")
        }
    data_edges = {  # the edges Python says: references in parameters, forEach and when
        names.get(step.id, step.id): sorted(
            names.get(d, d)
            for d in references(
                [step.parameters, step.for_each, step.when if isinstance(step.when, str) else None]
            )
            | (references(step.when.template) if hasattr(step.when, "template") else set())
            if d in analysis.dependencies
        )
        for step in plan.steps
    }
    ordered = {
        names.get(s, s): sorted(names.get(e, e) for e in after)
        for s, after in analysis.runs_after().items()
    }
    return {"steps": steps, "data": data_edges, "order": ordered}


@pytest.mark.parametrize(("name", "data"), FIXTURES, ids=[name for name, _ in FIXTURES])
def test_the_printed_python_reads_back_as_the_same_plan(name: str, data: dict[str, Any]) -> None:
    plan = parse_plan(data)
    text = render_python_plan(plan)
    back = parse_plan(parse_python_plan(text, tools=CATALOG.python_tools))
    lost = unsayable(plan)
    if lost:
        assert text.startswith("# Python cannot say: " + "; ".join(lost)), text
    names = _python_names(plan)
    expected = _shape(plan, names)
    got = _shape(back)
    if not any(item.startswith("dependsOn") for item in lost):
        assert got == expected, text
    else:  # an order Python has no spelling for: everything but those edges comes back
        assert got["steps"] == expected["steps"], text
        assert all(
            set(expected["data"][s]) <= set(got["data"][s]) | set(got["order"].get(s, []))
            for s in got["data"]
        )


def test_a_plan_that_names_a_later_step_prints_in_program_order() -> None:
    plan = parse_plan(
        {
            "steps": [
                {
                    "id": "post",
                    "tool": "createBlog",
                    "parameters": {"authorId": "{{who._id}}", "title": "t", "content": "c"},
                },
                {"id": "who", "tool": "createAuthor", "parameters": {"name": "A", "email": "a@x"}},
            ]
        }
    )
    text = render_python_plan(plan)
    assert text.index("who = createAuthor") < text.index("post = createBlog")
    assert unsayable(plan) == []
    back = parse_plan(parse_python_plan(text, tools=CATALOG.python_tools))
    assert {s.id for s in back.steps} == {"post", "who"}


def test_a_tool_whose_name_is_not_python_prints_by_its_alias() -> None:
    plan = parse_plan(
        {"steps": [{"id": "s", "tool": "Real-Time_Search", "parameters": {"q": "laptops"}}]}
    )
    text = render_python_plan(plan)
    assert 's = Real_Time_Search(q="laptops")' in text
    back = parse_python_plan(text, tools=CATALOG.python_tools)
    assert back["steps"][0]["tool"] == "Real-Time_Search"
