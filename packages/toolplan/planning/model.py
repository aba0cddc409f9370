"""Chat-model setup (``provider:model`` through ``init_chat_model``), one structured call with
its usage, and LLM error translation."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from toolplan.config import DEFAULT_MODEL, PlannerSettings, Settings
from toolplan.errors import InvalidInput, LLMUnavailable

__all__ = [
    "DEFAULT_MODEL",
    "LLMOutputTruncated",
    "ModelAnswer",
    "ModelNotConfigured",
    "ask_structured",
    "create_chat_model",
    "default_max_tokens",
    "llm_errors",
    "model_spec",
    "schema_rejected",
    "truncated",
]


class ModelNotConfigured(LLMUnavailable):
    """No usable model configuration (for example no API key)."""


class LLMOutputTruncated(LLMUnavailable):
    """The model stopped at the output-token limit (``finish_reason: length``) mid-answer.

    Exit code 3, no repair round: a model that runs away would run away again, and each round
    costs the whole limit in generation time."""


def truncated(spec: str, max_tokens: int | None, **details: object) -> LLMOutputTruncated:
    """The error for an answer cut off at the output-token limit."""
    return LLMOutputTruncated(
        f"model {spec!r} stopped at the output limit of {max_tokens or 'its'} tokens before "
        "finishing the plan (finish_reason 'length'); nothing was stored. Raise "
        "TOOLPLAN_LLM_MAX_TOKENS (or lower --max-steps) if the plan is that long; a model that "
        "repeats itself needs a stronger model",
        details=dict(details),
    )


def default_max_tokens(max_steps: int) -> int:
    """The planner's output-token limit when ``TOOLPLAN_LLM_MAX_TOKENS`` is not set: room for
    the reasoning plus about 120 tokens per step, up to the plan's step limit."""
    return 400 + 120 * max_steps


def model_spec(model: str | None = None, settings: PlannerSettings | None = None) -> str:
    """The ``provider:model`` string in effect: ``model``, else the settings' (``TOOLPLAN_MODEL``)."""
    return model or (settings or Settings.from_env().planner).model or DEFAULT_MODEL


def create_chat_model(
    settings: PlannerSettings | None = None,
    model: str | None = None,
    *,
    max_tokens: int | None = None,
) -> BaseChatModel:
    """Build the planner's chat model (``model``, else ``settings.model``), answering at most
    ``max_tokens`` tokens per call when given.

    For ``openai:*`` models the settings' ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` are used, so
    any OpenAI-compatible server works (vLLM, Ollama, llama.cpp, LM Studio). Transient errors
    (429, 5xx, timeouts) are retried ``llm_retries`` times with exponential backoff by the client.
    """
    settings = settings or Settings.from_env().planner
    spec = model_spec(model, settings)
    provider = model_provider(spec)
    kwargs: dict[str, Any] = {
        "timeout": settings.llm_timeout,
        "max_retries": settings.llm_retries,
        "temperature": 0,
    }
    if provider == "openai":
        if not settings.openai_api_key:
            raise ModelNotConfigured(
                f"no model is configured for planning ({spec!r} needs OPENAI_API_KEY). Set "
                "OPENAI_API_KEY (and OPENAI_BASE_URL for an OpenAI-compatible server such as vLLM, "
                "Ollama or LM Studio), or choose another provider with --model / TOOLPLAN_MODEL. "
                "To run without a model, write the plan yourself: toolplan run --file plan.json"
            )
        kwargs["stream_usage"] = True
        kwargs["api_key"] = settings.openai_api_key
        if settings.openai_base_url:
            kwargs["base_url"] = settings.openai_base_url
        if max_tokens is not None and not _is_openai(settings.openai_base_url):
            # langchain-openai sends max_completion_tokens, which OpenAI-compatible servers
            # such as llama-cpp-python ignore; they all read the older max_tokens
            kwargs["extra_body"] = {"max_tokens": max_tokens}
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    try:
        chat = init_chat(spec, **kwargs)
    except ImportError as error:
        found = re.search(r"pip install ([\w.\-\[\]]+)", str(error))
        package = found.group(1) if found else f"langchain-{provider.replace('_', '-')}"
        raise ModelNotConfigured(
            f"model {spec!r} needs the {package} package: pip install {package}"
        ) from None
    except ValueError as error:
        raise InvalidInput(f"cannot use model {spec!r}: {error}") from None
    return chat


_EXAMPLES = "openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest or ollama:llama3.1"


def model_provider(spec: str) -> str:
    """The provider of a ``provider:model`` spec (or of a bare model name LangChain recognises,
    such as ``gpt-4o``); :class:`InvalidInput` saying what is accepted otherwise."""
    from langchain.chat_models import base

    known: Any = getattr(base, "_BUILTIN_PROVIDERS", None)
    providers = ", ".join(sorted(known)) if known else None
    listing = f"; providers: {providers}" if providers else ""
    if ":" in spec:
        provider = spec.partition(":")[0]
        if known and provider not in known:
            raise InvalidInput(
                f"model {spec!r}: unknown provider {provider!r}; give provider:model, e.g. "
                f"{_EXAMPLES}{listing}"
            )
        return provider
    infer: Any = getattr(base, "_attempt_infer_model_provider", None)
    inferred = infer(spec) if infer is not None else None
    if not inferred:
        raise InvalidInput(
            f"model {spec!r} does not say its provider; give provider:model, e.g. "
            f"{_EXAMPLES}{listing}"
        )
    return str(inferred)


def _is_openai(base_url: str | None) -> bool:
    return base_url is None or "api.openai.com" in base_url


def init_chat(spec: str, **kwargs: Any) -> BaseChatModel:
    """``init_chat_model`` with a concrete return type."""
    from langchain.chat_models import init_chat_model

    chat: Any = init_chat_model(spec, **kwargs)
    return chat


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
        reason = _reason(error, endpoint or "https://api.openai.com/v1")
        if reason is None:
            raise
        raise LLMUnavailable(f"model {spec!r}: {reason}") from None


def _reason(error: Exception, base: str) -> str | None:
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return None
    if isinstance(error, openai.AuthenticationError):
        return f"the endpoint {base} rejected the credentials (401); check OPENAI_API_KEY"
    if isinstance(error, openai.PermissionDeniedError):
        return f"the endpoint {base} denied access (403)"
    if isinstance(error, openai.APITimeoutError):
        return f"the endpoint {base} timed out"
    if isinstance(error, openai.APIConnectionError):
        return f"cannot reach the endpoint {base} ({error.__cause__ or error})"
    if isinstance(error, openai.RateLimitError):
        return f"rate limited by {base} (429) even after retries"
    if isinstance(error, openai.NotFoundError):
        return f"the endpoint {base} does not know this model (404)"
    if isinstance(error, openai.APIStatusError):
        return f"the endpoint {base} answered {error.status_code}: {_error_text(error)}"
    return None


def _error_text(error: Any) -> str:
    """The endpoint's error text in full, on one line (a server's multi-line message keeps its
    reason: llama-cpp-python's 500 says which field it rejected on the second line)."""
    body = getattr(error, "body", None)
    text = body.get("message") if isinstance(body, dict) else None
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
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return False
    if not isinstance(error, openai.APIStatusError) or error.status_code not in (400, 422, 500):
        return False
    text = _error_text(error).lower()
    return any(word in text for word in _SCHEMA_WORDS)


@dataclass(frozen=True)
class ModelAnswer:
    """One structured-output call: the raw message and what it cost."""

    message: BaseMessage | None
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int | None
    """Prompt tokens the server read from its prompt cache, when it says
    (``usage_metadata.input_token_details.cache_read``)."""
    finish_reason: str | None


async def ask_structured(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    schema: dict[str, Any],
    *,
    method: str,
    strict: bool,
    config: RunnableConfig | None = None,
) -> ModelAnswer:
    """Call ``model`` once for an answer in ``schema`` (a JSON schema with a ``title``), by
    ``method`` (``function_calling`` or ``json_schema``), and return the raw message: reading it
    is the caller's job, so an answer the client's parser rejects is still seen.

    Client errors propagate; wrap the call in :func:`llm_errors`."""
    # function calling stays non-strict, as before: strict tools are an OpenAI-only feature
    options: dict[str, Any] = {"strict": strict} if method == "json_schema" else {}
    structured = model.with_structured_output(schema, method=method, include_raw=True, **options)
    result: Any = await structured.ainvoke(list(messages), config)
    message = result.get("raw") if isinstance(result, dict) else None
    usage = getattr(message, "usage_metadata", None) or {}
    details = usage.get("input_token_details") or {}
    metadata = getattr(message, "response_metadata", None) or {}
    cached = details.get("cache_read")
    return ModelAnswer(
        message=message,
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cached_input_tokens=int(cached) if cached is not None else None,
        finish_reason=metadata.get("finish_reason"),
    )
