"""Prompts are versioned files under ``prompts/``, loaded at run time.

Each file starts with ``<!-- prompt: NAME · version: VERSION -->``; the version is stored with every
plan so a plan can be traced to the exact prompt that produced it. Placeholders are ``$name``.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from pathlib import Path

from toolplan.config import PlannerSettings, Settings
from toolplan.tools.catalog import ToolInfo

__all__ = ["Prompt", "load_prompt", "prompts_dir", "render_catalog"]

_HEADER = re.compile(
    r"^<!--\s*prompt:\s*(?P<name>[\w-]+)\s*·\s*version:\s*(?P<version>[\w.-]+)\s*-->\n"
)


def prompts_dir(settings: PlannerSettings | None = None) -> Path:
    """``TOOLPLAN_PROMPTS_DIR`` (from ``settings``, default the environment), else the prompts
    shipped as the ``toolplan.prompts`` package (the repository's top-level ``prompts/``
    directory, in a wheel and in an editable install)."""
    override = (settings or Settings.from_env().planner).prompts_dir
    if override:
        return Path(override)
    import toolplan.prompts

    return Path(toolplan.prompts.__file__).resolve().parent


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt template."""

    name: str
    version: str
    template: str

    def render(self, **values: str) -> str:
        """Substitute ``$placeholders``; every placeholder must be given."""
        return string.Template(self.template).substitute(values)


def load_prompt(name: str, *, settings: PlannerSettings | None = None) -> Prompt:
    """Load ``NAME.md`` from :func:`prompts_dir`."""
    path = prompts_dir(settings) / f"{name}.md"
    text = path.read_text(encoding="utf-8")
    header = _HEADER.match(text)
    if header is None:
        raise ValueError(f"{path} must start with '<!-- prompt: {name} · version: ... -->'")
    return Prompt(header["name"], header["version"], text[header.end() :].strip() + "\n")


def render_catalog(infos: list[ToolInfo]) -> str:
    """The tool catalog as the planner sees it: name, description, JSON schema, tags, examples,
    and observed statistics when there are any."""
    blocks = []
    for info in infos:
        lines = [f"## {info.name}", info.description or "(no description)"]
        if info.tags:
            lines.append(f"Tags: {', '.join(info.tags)}")
        lines.append("Arguments (JSON schema): " + json.dumps(info.parameters, ensure_ascii=False))
        for example in info.examples:
            lines.append("Example: " + json.dumps(example, ensure_ascii=False))
        if info.stats and info.stats.calls:
            avg = f"{info.stats.avg_duration_ms:.0f} ms" if info.stats.avg_duration_ms else "n/a"
            lines.append(
                f"Observed: {info.stats.calls} calls, average {avg}, "
                f"failure rate {info.stats.failure_rate or 0:.0%}"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
