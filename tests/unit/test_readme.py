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


def test_the_api_pages_schema_excerpt_is_the_real_schema() -> None:
    """Every type, field and argument the GraphQL page's excerpt shows is the server's, with the
    same types and defaults, and no argument of a field it shows is left out."""
    from graphql import GraphQLObjectType, parse, print_ast, value_from_ast
    from graphql.language import ObjectTypeDefinitionNode
    from graphql.pyutils import Undefined

    from toolplan.api.schema import build_schema

    excerpt = re.search(r"```graphql\n(.*?)```", (DOCS / "api.md").read_text(), re.DOTALL)
    assert excerpt is not None
    real = build_schema()._schema
    wrong: list[str] = []
    for definition in parse(excerpt.group(1)).definitions:
        assert isinstance(definition, ObjectTypeDefinitionNode)
        name = definition.name.value
        kind = real.type_map.get(name)
        if not isinstance(kind, GraphQLObjectType):
            wrong.append(f"type {name} is not in the schema")
            continue
        for field in definition.fields or ():
            where = f"{name}.{field.name.value}"
            actual = kind.fields.get(field.name.value)
            if actual is None:
                wrong.append(f"{where} is not in the schema")
                continue
            if print_ast(field.type) != str(actual.type):
                wrong.append(f"{where}: {print_ast(field.type)}, the schema says {actual.type}")
            shown = {arg.name.value: arg for arg in field.arguments or ()}
            for missing in sorted(set(actual.args) - set(shown)):
                wrong.append(f"{where}: argument {missing!r} is not shown")
            for arg_name, arg in shown.items():
                real_arg = actual.args.get(arg_name)
                if real_arg is None:
                    wrong.append(f"{where}: argument {arg_name!r} is not in the schema")
                    continue
                if print_ast(arg.type) != str(real_arg.type):
                    wrong.append(
                        f"{where}({arg_name}): {print_ast(arg.type)}, the schema says "
                        f"{real_arg.type}"
                    )
                if arg.default_value is not None:
                    default = value_from_ast(arg.default_value, real_arg.type)
                    if real_arg.default_value is Undefined or default != real_arg.default_value:
                        wrong.append(f"{where}({arg_name}): default {print_ast(arg.default_value)}")
    assert wrong == []


def test_the_cli_page_lists_every_command() -> None:
    import typer.main

    from toolplan.cli import app

    commands = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    table = re.findall(r"^\| `toolplan ([a-z]+)", page("cli.md"), re.MULTILINE)
    assert set(table) == commands
