"""How errors reach API clients: a GraphQL error with a stable ``extensions.code``, never a trace.

:class:`~toolplan.errors.ToolplanError` subclasses are predictable failures; their message (which
already names the ID or field and says how to fix it) goes to the client with a code from
:data:`ERROR_CODES`. Any other exception is a bug: the client gets ``INTERNAL_ERROR`` with a
generic message and a reference, and the server log gets the traceback under the same reference.
An exception that escapes every route and middleware reaches :class:`CatchAll`, which answers
the same way: the API never answers a plain-text 500.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any, Literal

from graphql import GraphQLError, GraphQLSyntaxError

from toolplan.errors import (
    ExecutionBusy,
    InvalidInput,
    LLMUnavailable,
    NotFound,
    NotWaiting,
    PlanInvalid,
    PlanNeedsReview,
    StoreUnavailable,
    TemporalUnavailable,
    ToolFailure,
    ToolplanError,
    Unavailable,
)

__all__ = ["ERROR_CODES", "CatchAll", "ErrorCode", "error_code", "present_errors", "send_error"]

logger = logging.getLogger("toolplan.api")

ErrorCode = Literal[
    "PLAN_INVALID",
    "NOT_FOUND",
    "PLAN_NEEDS_REVIEW",
    "EXECUTION_BUSY",
    "NOT_WAITING",
    "BAD_USER_INPUT",
    "LLM_UNAVAILABLE",
    "STORE_UNAVAILABLE",
    "TEMPORAL_UNAVAILABLE",
    "UNAVAILABLE",
    "TOOL_FAILED",
    "TOOLPLAN_ERROR",
    "UNAUTHENTICATED",
    "FORBIDDEN",
    "PAYLOAD_TOO_LARGE",
    "BAD_REQUEST",
    "GRAPHQL_ERROR",
    "GRAPHQL_PARSE_FAILED",
    "GRAPHQL_VALIDATION_FAILED",
    "INTERNAL_ERROR",
]
"""Every ``extensions.code`` the API returns."""

ERROR_CODES: tuple[tuple[type[ToolplanError], ErrorCode], ...] = (
    (PlanInvalid, "PLAN_INVALID"),
    (NotFound, "NOT_FOUND"),
    (PlanNeedsReview, "PLAN_NEEDS_REVIEW"),
    (ExecutionBusy, "EXECUTION_BUSY"),
    (NotWaiting, "NOT_WAITING"),
    (InvalidInput, "BAD_USER_INPUT"),
    (LLMUnavailable, "LLM_UNAVAILABLE"),
    (StoreUnavailable, "STORE_UNAVAILABLE"),
    (TemporalUnavailable, "TEMPORAL_UNAVAILABLE"),
    (Unavailable, "UNAVAILABLE"),
    (ToolFailure, "TOOL_FAILED"),
    (ToolplanError, "TOOLPLAN_ERROR"),
)
"""Most specific class first: the first match gives the code."""

INTERNAL_MESSAGE = "internal server error (reference {reference}); the server log has the details"


def error_code(error: ToolplanError) -> ErrorCode:
    """The ``extensions.code`` of a toolplan error."""
    for kind, code in ERROR_CODES:
        if isinstance(error, kind):
            return code
    return "TOOLPLAN_ERROR"  # pragma: no cover - ToolplanError closes the table


def client_message(error: ToolplanError) -> str:
    """The message an API client reads: the error's own, except that a missing ID is named
    without the store it was looked up in (its URI holds a server path or a database host)."""
    return error.public_message if isinstance(error, NotFound) else error.message


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _extensions(error: ToolplanError) -> dict[str, Any]:
    extensions: dict[str, Any] = {**_json_safe(error.details), "code": error_code(error)}
    if isinstance(error, PlanInvalid):
        extensions["issues"] = [
            {"code": issue.code, "message": issue.message, "step": issue.step}
            for issue in error.issues
        ]
    return extensions


def _root_cause(error: GraphQLError) -> BaseException | None:
    """The Python exception behind a GraphQL error (``None`` for a pure GraphQL error)."""
    cause: BaseException | None = error.original_error
    while isinstance(cause, GraphQLError) and cause.original_error is not None:
        cause = cause.original_error
    return cause


def _rebuild(error: GraphQLError, message: str, extensions: dict[str, Any]) -> GraphQLError:
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions=extensions,
    )


def _present(error: GraphQLError) -> GraphQLError:
    cause = _root_cause(error)
    if isinstance(cause, ToolplanError):
        logger.info("%s: %s", error_code(cause), " ".join(cause.message.split()))
        return _rebuild(error, client_message(cause), _extensions(cause))
    if cause is None or isinstance(cause, GraphQLError):
        if error.extensions and "code" in error.extensions:
            return error
        if error.path is None:
            # Rejected before execution: syntax, schema validation, limits, variable types.
            code: ErrorCode = (
                "GRAPHQL_PARSE_FAILED"
                if isinstance(error, GraphQLSyntaxError)
                else "GRAPHQL_VALIDATION_FAILED"
            )
            return _rebuild(error, error.message, {**(error.extensions or {}), "code": code})
        # During execution and not from a resolver: e.g. a null for a non-null field, a bug.
        reference = secrets.token_hex(4)
        logger.error("GraphQL error at %s (reference %s): %s", error.path, reference, error)
        return _rebuild(error, error.message, {"code": "INTERNAL_ERROR", "reference": reference})
    reference = secrets.token_hex(4)
    logger.error(
        "unexpected error at %s (reference %s)",
        error.path,
        reference,
        exc_info=(type(cause), cause, cause.__traceback__),
    )
    return _rebuild(
        error,
        INTERNAL_MESSAGE.format(reference=reference),
        {"code": "INTERNAL_ERROR", "reference": reference},
    )


def present_errors(errors: list[GraphQLError]) -> list[GraphQLError]:
    """The errors as clients see them: codes added, unexpected exceptions masked and logged."""
    return [_present(error) for error in errors]


async def send_error(
    send: Any,
    status: int,
    code: ErrorCode,
    message: str,
    *headers: tuple[bytes, bytes],
    reference: str | None = None,
) -> None:
    """Answer an HTTP request from ASGI middleware (auth, size limits) with a GraphQL-shaped
    JSON error: ``{"data": null, "errors": [{"message", "extensions": {"code"}}]}`` (and the
    log's ``reference`` of an internal error)."""
    extensions: dict[str, str] = {"code": code}
    if reference is not None:
        extensions["reference"] = reference
    body = json.dumps(
        {"data": None, "errors": [{"message": message, "extensions": extensions}]}
    ).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class CatchAll:
    """ASGI middleware around the whole app: an exception no route or middleware handled becomes
    a JSON ``INTERNAL_ERROR`` (status 500) with a reference, and the server log gets its
    traceback once, under that reference. Without it Starlette answers a plain-text 500 (which
    the plan page and GraphQL clients cannot read) and the server logs the traceback again.

    When the response had already started (a stream), nothing more can be sent: the error is
    logged and the response ends there."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as error:
            reference = secrets.token_hex(4)
            logger.error(
                "unexpected error in %s %s (reference %s)",
                scope.get("method"),
                scope.get("path"),
                reference,
                exc_info=(type(error), error, error.__traceback__),
            )
            if not started:
                message = INTERNAL_MESSAGE.format(reference=reference)
                await send_error(send, 500, "INTERNAL_ERROR", message, reference=reference)
