"""Plans written as Python through the real CLI: ``toolplan run --file plan.py`` reads the
statements (never runs them), validates and runs the plan like a JSON one; a statement outside
the plan language is refused with its line and column before anything is stored; ``toolplan
show`` prints a stored plan in this form."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Cli

pytestmark = [pytest.mark.e2e]

PLAN = """\
# an author, a post by them, and a comment on every post they wrote
author = createAuthor("Bob", "bob@test.com")
blog = createBlog(authorId=author["_id"], title="Tips", content=f"testing, by {author['name']}")
posts = listBlogs(authorId=blog["authorId"])  # after the post: it reads from it
for post in posts["blogs"]:
    createComment(blogId=post["_id"], text="Nice!")
"""


def _write(cli: Cli, text: str, name: str = "plan.py") -> str:
    path = Path(cli.tmp) / name
    path.write_text(text)
    return str(path)


def test_a_python_plan_runs_like_a_json_one(cli: Cli) -> None:
    done = cli("run", "--file", _write(cli, PLAN), "--json")
    assert done.code == 0, done.stderr
    result = done.json()
    steps = {step["id"]: step for step in result["steps"]}
    assert list(steps) == ["author", "blog", "posts", "createComment"]
    assert steps["author"]["resolvedParameters"] == {"name": "Bob", "email": "bob@test.com"}
    assert steps["blog"]["resolvedParameters"]["content"] == "testing, by Bob"
    assert [item["status"] for item in steps["createComment"]["items"]] == ["succeeded"]
    shown = cli("show", result["planId"])
    assert shown.code == 0, shown.stderr
    assert "as Python (read, never run):" in shown.stdout
    assert 'author = createAuthor(name="Bob", email="bob@test.com")' in shown.stdout
    assert 'createComment(blogId=item["_id"], text="Nice!") for item in posts["blogs"]' in (
        shown.stdout
    )


def test_a_statement_outside_the_plan_language_is_refused_and_nothing_runs(cli: Cli) -> None:
    marker = Path(cli.tmp) / "ran"
    text = f"import pathlib\npathlib.Path({str(marker)!r}).touch()\nauthor = createAuthor(name='A', email='a@x')\n"
    done = cli("run", "--file", _write(cli, text), "--json")
    assert done.code == 2, done.stderr
    error = done.json()["error"]
    assert "line 1, column 1: import is not part of the plan language" in error
    assert "line 2, column 1: call a tool by its name, not pathlib.Path(" in error
    assert not marker.exists() and cli.calls() == []
    listed = cli("list", "--json")
    assert listed.json()["plans"] == []
