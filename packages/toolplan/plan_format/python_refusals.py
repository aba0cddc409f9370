"""What the Python plan reader refuses, and how it says so: a statement that is not part of the
plan language is refused (:class:`Refused`) with its line, its column and a message that shows
what was written (:func:`shown`, or :func:`what` it is) and says what to write instead; the
reader records the refusal and reads on (:mod:`toolplan.plan_format.python_plan`).
"""

from __future__ import annotations

import ast

from toolplan.errors import ValidationIssue

__all__ = ["HELP", "Quiet", "Refused", "issue", "shown", "what"]


HELP = (
    "write tool calls (x = tool(a=1)), references to their outputs (x['key']), for loops and "
    "comprehensions over a list with one call each, and if/else on a step's output"
)
"""What a plan is written with: said after the refusal of anything else."""


class Refused(Exception):
    """One statement cannot be read as a plan; the reader records it and goes on."""

    def __init__(self, node: ast.AST | None, message: str) -> None:
        super().__init__(message)
        self.line = getattr(node, "lineno", 0)
        self.column = getattr(node, "col_offset", -1) + 1
        self.message = message


class Quiet(Exception):
    """A statement uses a name whose own statement was refused: said once, not again."""


def issue(line: int, column: int, message: str) -> ValidationIssue:
    """A problem of the plan's text at ``line`` and ``column`` (both from 1)."""
    return ValidationIssue("python", f"line {line}, column {column}: {message}")


def what(node: ast.AST) -> str:
    """What kind of Python ``node`` is, in words (``a while loop``, ``import``)."""
    names = {
        "Import": "import",
        "ImportFrom": "import",
        "While": "a while loop",
        "FunctionDef": "def",
        "AsyncFunctionDef": "async def",
        "ClassDef": "class",
        "Lambda": "lambda",
        "Return": "return",
        "With": "with",
        "Try": "try",
        "Raise": "raise",
        "Delete": "del",
        "Global": "global",
        "Nonlocal": "nonlocal",
        "Await": "await",
        "Compare": "a comparison",
        "BoolOp": "and/or",
        "IfExp": "a conditional expression",
        "Set": "a set",
        "SetComp": "a set comprehension",
        "DictComp": "a dict comprehension",
        "GeneratorExp": "a generator",
    }
    return names.get(type(node).__name__, type(node).__name__)


def shown(node: ast.AST) -> str:
    """``node`` as it was written (shortened to 60 characters), for a message."""
    try:
        text = ast.unparse(node)
    except Exception:  # an AST built by hand, say: name its kind
        return what(node)
    return text if len(text) <= 60 else text[:57] + "..."
