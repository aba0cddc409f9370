"""Counting tokens offline: tiktoken's ``o200k_base`` (the gpt-4o family) when it can be loaded
without the network (already in tiktoken's cache, or unpacked from the ``bpe-openai`` package),
else one token per 4 characters, which is close for English and JSON.

Used where a server reports no count: what the respond node shows the model
(:mod:`toolplan.agent.budget`), and the prompt of a planning answer stopped while it streamed
(:mod:`toolplan.planning.call`).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["count_tokens"]

_ENCODING = "o200k_base"
_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@functools.cache
def _encoder() -> Callable[[str], list[int]] | None:
    """tiktoken's encoder when its file is available offline, else ``None``."""
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - a dependency
        return None
    directory = os.environ.get("TIKTOKEN_CACHE_DIR") or str(
        Path(tempfile.gettempdir()) / "data-gym-cache"  # tiktoken's own default
    )
    target = Path(directory) / hashlib.sha1(_URL.encode()).hexdigest()
    if not target.exists():
        try:
            import bpe_openai  # type: ignore[import-not-found,unused-ignore]

            source = Path(bpe_openai.__file__).parent / "data" / f"{_ENCODING}.tiktoken.gz"
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(f".{os.getpid()}.partial")
            partial.write_bytes(gzip.decompress(source.read_bytes()))
            partial.replace(target)
        except (ImportError, OSError):
            return None  # never download: a count must not wait for the network
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", directory)
    try:
        encoding = tiktoken.get_encoding(_ENCODING)
    except Exception:  # a corrupt cache file: estimate instead
        return None
    return functools.partial(encoding.encode, disallowed_special=())


def count_tokens(text: str) -> int:
    """Tokens in ``text`` (exact with tiktoken, else about one per 4 characters)."""
    encode = _encoder()
    return len(encode(text)) if encode is not None else -(-len(text) // 4)
