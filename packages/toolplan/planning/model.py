"""Chat-model setup: ``provider:model`` through ``init_chat_model``, with the planner's settings.

Calling the model is :mod:`toolplan.planning.call`; translating its client's errors is
:mod:`toolplan.planning.llm_errors`."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.language_models import BaseChatModel

from toolplan.config import DEFAULT_MODEL, PlannerSettings

# ModelNotConfigured lives in toolplan.errors; imported from here too, as before.
from toolplan.errors import InvalidInput, ModelNotConfigured
from toolplan.planning.offline import TEST_MODEL, TestModel

__all__ = [
    "DEFAULT_MODEL",
    "RETRY_MAX_TOKENS",
    "ModelNotConfigured",
    "create_chat_model",
    "default_max_tokens",
    "model_provider",
    "model_spec",
    "retry_max_tokens",
    "with_max_tokens",
]

RETRY_MAX_TOKENS = 16_384
"""The largest output-token limit a retry asks for: a plan at the default step limit takes less
than half of it, so an answer longer than this is a model repeating itself, not a long plan."""

_LIMIT_FIELDS = ("max_tokens", "max_output_tokens", "num_predict")
"""Where LangChain chat models keep their output-token limit (OpenAI, Anthropic, Mistral...;
Google's; Ollama's)."""


def default_max_tokens(max_steps: int) -> int:
    """The planner's output-token limit when ``TOOLPLAN_LLM_MAX_TOKENS`` is not set: room for
    the reasoning plus about 120 tokens per step, up to the plan's step limit."""
    return 400 + 120 * max_steps


def retry_max_tokens(max_tokens: int) -> int | None:
    """The limit for asking again after an answer cut off at ``max_tokens``: twice as many,
    up to :data:`RETRY_MAX_TOKENS`; ``None`` when that is no larger."""
    larger = min(2 * max_tokens, max(max_tokens, RETRY_MAX_TOKENS))
    return larger if larger > max_tokens else None


def with_max_tokens(model: BaseChatModel, max_tokens: int) -> BaseChatModel | None:
    """A copy of ``model`` that answers up to ``max_tokens`` tokens, or ``None`` when ``model``
    keeps no output-token limit this knows how to change.

    The limit it was built with is replaced wherever it is (:data:`_LIMIT_FIELDS`, and the
    ``max_tokens`` that :func:`create_chat_model` sends in ``extra_body`` to OpenAI-compatible
    servers); the copy shares the model's client."""
    fields = type(model).model_fields
    update: dict[str, Any] = {
        name: max_tokens
        for name in _LIMIT_FIELDS
        if name in fields and getattr(model, name, None) is not None
    }
    extra_body = getattr(model, "extra_body", None)
    if isinstance(extra_body, dict) and "max_tokens" in extra_body:
        update["extra_body"] = {**extra_body, "max_tokens": max_tokens}
    return model.model_copy(update=update) if update else None


def model_spec(model: str | None, settings: PlannerSettings) -> str:
    """The ``provider:model`` string in effect: ``model``, else the settings' (``TOOLPLAN_MODEL``)."""
    return model or settings.model or DEFAULT_MODEL


def create_chat_model(
    settings: PlannerSettings,
    model: str | None = None,
    *,
    max_tokens: int | None = None,
) -> BaseChatModel:
    """Build the planner's chat model (``model``, else ``settings.model``), answering at most
    ``max_tokens`` tokens per call when given.

    For ``openai:*`` models the settings' ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` are used, so
    any OpenAI-compatible server works (vLLM, Ollama, llama.cpp, LM Studio). ``test`` is
    :class:`~toolplan.planning.offline.TestModel`, which plans offline by fixed rules. Transient errors
    (429, 5xx, timeouts) are retried ``llm_retries`` times with exponential backoff by the client.
    """
    spec = model_spec(model, settings)
    if spec == TEST_MODEL:  # offline, by fixed rules; the planner's setup gives it the catalog
        return TestModel()
    provider = model_provider(spec)
    kwargs: dict[str, Any] = {
        # httpx's read timeout: the longest silence (before the first token, then between
        # two streamed chunks), not the length of the answer.
        "timeout": settings.llm_timeout_seconds,
        "max_retries": settings.llm_retries,
        "temperature": 0,
    }
    if provider == "openai":
        if not settings.openai_api_key:
            raise ModelNotConfigured(
                f"no model is configured for planning ({spec!r} needs OPENAI_API_KEY). Set "
                "OPENAI_API_KEY (and OPENAI_BASE_URL for an OpenAI-compatible server such as vLLM, "
                "Ollama or LM Studio), or choose another provider with --model / TOOLPLAN_MODEL. "
                "To try planning without one, use the offline test model: --model test "
                "(TOOLPLAN_MODEL=test); or write the plan yourself: toolplan run --file plan.json"
            )
        from toolplan.planning.http_client import loop_bound_client

        kwargs["stream_usage"] = True
        kwargs["api_key"] = settings.openai_api_key
        # Connections of the running event loop only: a second asyncio.run in this process
        # must not reuse the first one's (langchain-openai's shared client does).
        kwargs["http_async_client"] = loop_bound_client(settings.llm_timeout_seconds)
        if _openai_takes("stream_chunk_timeout"):
            # langchain-openai 1.x ends an async stream silent for 120 s on its own: a CPU model
            # reading a long repair prompt was cut off under TOOLPLAN_LLM_TIMEOUT=600, and the
            # error blamed that setting. The one bound on the model's silence is ours.
            kwargs["stream_chunk_timeout"] = settings.llm_timeout_seconds
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


def _openai_takes(field: str) -> bool:
    """Whether the installed ``ChatOpenAI`` has the setting ``field`` (newer ones have more:
    an unknown one would be sent to the server as a request parameter)."""
    from langchain_openai import ChatOpenAI

    return field in ChatOpenAI.model_fields


def _is_openai(base_url: str | None) -> bool:
    return base_url is None or "api.openai.com" in base_url


def init_chat(spec: str, **kwargs: Any) -> BaseChatModel:
    """``init_chat_model`` with a concrete return type."""
    from langchain.chat_models import init_chat_model

    chat: Any = init_chat_model(spec, **kwargs)
    return chat
