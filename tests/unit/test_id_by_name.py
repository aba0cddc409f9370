"""An id argument given the name of something the same plan creates (seen with a 1.5B model:
``getAuthor(authorId="leo")`` after ``createAuthor(name="Leo")``)."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import tool
from typing_extensions import TypedDict

from toolplan.builtin_tools import blog
from toolplan.errors import ValidationIssue
from toolplan.plan_format.names import is_id_argument
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.planning.id_by_name import find_ids_by_name
from toolplan.tools.catalog import ToolCatalog


def ids_by_name(plan: Plan, catalog: ToolCatalog) -> list[ValidationIssue]:
    """The issue of each id argument given the name of something the plan creates."""
    return [found.issue for found in find_ids_by_name(plan, catalog)]


def plan(*steps: tuple[str, str, dict[str, Any]]) -> Any:
    return parse_plan(
        {"steps": [{"id": sid, "tool": name, "parameters": args} for sid, name, args in steps]}
    )


class User(TypedDict):
    id: str
    name: str


BLOG = ToolCatalog(blog.TOOLS)
LEO = ("author", "createAuthor", {"name": "Leo", "email": "leo@test.com"})


def test_id_argument_names() -> None:
    assert all(map(is_id_argument, ["id", "_id", "authorId", "blog_id", "userID", "Id"]))
    assert not any(map(is_id_argument, ["paid", "valid", "android", "name", "identity"]))


def test_a_name_where_the_id_of_a_created_thing_belongs_is_found_with_the_fix() -> None:
    issues = ids_by_name(
        plan(
            LEO,
            ("get", "getAuthor", {"authorId": " leo "}),
            ("post", "createBlog", {"authorId": "{{author._id}}", "title": "Tips", "content": "x"}),
            ("comment", "createComment", {"blogId": "Tips", "text": "Nice!"}),
        ),
        BLOG,
    )
    assert [(issue.code, issue.step) for issue in issues] == [
        ("id-by-name", "get"),
        ("id-by-name", "comment"),
    ]
    assert issues[0].message == (
        "step 'get': argument 'authorId' of tool 'getAuthor' is ' leo ', the name that step "
        "'author' (createAuthor) is given, not an id; pass the id it returns: "
        '"{{author._id}}"'
    )
    assert issues[1].message.endswith('"{{post._id}}"')


def test_templates_unrelated_literals_and_ids_the_caller_chose_are_left_alone() -> None:
    assert not ids_by_name(
        plan(
            LEO,
            ("get", "getAuthor", {"authorId": "{{author._id}}"}),
            ("other", "getAuthor", {"authorId": "a1b2c3"}),  # not a name in this plan
            ("list", "listBlogs", {"authorId": "leo@test.com2"}),
        ),
        BLOG,
    )

    @tool
    def create_user(id: str, name: str) -> User:
        """Create a user with the id the caller chose."""
        return {"id": id, "name": name}

    @tool
    def get_user(user_id: str) -> dict[str, Any]:
        """Get a user by id."""
        return {"id": user_id}

    @tool
    def note(text: str) -> str:
        """Keep a note (returns no id)."""
        return text

    @tool
    def read_note(note_id: str) -> str:
        """Read a note."""
        return note_id

    catalog = ToolCatalog([create_user, get_user, note, read_note])
    assert catalog.info("create_user").returns is not None  # it does declare its id
    # the id the caller chose is an id argument: passing it again is right
    assert not ids_by_name(
        plan(
            ("u", "create_user", {"id": "bob", "name": "Bob"}),
            ("g", "get_user", {"user_id": "bob"}),
        ),
        catalog,
    )
    # a tool that declares no id in what it returns gives no template to suggest
    assert not ids_by_name(
        plan(("n", "note", {"text": "hi"}), ("r", "read_note", {"note_id": "hi"})), catalog
    )
