"""The blog toolset of seed 002: authors, blogs and comments, persisted in the configured store.

Writes are idempotent per plan step: a step that runs again after a crash gets back the record
it created the first time instead of creating a duplicate.
"""

from __future__ import annotations

from typing import cast

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import ToolException, tool
from typing_extensions import TypedDict

from toolplan.builtin_tools._records import records_for
from toolplan.tools.catalog import tagged

__all__ = ["TOOLS"]

# What each tool returns, declared so the validator can check `{{author._id}}` before anything runs.


class Author(TypedDict):
    _id: str
    name: str
    email: str


class Blog(TypedDict):
    _id: str
    authorId: str
    title: str
    content: str


class Draft(TypedDict):
    _id: str
    title: str
    content: str
    status: str


class Comment(TypedDict):
    _id: str
    blogId: str
    text: str
    author: str


class BlogList(TypedDict):
    blogs: list[Blog]
    count: int


@tool
def createAuthor(name: str, email: str, config: RunnableConfig) -> Author:
    """Create an author (a person who writes blog posts). Only when the request asks to create,
    add or register an author."""
    if "@" not in email:
        raise ToolException(f"invalid email address {email!r}")
    return cast(Author, records_for(config).insert("authors", {"name": name, "email": email}))


@tool
def getAuthor(authorId: str, config: RunnableConfig) -> Author:
    """Get an author by `_id`. Only when the request asks to get, fetch or look up an author."""
    found = records_for(config).find("authors", _id=authorId)
    if not found:
        raise ToolException(f"author {authorId!r} does not exist")
    return cast(Author, found[0])


@tool
def createBlog(authorId: str, title: str, content: str, config: RunnableConfig) -> Blog:
    """Publish a blog post by an author, given the author's `_id` (from createAuthor or
    getAuthor). For any post, article or blog the request writes or publishes, unless it says
    draft."""
    records = records_for(config)
    if not records.find("authors", _id=authorId):
        raise ToolException(f"author {authorId!r} does not exist; create the author first")
    blog = {"authorId": authorId, "title": title, "content": content}
    return cast(Blog, records.insert("blogs", blog))


@tool
def createDraft(title: str, config: RunnableConfig, content: str = "") -> Draft:
    """Save a draft (a title and its content). Only when the request says draft; a draft needs
    no other step."""
    draft = {"title": title, "content": content, "status": "draft"}
    return cast(Draft, records_for(config).insert("drafts", draft))


@tool
def createComment(
    blogId: str, text: str, config: RunnableConfig, author: str = "anonymous"
) -> Comment:
    """Comment on a blog post, given the post's `_id` (from createBlog or listBlogs)."""
    records = records_for(config)
    if not records.find("blogs", _id=blogId):
        raise ToolException(f"blog {blogId!r} does not exist")
    comment = {"blogId": blogId, "text": text, "author": author}
    return cast(Comment, records.insert("comments", comment))


@tool
def listBlogs(config: RunnableConfig, authorId: str | None = None) -> BlogList:
    """List the blog posts: all of them, or one author's. For any request to show, list or find
    posts."""
    where = {"authorId": authorId} if authorId else {}
    blogs = records_for(config).find("blogs", **where)
    return {"blogs": cast(list[Blog], blogs), "count": len(blogs)}


# One resource, the blog's records: a read written after a write sees it (toolplan.tools.effects).
tagged(
    createAuthor,
    "blog",
    "write",
    resource="blog",
    examples=[
        {"query": "Create author Alice", "parameters": {"name": "Alice", "email": "alice@test.com"}}
    ],
)
tagged(getAuthor, "blog", "read", "read-only", resource="blog")
tagged(createBlog, "blog", "write", resource="blog")
tagged(createDraft, "blog", "write", resource="blog")
tagged(createComment, "blog", "write", resource="blog")
tagged(listBlogs, "blog", "read", "read-only", resource="blog")

TOOLS = [createAuthor, getAuthor, createBlog, createDraft, createComment, listBlogs]
