"""What a planning model would answer, in the LLM-facing format (parameters as JSON strings)."""

from __future__ import annotations

import json
from typing import Any

from toolplan.config import PlannerSettings

QUERY = "Create author Alice with email alice@test.com, then create blog by Alice titled Hello about world"


def llm_step(
    sid: str,
    tool: str,
    parameters: dict[str, Any],
    *,
    confidence: float = 0.9,
    depends_on: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "id": sid,
        "tool": tool,
        "parameters": json.dumps(parameters),
        "dependsOn": depends_on or [],
        "confidence": confidence,
    }


def blog_plan(*, confidence: float = 0.9) -> dict[str, Any]:
    """The ideal plan for QUERY."""
    return {
        "reasoning": "The blog needs the author's _id.",
        "steps": [
            llm_step(
                "author",
                "createAuthor",
                {"name": "Alice", "email": "alice@test.com"},
                confidence=confidence,
            ),
            llm_step(
                "blog",
                "createBlog",
                {"authorId": "{{author._id}}", "title": "Hello", "content": "about world"},
            ),
        ],
        "outputSteps": ["blog"],
    }


def orphan_blog_plan(author_id: str = "alice") -> dict[str, Any]:
    """Valid, but fails at run time: no author has this ID. A business error only the run sees
    (names from a closed set are refused at planning time instead); a replan fixes it."""
    return {
        "reasoning": "the author exists already",
        "steps": [
            llm_step(
                "blog",
                "createBlog",
                {"authorId": author_id, "title": "Hello", "content": "about world"},
            )
        ],
        "outputSteps": ["blog"],
    }


ATTEMPTS = PlannerSettings().max_repairs + 1
"""The LLM calls a planning makes, repairs included, before it gives up (the default)."""


def broken_blog_plan() -> dict[str, Any]:
    """Invalid: a misspelt tool and a reference to a step that does not exist."""
    return {
        "reasoning": "first try",
        "steps": [
            llm_step("author", "createAuthr", {"name": "Alice", "email": "alice@test.com"}),
            llm_step(
                "blog",
                "createBlog",
                {"authorId": "{{writer._id}}", "title": "Hello", "content": "about world"},
            ),
        ],
        "outputSteps": ["blog"],
    }


# The plan format of seed 002, unchanged: the step id is the tool name.
SEED_002 = {
    "tools": [
        {
            "name": "createAuthor",
            "parameters": {"name": "Alice", "email": "alice@test.com"},
            "dependsOn": None,
        },
        {
            "name": "createBlog",
            "parameters": {
                "authorId": "{{createAuthor._id}}",
                "title": "Hello",
                "content": "about world",
            },
            "dependsOn": "createAuthor",
        },
    ],
    "executionOrder": ["createAuthor", "createBlog"],
}
