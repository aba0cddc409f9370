"""The Python client page (docs/python.md) documents exactly the names ``toolplan.__all__``
exports, and the GraphQL page (docs/api.md) exactly the API's error codes. Their examples, like
every page's, run in tests/e2e/test_readme_examples.py."""

from __future__ import annotations

import re
from pathlib import Path

import toolplan

DOCS = Path(__file__).parents[2] / "docs"


def page(name: str) -> str:
    """A documentation page, down to its first second-level section (its opening part)."""
    text = (DOCS / name).read_text()
    end = text.find("\n## ")
    return text[: end if end != -1 else None]


def documented_names() -> set[str]:
    names: set[str] = set()
    for line in page("python.md").splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)", first_cell))
    return names


def test_the_python_page_documents_exactly_the_public_api() -> None:
    assert documented_names() == set(toolplan.__all__)


def test_every_public_name_has_a_docstring() -> None:
    missing = [
        name for name in toolplan.__all__ if not (getattr(toolplan, name).__doc__ or "").strip()
    ]
    assert missing == []


def test_the_api_page_lists_exactly_the_api_error_codes() -> None:
    from typing import get_args

    from toolplan.api.errors import ErrorCode

    table = page("api.md").split("| code | when |", 1)[1].split("\n\n", 1)[0]
    documented = {
        code
        for line in table.splitlines()
        for code in re.findall(r"`([A-Z_]+)`", line.split("|")[1] if line.startswith("| `") else "")
    }
    assert documented == set(get_args(ErrorCode))
