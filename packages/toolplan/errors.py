"""The one error hierarchy of toolplan.

Three families, because callers react to them differently:

- :class:`InvalidInput` — the user's plan, file, ID or flag is wrong. Nothing ran. Exit code 2.
- :class:`ToolFailure` — a tool (or the resolution of its arguments) failed while a plan ran.
  These are recorded on the step; they never abort the process.
- :class:`Unavailable` — infrastructure (the store, the LLM, the Temporal server) cannot be
  reached. Exit code 3.

:class:`ExecutionBusy` stands apart: another live process is running the plan right now (exit
code 2, nothing executed here); a worker treats it as "lost", not as a plan it cannot run.

:class:`SettingRemoved` is a warning, not an error: a setting's value that no longer does what it
did is still accepted, read as the value it now means.

Every message names the step, tool, template or field involved and says how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, cast, get_args

__all__ = [
    "AttemptFailed",
    "ExecutionBusy",
    "ExecutionGone",
    "FailureKind",
    "InvalidInput",
    "LLMOutputRepeating",
    "LLMOutputTruncated",
    "LLMUnavailable",
    "MCPServerError",
    "MCPServerUnavailable",
    "ModelNotConfigured",
    "NotFound",
    "NotWaiting",
    "PlanDeclined",
    "PlanInvalid",
    "PlanNeedsReview",
    "PlanningFailed",
    "SettingRemoved",
    "StoreUnavailable",
    "TemplateError",
    "TemporalUnavailable",
    "ToolFailure",
    "ToolOutputInvalid",
    "ToolplanError",
    "ToolsUnavailable",
    "Unavailable",
    "ValidationIssue",
    "failure_kinds",
]


class ToolplanError(RuntimeError):
    """Base class of every error toolplan raises on purpose.

    A ``RuntimeError``: LangGraph servers (Studio, ``langgraph dev``) pass the message of such
    errors on to the client, and hide any other exception's behind "An internal error occurred";
    LangGraph's default retry policy does not retry them either (they are not transient)."""

    exit_code: int = 1

    def __init__(self, message: str, *, details: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = dict(details or {})
        """Extra JSON fields for ``--json`` output and API error extensions (IDs, statuses)."""


# --- invalid input ------------------------------------------------------------------------------


class InvalidInput(ToolplanError):
    """The input is wrong; nothing was executed."""

    exit_code = 2


@dataclass(frozen=True)
class ValidationIssue:
    """One problem found in a plan. ``step`` is ``None`` for plan-level problems."""

    code: str
    message: str
    step: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", _quoted_briefly(self.message))

    def __str__(self) -> str:
        return self.message


_QUOTE = re.compile(r"""(?<!\w)(['"])([^'"\n]*)\1(?!\w)""")
"""A quoted text. Every quote is matched, short ones too, so that the scan reads quotes in pairs:
matching only long ones took the text between the quote closing one name and the quote opening
the next (``'a' returns keys ... without 'b'``) for a quote. A quote opens after no letter and
closes before none, so an apostrophe (``the step's``) opens nothing."""

_LONG = 200


def _quoted_briefly(message: str) -> str:
    """``message`` with each quoted text of 200 characters or more cut to its start: a problem
    quotes what the plan wrote, and a plan may write 100,000 characters where a name goes. The
    message goes back to the model in a repair, and to a terminal."""

    def brief(quote: re.Match[str]) -> str:
        mark, text = quote[1], quote[2]
        if len(text) < _LONG:
            return quote[0]
        return f"{mark}{text[:60]}...{mark} ({len(text):,} characters)"

    return _QUOTE.sub(brief, message)


class PlanInvalid(InvalidInput):
    """A plan failed validation. ``issues`` holds every problem found, not only the first."""

    def __init__(self, issues: Sequence[ValidationIssue], *, omitted: int = 0) -> None:
        self.issues = list(issues)
        self.omitted = omitted
        """Problems found but not listed (a refusal lists a capped number)."""
        lines = [f"  - {issue.message}" for issue in self.issues]
        if omitted:
            lines.append(f"  - and {omitted} more (fix these and check again)")
        total = len(self.issues) + omitted
        noun = "problem" if total == 1 else "problems"
        super().__init__(f"the plan is invalid ({total} {noun}):\n" + "\n".join(lines))


class PlanningFailed(PlanInvalid):
    """The model's plan was still invalid after the last repair. Nothing was stored.

    ``llm_calls`` and ``usage`` are what planning spent; ``details`` carries them too
    (``llmCalls``, ``usage``), as ``--json`` output and API error extensions show."""

    def __init__(
        self, errors: list[str], *, llm_calls: int, usage: dict[str, int], code: str = "planner"
    ) -> None:
        super().__init__([ValidationIssue(code, error) for error in errors])
        self.llm_calls = llm_calls
        self.usage = usage
        self.details.setdefault("llmCalls", llm_calls)
        self.details.setdefault("usage", dict(usage or {"inputTokens": 0, "outputTokens": 0}))
        self.message = (
            f"the planner could not produce a valid plan after {llm_calls} LLM call(s); "
            "nothing was stored. Last problems:\n" + "\n".join(f"  - {e}" for e in errors)
        )
        self.args = (self.message,)


class PlanDeclined(PlanningFailed):
    """The model planned no step: none of the tools does what the request asks. Nothing was
    stored. ``reason`` is what the model said (its ``reasoning``), possibly empty."""

    def __init__(self, reason: str, *, llm_calls: int, usage: dict[str, int]) -> None:
        super().__init__(
            [f"no tool does what the request asks: {reason or '(the model gave no reason)'}"],
            llm_calls=llm_calls,
            usage=usage,
            code="declined",
        )
        self.reason = reason
        self.details["declined"] = reason
        self.message = (
            "the planner found no tool that does what the request asks; nothing was stored. "
            f"The model said: {reason or '(no reason given)'}\n"
            "  Add a tool that does it (`toolplan tools` lists the catalog), or ask for "
            "something these tools can do."
        )
        self.args = (self.message,)


class NotFound(InvalidInput):
    """An ID (plan, request) does not exist in the store.

    ``message`` names the store (``where``) for the operator at a terminal; ``public_message``
    names only the ID, for API clients, who must not learn the store's URI or path."""

    def __init__(
        self, message: str, *, where: str | None = None, details: dict[str, object] | None = None
    ) -> None:
        super().__init__(message if where is None else f"{message} in {where}", details=details)
        self.public_message = message


class NotWaiting(InvalidInput):
    """A decision on a step that is not waiting for approval (never waited, decided already, or
    its plan finished): nothing changed."""


class PlanNeedsReview(InvalidInput):
    """The plan is stored with status ``needs_review`` and was not executed."""


class ExecutionBusy(ToolplanError):
    """Another live process holds the lease of this execution (or took it over from us)."""

    exit_code = 2


# --- tool failures ------------------------------------------------------------------------------


class ToolFailure(ToolplanError):
    """A step could not produce an output. Recorded on the step, never fatal to the run."""

    def __init__(self, message: str, *, step: str | None = None, tool: str | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.tool = tool


class TemplateError(ToolFailure):
    """A template could not be resolved against the actual output of the step it references."""

    def __init__(self, message: str, *, template: str, step: str | None = None) -> None:
        super().__init__(message, step=step)
        self.template = template


FailureKind = Literal["tool_error", "invalid_arguments", "invalid_output", "timeout", "exception"]
"""Why one attempt of a tool call failed: the tool reported a business error (``ToolException``),
rejected its resolved arguments, returned an output the record cannot hold
(:class:`ToolOutputInvalid`), timed out, or raised anything else. By default only the last two
are retried (:class:`toolplan.config.retry.RetryPolicy`): an invalid output came from a call that
ran, and would come again."""


def failure_kinds(given: Collection[str]) -> frozenset[FailureKind]:
    """``given`` (a kind, or several) as a set of :data:`FailureKind`; ``ValueError`` naming
    any unknown one and the known ones."""
    names = {given} if isinstance(given, str) else set(given)
    known = set(get_args(FailureKind))
    unknown = sorted(names - known)
    if unknown:
        raise ValueError(
            f"retry_on names unknown failure kind(s) {', '.join(map(repr, unknown))}; use any of "
            f"{', '.join(sorted(known))}, or a function (failure, tool) -> bool"
        )
    return cast(frozenset[FailureKind], frozenset(names))


class AttemptFailed(ToolFailure):
    """One attempt of a tool call failed. ``kind`` says why (:data:`FailureKind`), ``error`` is
    the exception the tool raised (``None`` for a timeout). Whether another attempt follows is
    the retry policy's one decision (:meth:`toolplan.config.retry.RetryPolicy.after`), the same
    for every backend; a ``retry_on`` predicate is given this object."""

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind,
        tool: str | None = None,
        error: BaseException | None = None,
    ) -> None:
        super().__init__(message, tool=tool)
        self.kind: FailureKind = kind
        self.error = error


class ToolOutputInvalid(ToolFailure):
    """A tool returned an output the record cannot hold (bytes that are not text, an integer
    longer than JSON readers take, nesting too deep). The tool ran, so its step fails once and is
    never retried: a retry would repeat the tool's side effect for the same refusal."""


class MCPServerError(ToolFailure):
    """An MCP server failed, disconnected or was unreachable during a tool call.

    Recorded on the step like any tool failure, and retried under the step's retry policy (a
    restarted server is picked up by the next attempt).
    """

    def __init__(self, message: str, *, server: str, tool: str | None = None) -> None:
        super().__init__(message, tool=tool)
        self.server = server


# --- infrastructure -----------------------------------------------------------------------------


class Unavailable(ToolplanError):
    """A service toolplan depends on cannot be reached."""

    exit_code = 3


class StoreUnavailable(Unavailable):
    """The configured store cannot be opened or reached."""


class ExecutionGone(StoreUnavailable):
    """The records of an execution vanished from the store while it ran (a database reset, an
    in-memory server restarted empty): nothing more can be recorded, so the run stops."""

    def __init__(self, plan_id: str, detail: str | None = None) -> None:
        found = f" ({detail})" if detail else ""
        super().__init__(
            f"the execution of {plan_id} is gone from the store{found}: its records were deleted "
            "while it ran (was the database reset, or an in-memory server restarted?), so "
            "nothing more can be recorded; submit the plan again to run it anew",
            details={"planId": plan_id, "resumable": False},
        )


class LLMUnavailable(Unavailable):
    """The configured model endpoint is unreachable, rejects the credentials or keeps failing."""


class ModelNotConfigured(LLMUnavailable):
    """No usable model configuration (for example no API key)."""


class LLMOutputTruncated(LLMUnavailable):
    """The model stopped at the output-token limit (``finish_reason: length``) mid-answer.

    Exit code 3, no repair round: a model that runs away would run away again, and each round
    costs the whole limit in generation time. The planner asks once more with a larger limit
    first (:meth:`~toolplan.planning.context.PlannerContext.larger_model_call`): a plan that is
    only long then fits."""


class LLMOutputRepeating(LLMOutputTruncated):
    """The model was stopped while it wrote its answer: it wrote the same step again and again,
    or more steps than the plan may have. Its answer would only have ended at the output limit;
    stopped early, it is asked once more, told what it did (:attr:`what`)."""

    def __init__(self, message: str, *, tokens: int, steps: int, what: str = "") -> None:
        super().__init__(message, details={"stoppedAfterTokens": tokens, "steps": steps})
        self.tokens = tokens
        """About how many tokens the model had written when it was stopped (chunks read)."""
        self.what = what
        """What the model did, said to the model when it is asked again (``it wrote the step
        get(...) 3 times, and would have gone on until the output limit``)."""


class TemporalUnavailable(Unavailable):
    """The configured Temporal server cannot be reached (or refuses the namespace)."""


class MCPServerUnavailable(Unavailable):
    """An MCP server could not be started or reached while loading its tools (exit code 3)."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message, details={"server": server})
        self.server = server


class ToolsUnavailable(Unavailable):
    """The tools recorded with a stored plan cannot be loaded in this process: a tool module is
    not installed here, an MCP server does not start, or the record names an MCP config this
    process was not configured with. A fault of this process's setup, not of the plan: nothing
    is recorded as failed, and a process that has the tools runs it."""


class SettingRemoved(UserWarning):
    """A setting was given a value whose behaviour was removed: it is still accepted, read as
    the value named in the message, and warns once where it is given (``UserWarning``: shown by
    default). ``TOOLPLAN_PLANNER_REWRITES=all`` (or ``rewrites="all"``) is one: the heuristic
    rewrite rules it turned on were removed, and it now means ``format``."""

    def __init__(self, setting: str, value: str, now: str, why: str) -> None:
        super().__init__(f"{setting}={value!r}: {why}; {value!r} now means {now!r}")
        self.setting = setting
        self.value = value
        self.now = now
        """The value it is read as."""
