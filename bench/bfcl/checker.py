"""BFCL's official AST checker (``bfcl_eval.eval_checker.ast_eval.ast_checker``), imported alone.

The checker module needs only the standard library and ``bfcl_eval.constants`` (enums and type
tables), except for one import: ``bfcl_eval.constants.model_config.MODEL_CONFIG_MAPPING``, which
pulls in every model handler of the leaderboard (anthropic, cohere, google-genai, boto3,
sentence-transformers, ...). The checker reads one field of it, ``underscore_to_dot``, and only
for a dotted function name: true means "this model's answers use ``_`` for ``.``, compare
accordingly". Our answers carry BFCL's own dotted names (mapped back from the API names), so the
right value is ``False``; a stand-in module that says so is put in place for the import only, and
removed afterwards, so nothing else in the process sees it.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from bench.bfcl.data import BfclMissing, Entry

__all__ = ["Verdict", "check", "reference_answer", "standing_in"]

_MODEL_CONFIG = "bfcl_eval.constants.model_config"
MODEL_NAME = "toolplan-bench"
"""The model name the checker is given; the stand-in config answers for any name."""


@dataclass(frozen=True)
class _Config:
    underscore_to_dot: bool = False


class _AnyModel(dict[str, _Config]):
    def __missing__(self, key: str) -> _Config:
        return _Config()


@contextlib.contextmanager
def standing_in() -> Iterator[None]:
    """The stand-in model config in place while the wheel's modules are imported."""
    stand_in = types.ModuleType(_MODEL_CONFIG)
    stand_in.MODEL_CONFIG_MAPPING = _AnyModel()  # type: ignore[attr-defined]
    previous = sys.modules.get(_MODEL_CONFIG)
    sys.modules[_MODEL_CONFIG] = stand_in
    try:
        yield
    finally:
        if previous is None:
            sys.modules.pop(_MODEL_CONFIG, None)
        else:
            sys.modules[_MODEL_CONFIG] = previous


@cache
def _checker() -> tuple[Any, Any]:
    """``(ast_checker, Language)`` from the installed wheel."""
    try:
        with standing_in():
            from bfcl_eval.constants.enums import Language
            from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    except ModuleNotFoundError as error:
        if error.name and error.name.startswith("bfcl_eval"):
            raise BfclMissing() from None
        raise
    return ast_checker, Language


@dataclass(frozen=True)
class Verdict:
    """Whether an answer is right, and BFCL's reason when it is not."""

    valid: bool
    error_type: str | None = None
    """BFCL's error type, e.g. ``simple_function_checker:missing_required``."""
    errors: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON form for the per-entry rows."""
        return {"valid": self.valid, "errorType": self.error_type, "errors": list(self.errors)}


def _well_formed(calls: Any) -> bool:
    """BFCL's ``is_function_calling_format_output``: ``[{name: {arg: value}}, ...]``."""
    return isinstance(calls, list) and all(
        isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict)
        for c in calls
    )


def check(entry: Entry, calls: list[dict[str, Any]] | None) -> Verdict:
    """Score ``calls`` (``[{bfcl_name: {arg: value}}]``; ``None``: nothing could be read) the
    way BFCL's evaluation does: irrelevance entries are right with no call; the others go
    through the official AST checker against the entry's possible answers."""
    if entry.kind == "irrelevance":
        if calls:
            return Verdict(
                False,
                "irrelevance_error:decoder_success",
                ("a function was called where none fits",),
            )
        return Verdict(True)
    if calls is None:
        return Verdict(False, "ast_decoder:decoder_failed", ("no function call could be read",))
    if not _well_formed(calls):
        return Verdict(False, "ast_decoder:decoder_wrong_output_format", (repr(calls)[:200],))
    ast_checker, language = _checker()
    result = ast_checker(
        entry.functions, calls, entry.answer, language.PYTHON, entry.category, MODEL_NAME
    )
    if result["valid"]:
        return Verdict(True)
    errors = result.get("error") or []
    return Verdict(
        False,
        result.get("error_type"),
        tuple(str(e) for e in (errors if isinstance(errors, list) else [errors])),
    )


def _first(options: Any) -> Any:
    """The first allowed value that is given ("" marks "may be left out"); a dict whose values
    are all lists holds the options of each of its keys, at any depth."""
    value = next(o for o in options if o != "")
    if _nested(value):
        return _arguments(value)
    if isinstance(value, list):
        return [_arguments(item) if _nested(item) else item for item in value]
    return value


def _nested(item: Any) -> bool:
    return isinstance(item, dict) and all(isinstance(v, list) for v in item.values())


def _arguments(options: dict[str, list[Any]]) -> dict[str, Any]:
    return {k: _first(v) for k, v in options.items() if any(o != "" for o in v)}


def reference_answer(entry: Entry) -> list[dict[str, Any]]:
    """A right answer built from the possible answers: the first allowed value of every
    argument, optional ones left out; ``[]`` for irrelevance entries. (A handful of BFCL's own
    entries cannot be answered this way: a required argument with no allowed value.)"""
    return [{name: _arguments(args)} for call in entry.answer or [] for name, args in call.items()]
