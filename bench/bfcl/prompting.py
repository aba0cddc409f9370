"""BFCL's prompting mode, the leaderboard's "(Prompt)" handlers, as a baseline: the model gets
BFCL's own system prompt (the functions as JSON, "return a Python list of calls") and answers in
text, which BFCL's own decoder reads (``default_decode_ast_prompting``).

Both come from the installed wheel (``bfcl_eval.model_handler.utils``). That module imports
``filelock`` and ``tenacity`` (installed beside the wheel by scripts/setup.sh) and the tree-sitter
parsers of Java and JavaScript answers, which Python answers never use: stand-in modules are put
in place for that import only, as :mod:`bench.bfcl.checker` does for the model config.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from functools import cache
from typing import Any

from bench.bfcl.checker import standing_in
from bench.bfcl.data import BfclMissing

__all__ = ["bfcl_prompting", "decode_answer", "system_prompt"]

_PARSERS = (
    "bfcl_eval.model_handler.parser.java_parser",
    "bfcl_eval.model_handler.parser.js_parser",
)


def _unused(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - Python answers only
    raise NotImplementedError("Java and JavaScript answers are not read here")


@cache
def bfcl_prompting() -> tuple[
    Callable[[str, list[dict[str, Any]]], str], Callable[[str], Any], str
]:
    """``(formulate_system_prompt, default_decode_ast_prompting, DEFAULT_SYSTEM_PROMPT_FORMAT)``
    from the installed wheel."""
    stand_ins = {}
    for name in _PARSERS:
        module = types.ModuleType(name)
        function = (
            "parse_java_function_call" if "java" in name else "parse_javascript_function_call"
        )
        setattr(module, function, _unused)
        stand_ins[name] = module
    previous = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        with standing_in():
            from bfcl_eval.constants.default_prompts import DEFAULT_SYSTEM_PROMPT_FORMAT
            from bfcl_eval.model_handler.utils import (
                default_decode_ast_prompting,
                formulate_system_prompt,
            )
    except ModuleNotFoundError as error:
        if error.name and error.name.startswith("bfcl_eval"):
            raise BfclMissing() from None
        raise ModuleNotFoundError(
            f"BFCL's prompting mode needs {error.name!r} (scripts/setup.sh installs it)"
        ) from None
    finally:
        for name, module in previous.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return formulate_system_prompt, default_decode_ast_prompting, DEFAULT_SYSTEM_PROMPT_FORMAT


def system_prompt(functions: list[dict[str, Any]]) -> str:
    """BFCL's default system prompt for these function docs."""
    formulate, _, default_format = bfcl_prompting()
    return formulate(default_format, functions)


def decode_answer(text: str) -> list[dict[str, Any]] | None:
    """The calls in a prompting-mode answer, as BFCL decodes them (``[{name: {arg: value}}]``);
    ``None`` when BFCL's decoder cannot read it (an answer in words: no call)."""
    _, decode, _ = bfcl_prompting()
    try:
        decoded = decode(text)
    except Exception:  # BFCL counts an undecodable answer as no call
        return None
    if not isinstance(decoded, list) or not all(isinstance(call, dict) for call in decoded):
        return None
    return decoded
