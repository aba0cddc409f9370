"""NESTFUL sequences and toolplan plans, each into the other.

- :func:`gold_plan`: a gold sequence as a toolplan plan document: one step per call, its label
  as the step id, ``"$var1.distance$"`` as ``"{{var1.distance}}"`` (``$var1.Exchange Rate$`` as
  ``{{var1["Exchange Rate"]}}``; a reference inside a longer
  string becomes a template inside it), ``var_result``'s references as ``outputSteps``;
- :func:`gold_issues`: what toolplan's validator (:func:`toolplan.validation.dag.analyze`) says
  about that plan against the sample's catalog. Results are reported twice: on every sample,
  and on the samples whose gold it accepts (some gold contradicts its own specs);
- :func:`plan_calls`: a plan toolplan made, back into a NESTFUL sequence (step ids as labels,
  ``{{step.path}}`` as ``$step.path$``, NESTFUL's names), which is how it is scored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bench.nestful.sequence import RESULT_CALL, Call, read_calls, references_in
from bench.nestful.tools import Toolbox
from toolplan.errors import PlanInvalid
from toolplan.plan_format.plan import parse_plan
from toolplan.plan_format.templates import Template, map_strings, reference_text, template_spans
from toolplan.validation.dag import analyze

__all__ = ["gold_issues", "gold_plan", "plan_calls"]


_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
"""One step of a NESTFUL path: ``.key`` (a key may hold spaces: ``.Exchange Rate``) or ``[0]``."""


def _step_ids(calls: list[Call]) -> dict[str, str]:
    """Each label -> its step id: the label itself, or ``call<n>`` for an unlabelled call."""
    ids: dict[str, str] = {}
    for number, call in enumerate(calls, 1):
        ids[call.label or f"call{number}"] = call.label or f"call{number}"
    return ids


def _templates(value: Any, ids: Mapping[str, str]) -> Any:
    """``value`` with each reference to a known label written as a toolplan template."""

    def change(text: str) -> str:
        out, position = [], 0
        for ref in references_in(text, ids):
            path = [int(i) if i else key for key, i in _SEGMENT.findall(ref.path)]
            out += [text[position : ref.start], "{{" + reference_text(ids[ref.label], path) + "}}"]
            position = ref.end
        return "".join(out) + text[position:]

    return map_strings(value, change)


def gold_plan(gold: list[dict[str, Any]] | tuple[dict[str, Any], ...], box: Toolbox) -> dict:
    """The gold sequence as a toolplan plan document (offered tool names)."""
    calls = read_calls(gold)
    ids = _step_ids(calls)
    steps = [
        {
            "id": call.label or f"call{number}",
            "tool": box.api_name(call.name),
            "parameters": _templates(dict(call.arguments), ids),
        }
        for number, call in enumerate(calls, 1)
    ]
    outputs: list[str] = []
    for item in gold:
        if isinstance(item, Mapping) and item.get("name") == RESULT_CALL:
            for value in (item.get("arguments") or {}).values():
                texts = [value] if isinstance(value, str) else []
                outputs += [ref.label for text in texts for ref in references_in(text, ids)]
    plan: dict[str, Any] = {"steps": steps}
    if outputs:
        plan["outputSteps"] = list(dict.fromkeys(outputs))
    return plan


def gold_issues(gold: list[dict[str, Any]] | tuple[dict[str, Any], ...], box: Toolbox) -> list[str]:
    """What toolplan's validator refuses in the gold plan (``[]``: it passes)."""
    try:
        analyze(parse_plan(gold_plan(gold, box)), box.catalog())
    except PlanInvalid as error:
        return [issue.message for issue in error.issues]
    return []


def plan_calls(plan: Mapping[str, Any], box: Toolbox) -> list[Call]:
    """The steps of a toolplan plan as a NESTFUL sequence, in the plan's order. A ``forEach``
    or ``when`` has no NESTFUL counterpart: the call is kept, its loop templates as written."""
    steps = [s for s in plan.get("steps") or [] if isinstance(s, Mapping)]
    ids = {str(s.get("id")) for s in steps}

    def change(text: str) -> str:
        out, position = [], 0
        for start, end in template_spans(text):
            template = Template.parse(text[start:end])
            if template is None or template.is_loop or template.step not in ids:
                continue
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in template.path)
            out += [text[position:start], f"${template.step}{path}$"]
            position = end
        return "".join(out) + text[position:]

    return [
        Call(
            box.nestful_name(str(step.get("tool"))),
            map_strings(dict(step.get("parameters") or {}), change),
            str(step.get("id")),
        )
        for step in steps
    ]
