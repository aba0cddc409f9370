"""Prompts are versioned files under ``prompts/``, loaded at run time.

Each file starts with ``<!-- prompt: NAME · version: VERSION -->``; the version is stored with every
plan so a plan can be traced to the exact prompt that produced it. Placeholders are ``$name``.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from toolplan.config import PlannerSettings
from toolplan.planning.schema import SchemaKind
from toolplan.tools.catalog import ToolInfo
from toolplan.tools.returns import shown_shape

__all__ = [
    "Prompt",
    "load_prompt",
    "parameters_format",
    "prompts_dir",
    "render_catalog",
    "render_example",
    "render_observations",
    "render_system_prompt",
]

_HEADER = re.compile(
    r"^<!--\s*prompt:\s*(?P<name>[\w-]+)\s*·\s*version:\s*(?P<version>[\w.-]+)\s*-->\n"
)


def prompts_dir(settings: PlannerSettings | str | None = None) -> Path:
    """The settings' prompts directory (``TOOLPLAN_PROMPTS_DIR``), or the one given, else the
    prompts shipped as the ``toolplan.prompts`` package (the repository's top-level
    ``prompts/`` directory, in a wheel and in an editable install)."""
    override = settings.prompts_dir if isinstance(settings, PlannerSettings) else settings
    if override:
        return Path(override)
    # By name, not an import statement: the data package sits beside the code, not below it.
    return Path(str(files("toolplan.prompts"))).resolve()


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt template."""

    name: str
    version: str
    template: str

    def render(self, **values: str) -> str:
        """Substitute ``$placeholders``; every placeholder must be given."""
        return string.Template(self.template).substitute(values)


def load_prompt(name: str, *, settings: PlannerSettings | str | None = None) -> Prompt:
    """Load ``NAME.md`` from :func:`prompts_dir` (``settings``: planner settings, or a
    directory)."""
    path = prompts_dir(settings) / f"{name}.md"
    text = path.read_text(encoding="utf-8")
    header = _HEADER.match(text)
    if header is None:
        raise ValueError(f"{path} must start with '<!-- prompt: {name} · version: ... -->'")
    return Prompt(header["name"], header["version"], text[header.end() :].strip() + "\n")


def render_catalog(infos: list[ToolInfo]) -> str:
    """The tool catalog as the planner sees it: name, description, JSON schema, tags, the shape of
    the output (when declared), examples.

    Observed statistics are not part of it: they change with every execution, and the system
    prompt must stay byte-identical while the catalog does, so that prompt caches hit
    (:func:`render_observations` carries them, after the static part)."""
    blocks = []
    for info in infos:
        lines = [f"## {info.name}", info.description or "(no description)"]
        if info.tags:
            lines.append(f"Tags: {', '.join(info.tags)}")
        lines.append("Arguments (JSON schema): " + json.dumps(info.parameters, ensure_ascii=False))
        returns = shown_shape(info.returns)
        if returns:
            lines.append("Returns: " + returns)
        for example in info.examples:
            lines.append("Example: " + json.dumps(example, ensure_ascii=False))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


OBSERVED_MIN_CALLS = 5
"""Tools with fewer observed calls are not described: too few to say anything."""


def _latency_bucket(ms: float | None) -> str | None:
    if ms is None or ms < 1000:
        return None
    if ms < 10_000:
        return "slow (1-10 s per call)"
    return "very slow (over 10 s per call)"


def _failure_bucket(rate: float | None) -> str | None:
    if rate is None or rate < 0.1:
        return None
    if rate < 0.5:
        return "fails sometimes (10-50% of calls)"
    return "fails often (over half of the calls)"


def render_observations(infos: list[ToolInfo]) -> str:
    """What past executions showed about the tools, in coarse buckets (slow, fails sometimes or
    often), only for tools worth a warning; empty when there is nothing to say.

    Buckets change rarely, so the message that carries this (after the static system prompt)
    changes rarely too; exact figures would change after every execution."""
    lines = []
    for info in infos:
        stats = info.stats
        if stats is None or stats.calls < OBSERVED_MIN_CALLS:
            continue
        notes = [
            note
            for note in (
                _latency_bucket(stats.avg_duration_ms),
                _failure_bucket(stats.failure_rate),
            )
            if note
        ]
        if notes:
            lines.append(f"- {info.name}: {', '.join(notes)}")
    if not lines:
        return ""
    return (
        "Observed in past executions (prefer an alternative tool when there is one; a tool the "
        "request needs is still needed):\n" + "\n".join(lines)
    )


_EXAMPLE: dict[str, Any] = {
    "reasoning": "The two lookups are independent; the message uses both of their outputs.",
    "steps": [
        {"id": "u7", "tool": "lookup_user", "parameters": {"user_id": 7}},
        {"id": "u9", "tool": "lookup_user", "parameters": {"user_id": 9}},
        {
            "id": "msg",
            "tool": "send_message",
            "parameters": {
                "to": "{{u7.email}}",
                "about": "{{u9}}",
                "text": "{{u9.name}} lives in {{u9.city}}",
            },
        },
    ],
    "outputSteps": ["msg"],
}

_SINGLE_STEP_EXAMPLE: dict[str, Any] = {
    "reasoning": "One send_message call with the given address and text.",
    "steps": [
        {
            "id": "msg",
            "tool": "send_message",
            "parameters": {"to": "bob@example.com", "text": "lunch at noon"},
        }
    ],
    "outputSteps": ["msg"],
}
"""The second example: a request that gives every value needs no lookup step. Small models
otherwise copy the first example's shape and add lookups or creations nobody asked for."""

_MAP_AND_BRANCH_EXAMPLE: dict[str, Any] = {
    "reasoning": "The orders are not known before list_orders runs, so one forEach step refunds "
    "each of them; the apology runs only if the user is a VIP.",
    "steps": [
        {"id": "orders", "tool": "list_orders", "parameters": {"user_id": 7, "status": "open"}},
        {
            "id": "refunds",
            "tool": "refund_order",
            "forEach": "{{orders.items}}",
            "parameters": {"order_id": "{{$item.id}}", "note": "refund {{$index}}"},
        },
        {"id": "user", "tool": "lookup_user", "parameters": {"user_id": 7}},
        {
            "id": "apology",
            "tool": "send_message",
            "when": "{{user.vip}}",
            "parameters": {"to": "{{user.email}}", "text": "Your open orders were refunded"},
        },
    ],
    "outputSteps": ["refunds", "apology"],
}
"""The third example: a map over a list no one has seen yet, and a branch. Without it, small
models write one step per item with invented ids."""


def parameters_format(kind: SchemaKind) -> str:
    """How the plan format section describes ``parameters`` for the schema in use."""
    if kind == "typed":
        return 'the tool\'s arguments as a JSON object, e.g. `{"name": "Alice"}`'
    return (
        "the tool's arguments as a JSON object **encoded as a string**, e.g. "
        '`"{\\"name\\": \\"Alice\\"}"`'
    )


def render_example(kind: SchemaKind, example: dict[str, Any] | None = None) -> str:
    """An example plan of the prompt (by default the first), with ``parameters`` written as the
    schema in use wants it."""
    example = example or _EXAMPLE
    steps = []
    for step in example["steps"]:
        parameters: Any = step["parameters"]
        if kind == "generic":
            parameters = json.dumps(parameters)
        full = {
            **step,
            "parameters": parameters,
            "dependsOn": [],
            "confidence": 0.9,
            "forEach": step.get("forEach"),
            "when": step.get("when"),
        }
        steps.append("  " + json.dumps(full, ensure_ascii=False))
    return (
        f'{{"reasoning": {json.dumps(example["reasoning"])},\n "steps": [\n'
        + ",\n".join(steps)
        + f'],\n "outputSteps": {json.dumps(example["outputSteps"])}}}'
    )


def render_system_prompt(prompt: Prompt, infos: list[ToolInfo], kind: SchemaKind) -> str:
    """The planner's system prompt: depends only on the catalog and the schema kind."""
    return prompt.render(
        catalog=render_catalog(infos),
        parameters_format=parameters_format(kind),
        example=render_example(kind),
        single_step_example=render_example(kind, _SINGLE_STEP_EXAMPLE),
        map_and_branch_example=render_example(kind, _MAP_AND_BRANCH_EXAMPLE),
    )
