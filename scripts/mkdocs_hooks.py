"""MkDocs hooks for the docs site (mkdocs.yml ``hooks:``).

The package's docstrings cross-reference in Sphinx's roles (``:class:`~toolplan.store.Store```),
which mkdocstrings renders as the role's text followed by the code. Rendered as Sphinx would:
the code alone, ``~`` keeping the last dotted name only.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|exc|data|obj|const):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def on_page_content(html: str, **_: Any) -> str:
    """The page's HTML with Sphinx roles turned into plain code."""
    return _ROLE.sub(_code, html)
