"""Hostile plan documents: every class the fault report found, plus seeded mutations of valid plans.

:func:`hostile_cases` gives the fixed classes (each at least once); :func:`fuzz_cases` adds
random mutations from a seed, so a failure names a case that can be regenerated exactly
(``TOOLPLAN_FUZZ_SEED``). A case is the raw bytes of a plan file, or a parsed object as the API,
the Python API and the meta-tool receive it.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["VALID_PLANS", "Case", "fuzz_cases", "hostile_cases"]

VALID_PLANS: list[dict[str, Any]] = [
    {
        "reasoning": "author, then blog, then a comment",
        "steps": [
            {
                "id": "author",
                "tool": "createAuthor",
                "parameters": {"name": "Ana", "email": "a@x.io"},
            },
            {
                "id": "blog",
                "tool": "createBlog",
                "parameters": {
                    "authorId": "{{author._id}}",
                    "title": "Hi",
                    "content": "by {{author.name}}",
                },
            },
            {
                "id": "comment",
                "tool": "createComment",
                "parameters": {"blogId": "{{blog._id}}", "text": "Nice", "author": "Bo"},
                "timeout": 10,
                "maxAttempts": 2,
            },
        ],
        "outputSteps": ["blog", "comment"],
    },
    {
        "tools": [
            {"name": "get_weather", "parameters": {"location": "Paris"}},
            {
                "name": "summarize",
                "parameters": {"data": ["{{get_weather}}"]},
                "dependsOn": ["get_weather"],
            },
        ],
        "executionOrder": ["get_weather", "summarize"],
    },
    {
        "steps": [
            {
                "id": "a",
                "tool": "echo",
                "parameters": {"value": {"n": [1, 2.5, True, None, "é€😀"]}},
            },
            {
                "id": "b",
                "tool": "echo",
                "parameters": {"value": "{{a.n[4]}} and {{a}}"},
                "dependsOn": "a",
            },
        ]
    },
]


@dataclass(frozen=True)
class Case:
    """One input: ``data`` is file bytes or a parsed object; ``name`` says how it was made."""

    name: str
    data: bytes | Any
    expect: str | None = "reject"
    """``reject`` (exit 2, nothing stored), ``accept`` (stored), or ``None`` (either)."""

    @property
    def is_bytes(self) -> bool:
        return isinstance(self.data, bytes)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _escaped(value: Any) -> bytes:
    """JSON with ``\\uXXXX`` escapes: how lone surrogates travel in a valid UTF-8 file."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")


def _with(plan: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    copied = copy.deepcopy(plan)
    target: Any = copied
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copied


def _nested(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


def hostile_cases() -> Iterator[Case]:
    """Each class from the fault report, deterministic."""
    base = VALID_PLANS[0]
    text = json.dumps(base, ensure_ascii=False)
    # encodings and garbage
    yield Case("latin-1", text.replace("Ana", "Anaïs").encode("latin-1"))
    yield Case("utf-16 with BOM", text.encode("utf-16"))
    yield Case("utf-16-be without BOM", text.encode("utf-16-be"))
    yield Case("gzip", gzip.compress(text.encode()))
    yield Case("random bytes", random.Random(7).randbytes(2048))
    yield Case("invalid utf-8 byte", text.encode().replace(b"Ana", b"An\xff"))
    yield Case("overlong utf-8", text.encode().replace(b"Ana", b"An\xc0\xaf"))
    yield Case("truncated utf-8", text.encode().replace(b"Ana", b"An\xe2\x82"))
    yield Case("cesu surrogate bytes", text.encode().replace(b"Ana", b"An\xed\xa0\x80"))
    yield Case("utf-8 BOM", b"\xef\xbb\xbf" + text.encode(), "accept")
    yield Case("empty file", b"")
    yield Case("whitespace", b" \n\t ")
    for literal in (b"null", b"[]", b'"plan"', b"42", b"true", b"{}"):
        yield Case(f"top-level {literal.decode()}", literal)
    # lone surrogates, as JSON escapes in a UTF-8 file and as objects
    for where, path in (
        ("parameter value", ("steps", 0, "parameters", "name")),
        ("reasoning", ("reasoning",)),
        ("step id", ("steps", 0, "id")),
        ("tool name", ("steps", 0, "tool")),
    ):
        plan = _with(base, path, "x\ud800y")
        yield Case(f"surrogate in {where} (file)", _escaped(plan))
        yield Case(f"surrogate in {where} (object)", plan)
    keyed = copy.deepcopy(base)
    keyed["steps"][0]["parameters"]["na\udc80me"] = "x"
    yield Case("surrogate in parameter key (file)", _escaped(keyed))
    yield Case("surrogate in parameter key (object)", keyed)
    # nesting
    for depth in (1_000, 10_000, 100_000):
        yield Case(f"file nested {depth} deep", b"[" * depth + b"]" * depth)
    yield Case("file nested 1,000,000 deep", b"[" * 1_000_000 + b"]" * 1_000_000)
    yield Case(
        "parameter nested 5,000 deep (file)",
        _dumps(_with(base, ("steps", 0, "parameters", "name"), "PLACEHOLDER")).replace(
            b'"PLACEHOLDER"', b'{"k":' * 5000 + b"1" + b"}" * 5000
        ),
    )
    yield Case(
        "parameter nested 200 deep (object)",
        _with(base, ("steps", 0, "parameters", "name"), _nested(200)),
    )
    # numbers
    big = "9" * 5000
    yield Case("5,000-digit value", _dumps(base).replace(b'"Ana"', big.encode()))
    yield Case(
        "5,000-digit timeout", _dumps(base).replace(b'"timeout": 10', f'"timeout": {big}'.encode())
    )
    yield Case("101-digit value (object)", _with(base, ("steps", 0, "parameters", "name"), 10**100))
    yield Case(
        "5,000-digit value (object)", _with(base, ("steps", 0, "parameters", "name"), 10**4999)
    )
    yield Case("1e999", _dumps(base).replace(b'"Ana"', b"1e999"))
    yield Case("NaN", _dumps(base).replace(b'"Ana"', b"NaN"))
    yield Case("-Infinity timeout", _dumps(base).replace(b'"timeout": 10', b'"timeout": -Infinity'))
    yield Case(
        "float('nan') (object)", _with(base, ("steps", 0, "parameters", "name"), float("nan"))
    )
    # sizes
    yield Case(
        "20 MB string parameter (file)",
        _dumps(_with(base, ("steps", 0, "parameters", "name"), "x" * 20_000_000)),
    )
    yield Case(
        "20 MB string parameter (object)",
        _with(base, ("steps", 0, "parameters", "name"), "x" * 20_000_000),
    )
    yield Case(
        "200,000-char string (object)",
        _with(base, ("steps", 0, "parameters", "name"), "y" * 200_000),
    )
    yield Case(
        "1M-number parameter (file)",
        _dumps(_with(base, ("steps", 0, "parameters", "name"), list(range(1_000_000)))),
    )
    yield Case(
        "300k-number parameter (object)",
        _with(base, ("steps", 0, "parameters", "name"), [0] * 300_000),
    )
    # templates
    for count in (10_000, 20_000, 49_000):
        yield Case(
            f"{count:,} unclosed {{{{ (file)",
            _dumps(_with(base, ("steps", 0, "parameters", "name"), "{{" * count)),
            "accept",  # literal text: no template closes, so none is parsed; it must be fast
        )
    yield Case(
        "unclosed {{ then one }} (object)",
        _with(base, ("steps", 1, "parameters", "title"), "{{" * 20_000 + "}}"),
    )
    yield Case(
        "many templates (object)",
        _with(base, ("steps", 1, "parameters", "title"), "{{author.name}}" * 3000),
        "accept",
    )
    # not JSON types (objects only)
    yield Case("a set (object)", _with(base, ("steps", 0, "parameters", "name"), {1, 2}))
    yield Case("bytes value (object)", _with(base, ("steps", 0, "parameters", "name"), b"\xff"))
    yield Case("int key (object)", _with(base, ("steps", 0, "parameters"), {1: "x"}))
    # the valid plans themselves
    for index, plan in enumerate(VALID_PLANS):
        yield Case(f"valid plan {index} (file)", _dumps(plan), "accept")
        yield Case(f"valid plan {index} (object)", copy.deepcopy(plan), "accept")


_STRINGS = [
    "",
    " ",
    "{{",
    "}}",
    "{{author}}",
    "{{nope.x}}",
    "{{author._id[0]}}",
    "é",
    "\x00",
    "\u202e",
    "😀" * 3,
    "a" * 300,
    "$gt",
    "../../etc/passwd",
    "{{ author . name }}",
]
_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**63,
    1.5,
    -0.0,
    1e308,
    [],
    {},
    [1, [2, [3]]],
    {"$gt": ""},
    *_STRINGS,
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from _paths(item, (*prefix, index))


def _mutate(plan: dict[str, Any], rng: random.Random) -> tuple[str, dict[str, Any]]:
    plan = copy.deepcopy(plan)
    paths = list(_paths(plan))
    if not paths:  # an earlier mutation emptied it
        return "re-seed with steps", {"steps": [copy.deepcopy(rng.choice(_VALUES))]}
    path = rng.choice(paths)
    parent: Any = plan
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    operation = rng.choice(["replace", "delete", "duplicate", "rename", "insert", "swap"])
    if operation == "replace":
        parent[key] = copy.deepcopy(rng.choice(_VALUES))
    elif operation == "delete":
        del parent[key]
    elif operation == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    elif operation == "rename" and isinstance(parent, dict):
        parent[rng.choice(_STRINGS) or "x"] = parent.pop(key)
    elif operation == "insert" and isinstance(parent[key], dict | list):
        target = parent[key]
        if isinstance(target, dict):
            target[
                rng.choice(
                    [
                        "extra",
                        "dependsOn",
                        "fallback",
                        "timeout",
                        "maxAttempts",
                        "confidence",
                        "outputSteps",
                    ]
                )
            ] = copy.deepcopy(rng.choice(_VALUES))
        else:
            target.append(copy.deepcopy(rng.choice(_VALUES)))
    else:  # swap two values
        other = rng.choice(paths)
        other_parent: Any = plan
        try:
            for step in other[:-1]:
                other_parent = other_parent[step]
            parent[key], other_parent[other[-1]] = other_parent[other[-1]], parent[key]
        except (KeyError, IndexError, TypeError):
            operation = "swap (no-op)"
    return f"{operation} at {'/'.join(map(str, path))}", plan


def _corrupt_text(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(["truncate", "flip", "insert-bytes", "latin-1", "utf-16", "bom"])
    if kind == "truncate" and data:
        return kind, data[: rng.randrange(len(data))]
    if kind == "flip" and data:
        index = rng.randrange(len(data))
        return kind, data[:index] + bytes([rng.randrange(256)]) + data[index + 1 :]
    if kind == "insert-bytes":
        index = rng.randrange(len(data) + 1)
        return kind, data[:index] + rng.randbytes(rng.randint(1, 4)) + data[index:]
    if kind == "latin-1":
        return kind, data.decode("utf-8", "replace").encode("latin-1", "replace")
    if kind == "utf-16":
        return kind, data.decode("utf-8", "replace").encode("utf-16")
    return kind, b"\xef\xbb\xbf" + data


def fuzz_cases(seed: int, count: int) -> Iterator[Case]:
    """``count`` seeded mutations of the valid plans: structural edits (as objects and as
    files), and byte-level corruption of the files."""
    rng = random.Random(seed)
    for index in range(count):
        plan = rng.choice(VALID_PLANS)
        name, mutated = _mutate(plan, rng)
        for _ in range(rng.choice([0, 0, 1, 2])):
            more, mutated = _mutate(mutated, rng)
            name += f"; {more}"
        roll = rng.random()
        if roll < 0.45:
            yield Case(f"fuzz {seed}/{index} object: {name}", mutated, None)
        elif roll < 0.85:
            yield Case(f"fuzz {seed}/{index} file: {name}", _dumps(mutated), None)
        else:
            kind, data = _corrupt_text(_dumps(mutated), rng)
            yield Case(f"fuzz {seed}/{index} bytes ({kind}): {name}", data, None)
