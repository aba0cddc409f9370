"""ARCHITECTURE.md's layer table is true: its rows are the import-linter contract's layers, in
order, and each row names every module of its folders."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "packages" / "toolplan"
BASE = {"errors", "_caches", "_blocking", "_lazy", "_tokens", "_spans", "_graph_context"}


def table_rows() -> list[tuple[str, str]]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `") or line.startswith("| base"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows.append((cells[0], cells[1]))
    return rows


def contract_layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [
        [name.strip().removeprefix("toolplan.") for name in layer.split(":")]
        for layer in contract["layers"]
    ]


def row_packages(cell: str) -> list[str]:
    """``cli/``, ``api/`` → ['cli', 'api']; ``client.py`` → ['client']; base → the contract's."""
    return [name.rstrip("/").removesuffix(".py") for name in re.findall(r"`([^`]+)`", cell)]


def test_the_rows_are_the_contracts_layers_in_order() -> None:
    rows = table_rows()
    layers = contract_layers()
    assert len(rows) == len(layers)
    for (first, _), layer in zip(rows, layers, strict=True):
        if first == "base":
            assert set(layer) == BASE
        else:
            assert row_packages(first) == layer


def test_every_module_is_named_in_its_row() -> None:
    rows = dict(table_rows())
    by_package = {name: cell for first, cell in rows.items() for name in row_packages(first)}
    by_package.update(dict.fromkeys(BASE, rows["base"]))
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] in {"__init__", "__main__"}:
            continue
        cell = by_package.get(parts[0])
        if cell is None or f"`{parts[-1]}`" not in cell:
            missing.append(".".join(parts))
    assert missing == []
