"""Chat-model setup (``provider:model`` through ``init_chat_model``) and LLM error translation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.language_models import BaseChatModel

from toolplan.config import DEFAULT_MODEL, PlannerSettings, Settings
from toolplan.errors import InvalidInput, LLMUnavailable

__all__ = ["DEFAULT_MODEL", "ModelNotConfigured", "create_chat_model", "llm_errors", "model_spec"]


class ModelNotConfigured(LLMUnavailable):
    """No usable model configuration (for example no API key)."""


def model_spec(model: str | None = None, settings: PlannerSettings | None = None) -> str:
    """The ``provider:model`` string in effect: ``model``, else the settings' (``TOOLPLAN_MODEL``)."""
    return model or (settings or Settings.from_env().planner).model or DEFAULT_MODEL


def create_chat_model(
    settings: PlannerSettings | None = None, model: str | None = None
) -> BaseChatModel:
    """Build the planner's chat model (``model``, else ``settings.model``).

    For ``openai:*`` models the settings' ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` are used, so
    any OpenAI-compatible server works (vLLM, Ollama, llama.cpp, LM Studio). Transient errors
    (429, 5xx, timeouts) are retried ``llm_retries`` times with exponential backoff by the client.
    """
    settings = settings or Settings.from_env().planner
    spec = model_spec(model, settings)
    provider = spec.partition(":")[0] if ":" in spec else None
    kwargs: dict[str, Any] = {
        "timeout": settings.llm_timeout,
        "max_retries": settings.llm_retries,
        "temperature": 0,
    }
    if provider in (None, "openai"):
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
    try:
        chat = init_chat(spec, **kwargs)
    except ImportError as error:
        raise ModelNotConfigured(
            f"model {spec!r} needs its integration package ({error}); install it, e.g. "
            f"pip install langchain-{provider or 'openai'}"
        ) from None
    except ValueError as error:
        raise InvalidInput(f"cannot use model {spec!r}: {error}") from None
    return chat


def init_chat(spec: str, **kwargs: Any) -> BaseChatModel:
    """``init_chat_model`` with a concrete return type."""
    from langchain.chat_models import init_chat_model

    chat: Any = init_chat_model(spec, **kwargs)
    return chat


@contextmanager
def llm_errors(spec: str, *, endpoint: str | None = None) -> Iterator[None]:
    """Turn client errors into :class:`LLMUnavailable` with a one-line reason naming
    ``endpoint`` (the OpenAI API when not given)."""
    try:
        yield
    except LLMUnavailable:
        raise
    except Exception as error:
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
        message = getattr(error, "message", str(error)).splitlines()[0]
        return f"the endpoint {base} answered {error.status_code}: {message}"
    return None
