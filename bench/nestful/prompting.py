"""NESTFUL's own direct prompt for a Qwen-family model, as a baseline.

NESTFUL's prompts (``src/PROMPTS.json`` of github.com/piotrhelm/NESTFUL, commit ``3ef829d``,
Apache-2.0) are raw completion prompts, one per model. The one for a Qwen-family model is
``Hammer2.0-7b``'s (a Qwen2.5 fine-tune): ChatML with the system message "You are a helpful
assistant." and one user message that holds the task, the tools as JSON, the output format, the
in-context examples and the query. Sent to a chat endpoint serving Qwen's own template as these
two messages (:func:`messages`), the model reads exactly that prompt.

- ``direct_prompt.txt`` is that user message, with ``{FUNCTION_STR}``, ``{ICL_EXAMPLES}`` and
  ``{QUERY}`` where NESTFUL's ``instruct_data_prep.py`` puts the tools (``json.dumps`` of the
  list), the examples and the query (by ``str.replace``: the template's own braces stay);
- ``icl_examples.json`` holds the inputs and gold outputs of the first 3 of NESTFUL's
  ``src/icl_examples.json`` (``icl_count=3``, its default), written as ``get_icl_str`` writes
  them: ``\\n#Example-<n>\\nInput: <input>\\nOutput: <json.dumps(output)>\\n``.

NESTFUL generates with temperature 0 and at most 1000 new tokens (:data:`MAX_TOKENS`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["MAX_TOKENS", "SYSTEM", "examples_text", "messages", "user_prompt"]

_HERE = Path(__file__).parent
SYSTEM = "You are a helpful assistant."
"""The system message of NESTFUL's Hammer2.0 (Qwen) prompt."""
MAX_TOKENS = 1000
"""NESTFUL's ``--max_tokens`` default."""


@cache
def _template() -> str:
    return (_HERE / "direct_prompt.txt").read_text()


@cache
def examples_text() -> str:
    """The in-context examples, as NESTFUL writes them into the prompt."""
    examples = json.loads((_HERE / "icl_examples.json").read_text())
    return "".join(
        f"\n#Example-{n}\nInput: {ex['input']}\nOutput: {json.dumps(ex['output'])}\n"
        for n, ex in enumerate(examples, 1)
    )


def user_prompt(tools: list[dict[str, Any]], query: str) -> str:
    """The user message for ``query`` with ``tools`` (NESTFUL's tool form)."""
    return (
        _template()
        .replace("{FUNCTION_STR}", json.dumps(tools))
        .replace("{ICL_EXAMPLES}", examples_text())
        .replace("{QUERY}", query)
    )


def messages(tools: list[dict[str, Any]], query: str) -> list[dict[str, str]]:
    """The chat messages that make NESTFUL's raw prompt under Qwen's chat template."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_prompt(tools, query)},
    ]
