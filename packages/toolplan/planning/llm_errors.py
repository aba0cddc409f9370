"""LLM client errors translated into :class:`~toolplan.errors.LLMUnavailable`, for any provider.

Errors are mapped by what they carry, not by their class: an HTTP status code (``status_code``
on the error, as openai's and anthropic's ``APIStatusError`` have, or on its ``response``, as
``httpx.HTTPStatusError`` has), a timeout or a connection failure (recognised by the class names
in the error's hierarchy, e.g. ``APITimeoutError``, ``httpx.ReadTimeout``, ``ConnectError``, httpx's ``TransportError``, or
the builtin ``TimeoutError`` / ``ConnectionError``). Anything else is a bug, not an outage, and
propagates unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The two errors live in toolplan.errors; imported from here too, as before.
from toolplan.errors import LLMOutputRepeating, LLMOutputTruncated, LLMUnavailable

__all__ = [
    "LLMOutputRepeating",
    "LLMOutputTruncated",
    "error_text",
    "llm_errors",
    "schema_rejected",
    "status_code",
    "truncated",
    "unreachable",
]

_DEFAULT_ENDPOINT = "https://api.openai.com/v1"


def truncated(
    spec: str,
    max_tokens: int | None,
    *,
    first_limit: int | None = None,
    stopped_after: int | None = None,
    **details: object,
) -> LLMOutputTruncated:
    """The error for an answer cut off at the output-token limit (``max_tokens``; after a first
    answer cut off at ``first_limit``, when the call was retried with a larger limit).

    ``stopped_after``: the answer ended with ``finish_reason: length`` after these output tokens,
    short of ``max_tokens``. The limit did not stop it; the server did, most often because the
    prompt and the answer filled the model's context window. Raising the limit changes nothing
    then, and the message says so."""
    again = (
        f", in a retry after a first answer cut off at {first_limit} tokens" if first_limit else ""
    )
    if stopped_after is not None:
        return LLMOutputTruncated(
            f"model {spec!r} stopped after {stopped_after} output tokens, before finishing the "
            f"plan and short of its output limit of {max_tokens} (finish_reason 'length'){again}: "
            "the server ended the answer, most likely because the prompt and the answer filled "
            "the model's context window; nothing was stored. A larger limit would not help: give "
            "the model a larger context (the server's context size) or fewer tools, or lower "
            "--max-steps; a model that repeats itself needs a stronger model",
            details={**details, "stoppedAfterTokens": stopped_after},
        )
    return LLMOutputTruncated(
        f"model {spec!r} stopped at the output limit of {max_tokens or 'its'} tokens before "
        f"finishing the plan (finish_reason 'length'){again}; nothing was stored. Raise "
        "TOOLPLAN_LLM_MAX_TOKENS (or lower --max-steps) if the plan is that long; a model that "
        "repeats itself needs a stronger model",
        details=dict(details),
    )


@contextmanager
def llm_errors(
    spec: str, *, endpoint: str | None = None, max_tokens: int | None = None
) -> Iterator[None]:
    """Turn client errors into :class:`LLMUnavailable` with a one-line reason naming
    ``endpoint`` (the OpenAI API when not given); an answer cut off at ``max_tokens`` into
    :class:`LLMOutputTruncated`."""
    try:
        yield
    except LLMUnavailable:
        raise
    except Exception as error:
        if type(error).__name__ == "LengthFinishReasonError":  # openai's parse() helpers
            raise truncated(spec, max_tokens) from None
        reason = _reason(error, endpoint or _DEFAULT_ENDPOINT, spec)
        if reason is None:
            raise
        raise LLMUnavailable(f"model {spec!r}: {reason}") from None


def status_code(error: BaseException) -> int | None:
    """The HTTP status an error carries (on itself or on its ``response``), if any."""
    for holder in (error, getattr(error, "response", None)):
        for name in ("status_code", "status"):
            code = getattr(holder, name, None)
            if isinstance(code, int) and not isinstance(code, bool) and 100 <= code < 600:
                return code
    return None


def _kind_named(error: BaseException, *words: str) -> bool:
    return any(word in cls.__name__ for cls in type(error).__mro__ for word in words)


def _key_hint(spec: str) -> str:
    provider = spec.partition(":")[0] if ":" in spec else "openai"
    return "OPENAI_API_KEY" if provider == "openai" else f"the API key of provider {provider!r}"


def _reason(error: Exception, base: str, spec: str) -> str | None:
    code = status_code(error)
    if code == 401:
        return f"the endpoint {base} rejected the credentials (401); check {_key_hint(spec)}"
    if code == 403:
        return f"the endpoint {base} denied access (403)"
    if code == 404:
        return f"the endpoint {base} does not know this model (404)"
    if code == 429:
        return f"rate limited by {base} (429) even after retries"
    if code is not None and code >= 400:
        return f"the endpoint {base} answered {code}: {error_text(error)}"
    # a timeout is also a connection error in openai's hierarchy: ask about it first
    if _timed_out(error):
        return (
            f"the endpoint {base} timed out (no answer within TOOLPLAN_LLM_TIMEOUT seconds; "
            "raise it for a model that is slow to start answering)"
        )
    if unreachable(error):
        return f"cannot reach the endpoint {base} ({error.__cause__ or error})"
    return None


def _timed_out(error: BaseException) -> bool:
    return isinstance(error, TimeoutError) or _kind_named(error, "Timeout")


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` is a timeout or a connection failure (no answer from the endpoint)."""
    return (
        _timed_out(error)
        or isinstance(error, ConnectionError)
        or _kind_named(error, "Connection", "ConnectError", "TransportError")
    )


def error_text(error: Any) -> str:
    """The endpoint's error text in full, on one line (a server's multi-line message keeps its
    reason: llama-cpp-python's 500 says which field it rejected on the second line)."""
    body = getattr(error, "body", None)
    text: Any = None
    if isinstance(body, dict):
        text = body.get("message")
        nested = body.get("error")  # anthropic: {"type": "error", "error": {"message": ...}}
        if not text and isinstance(nested, dict):
            text = nested.get("message")
    if not isinstance(text, str) or not text.strip():
        text = getattr(error, "message", None) or str(error)
    return " ".join(str(text).split())


_SCHEMA_WORDS = (
    "schema",
    "grammar",
    "response_format",
    "anyof",
    "const",
    "pattern",
    "$ref",
    "tools",
)


def schema_rejected(error: BaseException) -> bool:
    """Whether ``error`` is an endpoint refusing the request's schema (400, 422 or 500 naming
    the schema, grammar, response_format or tools), so the generic schema may work."""
    if status_code(error) not in (400, 422, 500):
        return False
    text = error_text(error).lower()
    return any(word in text for word in _SCHEMA_WORDS)
