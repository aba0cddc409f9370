"""NESTFUL's own scores, re-derived: what its scorer prints for a set of answers.

NESTFUL's ``src/scorer.py`` (github.com/piotrhelm/NESTFUL, commit ``3ef829d``; it needs
scikit-learn and the model's name to pick a parser) is not part of this project. This module
computes the same four figures from the same inputs, with the Qwen-family parser
(:func:`bench.nestful.replies.read_strict`) and without the win rate (that executes the calls):

- references are *grounded*: in a value that starts with ``$var`` and holds a ``.``, the label
  is replaced by the labelled call's function name (``ground_seq_nested_repsonse``), in the
  gold and in the answer; ``var_result`` is dropped;
- **F1 intent**: each sample's set of called names; macro F1 over the names the gold of these
  samples uses (scikit-learn's ``MultiLabelBinarizer`` fitted on the gold), so a name no gold
  uses is ignored;
- **F1 slot**: per sample and per function name (gold or answer), the ``arg = value`` strings
  of its *last* call (Python's ``str()`` of the value; an answer's string that starts with ``$``
  and does not end with one gets a ``$``); macro F1 over the strings the gold uses;
- **partial** (``accuracy_combined``): each call written ``name(arg = value, ...)`` with the
  arguments sorted; compared position by position when the two lengths are equal, else after
  ``post_process_api_with_args``'s alignment; the mean over samples; **full**: samples at 1.

``tests/unit/test_bench_nestful.py`` checks these against numbers NESTFUL's scorer printed for a
fixture of answers. The bench's own metrics (:mod:`bench.nestful.metrics`) differ on purpose; the
differences are listed there.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench.nestful.sequence import RESULT_CALL

__all__ = ["nestful_scores"]

Raw = Sequence[Mapping[str, Any]]


def _ground(calls: Raw) -> list[dict[str, Any]]:
    """``ground_seq_nested_repsonse``: labels in references replaced by function names."""

    def labelled(label: str, value: str) -> bool:
        head = value.split(".", 1)[0].replace("$", "")
        return value.startswith("$var") and "." in value and head == label

    labels: dict[str, Any] = {}
    for call in calls:
        if call["name"] not in ("varResult", RESULT_CALL) and "label" in call:
            labels[call["label"].replace("$", "")] = call["name"]
    grounded = []
    for call in calls:
        if call["name"] == RESULT_CALL:
            continue
        arguments = call.get("arguments", call.get("parameters", {}))
        out: dict[str, Any] = {}
        for name, value in arguments.items():
            for label, function in labels.items():
                if isinstance(value, str) and labelled(label, value):
                    value = value.replace(label, function)
                elif isinstance(value, list):
                    value = [
                        v.replace(label, function)
                        if isinstance(v, str) and labelled(label, v)
                        else v
                        for v in value
                    ]
            out[name] = value
        grounded.append({"name": call["name"], "arguments": out})
    # NESTFUL writes every call out as JSON and reads it back before scoring
    return [json.loads(json.dumps(call)) for call in grounded]


def _slot(argument: str, value: Any, *, answer: bool) -> str:
    if answer and isinstance(value, str) and value.startswith("$") and not value.endswith("$"):
        value = value + "$"
    return f"{argument} = {value}"


def _macro_f1(gold_rows: list[list[str]], answer_rows: list[list[str]]) -> float:
    """scikit-learn's macro F1 over a ``MultiLabelBinarizer`` fitted on ``gold_rows``."""
    classes = sorted({label for row in gold_rows for label in row})
    if not classes:
        return 0.0
    total = 0.0
    for label in classes:
        tp = fp = fn = 0
        for gold, answer in zip(gold_rows, answer_rows, strict=True):
            inside, said = label in gold, label in answer
            tp += inside and said
            fp += said and not inside
            fn += inside and not said
        total += 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return total / len(classes)


def _align(gold: list[str], answer: list[str]) -> tuple[list[str], list[str]]:
    """``post_process_api_with_args``: equal lengths as they are, else aligned by name."""
    if len(gold) == len(answer):
        return gold, answer
    names_gold = [call.split("(", 1)[0] for call in gold]
    names_answer = [call.split("(", 1)[0] for call in answer]
    aligned_gold: list[str] = []
    aligned_answer: list[str] = []
    i = j = 0
    while i < len(names_gold) or j < len(names_answer):
        if i < len(names_gold) and j < len(names_answer) and names_gold[i] == names_answer[j]:
            aligned_gold.append(names_gold[i])
            aligned_answer.append(names_answer[j])
            i, j = i + 1, j + 1
        elif i < len(names_gold):
            aligned_gold.append(names_gold[i])
            aligned_answer.append("")
            i += 1
        else:
            aligned_gold.append("")
            aligned_answer.append(names_answer[j])
            j += 1
    gold_left, answer_left = list(gold), list(answer)
    return (
        ["" if name == "" else gold_left.pop(0) for name in aligned_gold],
        ["" if name == "" else answer_left.pop(0) for name in aligned_answer],
    )


def _written(call: Mapping[str, Any], *, answer: bool) -> str:
    arguments = sorted(_slot(k, v, answer=answer) for k, v in call["arguments"].items())
    return f"{call['name']}({', '.join(arguments)})"


def _by_function(calls: list[dict[str, Any]], *, answer: bool) -> dict[Any, list[str]]:
    slots: dict[Any, list[str]] = {}
    for call in calls:
        slots[call["name"]] = [_slot(k, v, answer=answer) for k, v in call["arguments"].items()]
    return slots


def nestful_scores(items: Sequence[tuple[Raw, Raw | None]]) -> dict[str, Any]:
    """NESTFUL's F1 intent, F1 slot, partial and full accuracy, and parse errors, for
    ``(gold, answer)`` pairs: the gold as the data writes it, the answer as
    :func:`~bench.nestful.replies.read_strict` read it (``None``: a parse error)."""
    gold_names: list[list[str]] = []
    answer_names: list[list[str]] = []
    gold_slots: list[list[str]] = []
    answer_slots: list[list[str]] = []
    partial: list[float] = []
    parse_errors = 0
    for gold_raw, answer_raw in items:
        gold = _ground(gold_raw)
        answer: list[dict[str, Any]] = []
        if answer_raw is None:
            parse_errors += 1
        else:
            try:
                answer = _ground(answer_raw)
            except (KeyError, TypeError, AttributeError):  # as NESTFUL's parser fails
                parse_errors += 1
        gold_names.append([str(c["name"]) for c in gold])
        answer_names.append([str(c["name"]) for c in answer])
        gold_by, answer_by = _by_function(gold, answer=False), _by_function(answer, answer=True)
        for name in {*gold_by, *answer_by}:
            gold_slots.append(gold_by.get(name, []))
            answer_slots.append(answer_by.get(name, []))
        written_gold, written_answer = _align(
            [_written(c, answer=False) for c in gold], [_written(c, answer=True) for c in answer]
        )
        same = sum(g == a for g, a in zip(written_gold, written_answer, strict=True))
        partial.append(same / len(written_gold) if written_gold else 0.0)
    return {
        "samples": len(items),
        "f1Intent": round(_macro_f1(gold_names, answer_names), 3),
        "f1Slot": round(_macro_f1(gold_slots, answer_slots), 3),
        "partial": round(statistics.fmean(partial), 3) if partial else 0.0,
        "full": round(sum(p == 1 for p in partial) / len(partial), 3) if partial else 0.0,
        "parseErrors": parse_errors,
    }
