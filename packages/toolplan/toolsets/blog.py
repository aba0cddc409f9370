"""The blog toolset of seed 002: authors, blogs and comments, persisted in the configured store.

Writes are idempotent per plan step: a step that runs again after a crash gets back the record
it created the first time instead of creating a duplicate.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import ToolException, tool

from toolplan.tools.catalog import tagged
from toolplan.toolsets._records import records_for

__all__ = ["TOOLS"]


@tool
def createAuthor(name: str, email: str, config: RunnableConfig) -> dict[str, Any]:
    """Create an author. Returns the author with its `_id`, `name` and `email`."""
    if "@" not in email:
        raise ToolException(f"invalid email address {email!r}")
    return records_for(config).insert("authors", {"name": name, "email": email})


@tool
def getAuthor(authorId: str, config: RunnableConfig) -> dict[str, Any]:
    """Get an author by `_id`. Returns `_id`, `name` and `email`."""
    found = records_for(config).find("authors", _id=authorId)
    if not found:
        raise ToolException(f"author {authorId!r} does not exist")
    return found[0]


@tool
def createBlog(authorId: str, title: str, content: str, config: RunnableConfig) -> dict[str, Any]:
    """Create a blog post by an existing author. Returns the blog with `_id`, `authorId`, `title`, `content`."""
    records = records_for(config)
    if not records.find("authors", _id=authorId):
        raise ToolException(f"author {authorId!r} does not exist; create the author first")
    return records.insert("blogs", {"authorId": authorId, "title": title, "content": content})


@tool
def createDraft(title: str, config: RunnableConfig, content: str = "") -> dict[str, Any]:
    """Save a draft blog post without an author. Returns the draft with `_id`, `title`, `status`."""
    return records_for(config).insert(
        "drafts", {"title": title, "content": content, "status": "draft"}
    )


@tool
def createComment(
    blogId: str, text: str, config: RunnableConfig, author: str = "anonymous"
) -> dict[str, Any]:
    """Comment on an existing blog post. Returns the comment with `_id`, `blogId`, `text`, `author`."""
    records = records_for(config)
    if not records.find("blogs", _id=blogId):
        raise ToolException(f"blog {blogId!r} does not exist")
    return records.insert("comments", {"blogId": blogId, "text": text, "author": author})


@tool
def listBlogs(config: RunnableConfig, authorId: str | None = None) -> dict[str, Any]:
    """List blog posts, optionally only those of one author. Returns `{"blogs": [...], "count": n}`."""
    where = {"authorId": authorId} if authorId else {}
    blogs = records_for(config).find("blogs", **where)
    return {"blogs": blogs, "count": len(blogs)}


tagged(
    createAuthor,
    "blog",
    "write",
    examples=[
        {"query": "Create author Alice", "parameters": {"name": "Alice", "email": "alice@test.com"}}
    ],
)
tagged(getAuthor, "blog", "read")
tagged(createBlog, "blog", "write")
tagged(createDraft, "blog", "write")
tagged(createComment, "blog", "write")
tagged(listBlogs, "blog", "read")

TOOLS = [createAuthor, getAuthor, createBlog, createDraft, createComment, listBlogs]
