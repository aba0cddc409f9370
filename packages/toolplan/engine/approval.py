"""Approval gates: which steps wait for a person before their tool is called, and whether a
decision covers the call about to be made.

A step waits when its tool carries the tag ``approval`` (``toolplan.tagged(tool, "approval")``),
an MCP tool's annotations say ``destructiveHint: true``, or the plan sets ``"approval": true`` on
the step; ``ExecutionOptions.approve_all`` (``--approve-all``) pre-approves every step. A plan
cannot lift a tool's own gate: ``"approval": false`` changes nothing.

An approval names the arguments it was given for by their :func:`fingerprint`: the engine calls
the tool only when the arguments it resolved are the ones that were shown, and asks again
otherwise.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from typing import Any

from langchain_core.tools import BaseTool

from toolplan.plan_format.plan import Step
from toolplan.store.protocol import Decision
from toolplan.tools.catalog import APPROVAL_TAG, requires_approval

__all__ = [
    "APPROVAL_TAG",
    "covers",
    "current_user",
    "fingerprint",
    "gated_tool",
    "needs_approval",
]


def needs_approval(step: Step, tool: BaseTool) -> bool:
    """Whether ``step`` waits for approval before ``tool`` is called (``approve_all`` aside)."""
    return step.approval or gated_tool(tool)


gated_tool = requires_approval
"""Whether every call of a tool waits for approval (:func:`toolplan.tools.catalog.requires_approval`)."""


def fingerprint(tool: str, arguments: Any) -> str:
    """A fingerprint of one call: the tool and its resolved arguments as canonical JSON."""
    canonical = json.dumps(
        [tool, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def covers(decision: Decision | None, tool: str, arguments: Any) -> bool:
    """Whether ``decision`` approves calling ``tool`` with exactly ``arguments``."""
    return (
        decision is not None
        and decision.kind == "approved"
        and decision.fingerprint == fingerprint(tool, arguments)
    )


def current_user() -> str:
    """Who decides when nobody says (``--by``'s default): the OS user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container): its number, then
        return f"uid:{os.getuid()}" if hasattr(os, "getuid") else "unknown"
