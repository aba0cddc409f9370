"""A model's text reply read as a NESTFUL sequence, strictly (as NESTFUL reads it) and leniently.

**Strict** is the reading of NESTFUL's own output parser for the Qwen-family model its prompts
cover (``parse_Hammer2_0_7b`` in ``src/output_parsers.py`` of github.com/piotrhelm/NESTFUL,
commit ``3ef829d``; Hammer2.0 is a Qwen2.5 fine-tune): every ````` ``` ````` is removed, the
rest must be a non-empty JSON list of calls, each an object with a ``name`` (and a string
``label``, if any). Anything else is a parse error, which NESTFUL scores as no call at all. A
fenced reply ("```json\\n[...]\\n```") keeps its ``json`` tag after the fences go, so it is a
parse error too: that is what the official parser does, and the strict reading keeps it.

**Lenient** takes what a harness that reads text itself would take: the first fenced block (any
tag), ``<tool_call>`` blocks (the Hermes format of Qwen's chat template), else the whole text;
in it, the first JSON list or object; ``{"tool_calls": [...]}`` and a single call object are
accepted, ``parameters`` for ``arguments`` too. Only the shape is lenient: names and values
are taken as written and scored as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from bench.harness import json_values

__all__ = ["read_lenient", "read_strict"]

_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.S)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)


def read_strict(text: str) -> list[dict[str, Any]] | None:
    """The calls as NESTFUL's parser reads them; ``None`` for its parse error."""
    try:
        value = json.loads(text.strip().replace("```", "").strip())
    except ValueError:
        return None
    if not isinstance(value, list) or not value:
        return None
    for item in value:
        if not isinstance(item, Mapping) or "name" not in item:
            return None
        if "label" in item and not isinstance(item["label"], str):
            return None
    return [dict(item) for item in value]


def _calls(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, Mapping) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return []
    calls = []
    for item in value:
        if isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
            item = {**item["function"], **({"label": item["label"]} if "label" in item else {})}
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            continue
        call = dict(item)
        if "arguments" not in call and "parameters" in call:
            call["arguments"] = call.pop("parameters")
        if isinstance(call.get("arguments"), str):
            try:
                call["arguments"] = json.loads(call["arguments"])
            except ValueError:
                call["arguments"] = {}
        calls.append(call)
    return calls


def read_lenient(text: str) -> list[dict[str, Any]] | None:
    """The calls a lenient reader finds in ``text``; ``None`` when there are none."""
    blocks = [m.group(1) for m in _TOOL_CALL.finditer(text) if m.group(1).strip()]
    if blocks:  # one call per block
        found = [call for block in blocks for v in json_values(block) for call in _calls(v)]
        return found or None
    fenced = [m.group(1) for m in _FENCE.finditer(text) if m.group(1).strip()]
    for piece in [*fenced[:1], text]:
        for value in json_values(piece):
            found = _calls(value)
            if found:
                return found
    return None
