"""The plan reader's cost per statement (issue 50): a Python answer read whole, and streamed 4
characters at a time (the same :class:`~toolplan.planning.python_format.PythonAnswerReader`), and
a JSON plan of the same steps validated, for scale. CPU time (``time.process_time``), median of
``repeats`` readings, in microseconds per statement. Then hostile answers, each refused (its CPU
in milliseconds, read as the planner reads a model's answer): the unit tests hold that they are refused with their place, in bounded memory,
and that the text past the step limit is not looked at; what it costs is measured here."""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from toolplan.planning.python_format import PythonAnswerReader, read_python_answer
from toolplan.tools import load_tool_modules

__all__ = ["run_reader"]


def _answer(statements: int) -> str:
    lines = ["```python"]
    for i in range(statements):
        if i % 3 == 0:
            lines.append(f'a{i} = createAuthor(name="A{i}", email="a{i}@x.io")')
        elif i % 3 == 1:
            lines.append(
                f'b{i} = createBlog(authorId=a{i - 1}["_id"], title="T{i}", content=f"by {{a{i - 1}[\'name\']}}")'
            )
        else:
            lines.append(f'p{i} = listBlogs(authorId=b{i - 1}["authorId"])')
    lines.append("```")
    return "\n".join(lines) + "\n"


def _read(catalog: Any, text: str, chunk: int | None, statements: int) -> float:
    reader = PythonAnswerReader(catalog, max_steps=statements + 1)
    started = time.process_time()
    if chunk is None:
        reader.feed(text)
    else:
        for position in range(0, len(text), chunk):
            reader.feed(text[position : position + chunk])
    reading = reader.finish()
    spent = time.process_time() - started
    assert reading.data is not None and len(reading.data["steps"]) == statements, reading.issues
    return spent


async def run_reader(sizes: tuple[int, ...] = (10, 100, 1000), repeats: int = 5) -> dict[str, Any]:
    """CPU microseconds per statement, whole and streamed, per answer size."""
    catalog = load_tool_modules(["blog"])
    _ = catalog.python_tools  # built once, as a planner's catalog is
    rows = []
    for size in sizes:
        text = _answer(size)
        whole = [_read(catalog, text, None, size) for _ in range(repeats)]
        streamed = [_read(catalog, text, 4, size) for _ in range(repeats)]
        rows.append(
            {
                "statements": size,
                "characters": len(text),
                "wholeUsPerStatement": round(statistics.median(whole) / size * 1e6, 1),
                "streamedUsPerStatement": round(statistics.median(streamed) / size * 1e6, 1),
                "streamedMsInAll": round(statistics.median(streamed) * 1000, 1),
            }
        )
    return {"repeats": repeats, "chunk": 4, "rows": rows, "hostile": _hostile(catalog, repeats)}


_HOSTILE = {
    "16,000 calls past a step limit of 50": 'createAuthor(name="A", email="a@x.io")\n' * 16_000,
    "a number squared 23 times": "a0 = 7\n"
    + "".join(f"a{i + 1} = a{i} * a{i}\n" for i in range(23))
    + "listBlogs(authorId=str(a23))\n",
    "a string doubled 27 times": 's0 = "xxxxxxxxxx"\n'
    + "".join(f"s{i + 1} = s{i} + s{i}\n" for i in range(27))
    + "listBlogs(authorId=s27)\n",
    "a nesting 100,000 signs deep": "listBlogs(authorId=" + "-" * 100_000 + "1)\n",
    "a name 100,000 letters long": "x = " + "a" * 100_000 + "\n",
}


def _hostile(catalog: Any, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for name, text in _HOSTILE.items():
        spent = []
        for _ in range(repeats):
            started = time.process_time()
            reading = read_python_answer(text, catalog, max_steps=50)  # as the planner reads
            spent.append(time.process_time() - started)
            assert reading.data is None, f"{name}: read, not refused"
        rows.append(
            {
                "input": name,
                "characters": len(text),
                "cpuMs": round(statistics.median(spent) * 1000, 2),
            }
        )
    return rows


if __name__ == "__main__":
    import asyncio

    print(json.dumps(asyncio.run(run_reader()), indent=2))
