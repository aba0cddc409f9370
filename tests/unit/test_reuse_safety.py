"""Parametric reuse on the held-out style queries of ``bench.reuse``: no false reuse (a reuse
where the planner must decide, or with other values), no missed one; and what the catalog
fingerprint covers."""

from __future__ import annotations

from bench.reuse import HELD_OUT, held_out

from toolplan.service.plan_index import catalog_fingerprint
from toolplan.tools.catalog import ToolCatalog


def test_held_out_queries_make_no_false_reuse() -> None:
    kinds = {case[0] for case in HELD_OUT}
    assert {"phrasing", "outside", "derived", "twice", "number", "shape"} <= kinds
    result = held_out()
    assert result["falseReuses"] == []
    assert result["missed"] == []
    assert result["reused"] == result["shouldReuse"] >= 10


def _lookup_text(city: str) -> str:
    """Look a city up."""
    return city


def _lookup_text_reworded(city: str) -> str:
    """Find what is known about a city."""
    return city


def _lookup_number(city: str) -> int:
    """Look a city up."""
    return len(city)


def _lookup_two(city: str, country: str) -> str:
    """Look a city up."""
    return city


def _catalog(function: object, name: str = "lookup") -> ToolCatalog:
    from langchain_core.tools import StructuredTool

    return ToolCatalog([StructuredTool.from_function(function, name=name)])  # type: ignore[arg-type]


def test_fingerprint_covers_names_parameters_and_returns_not_descriptions() -> None:
    base = catalog_fingerprint(_catalog(_lookup_text))
    assert catalog_fingerprint(_catalog(_lookup_text)) == base
    assert catalog_fingerprint(_catalog(_lookup_text_reworded)) == base  # description only
    assert catalog_fingerprint(_catalog(_lookup_text, "find")) != base
    assert catalog_fingerprint(_catalog(_lookup_two)) != base
    assert catalog_fingerprint(_catalog(_lookup_number)) != base  # the return shape
