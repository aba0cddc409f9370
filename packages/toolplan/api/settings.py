"""Settings of the GraphQL server: where it listens, its bearer token and its request limits."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from toolplan.errors import InvalidInput

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "TOKEN_ENV", "ApiSettings"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
TOKEN_ENV = "TOOLPLAN_API_TOKEN"
"""When set, every request needs ``Authorization: Bearer <token>``."""


@dataclass(frozen=True)
class ApiSettings:
    """How ``toolplan serve`` listens and what it accepts. Tests shrink the limits."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = field(default=None, repr=False)
    """The bearer token every request must carry; ``None`` serves loopback clients only."""
    max_body_bytes: int = 1_000_000
    """Larger request bodies are refused with 413 before anything parses them."""
    max_query_chars: int = 20_000
    """Longest GraphQL document accepted."""
    max_tokens: int = 2_000
    """Most lexical tokens in a document; parsing stops beyond it."""
    max_depth: int = 10
    """Deepest selection nesting (introspection fields are not counted)."""
    max_aliases: int = 20
    """Most field aliases in one document (each alias is another resolver call)."""

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_query_chars", "max_tokens", "max_depth", "max_aliases"):
            if getattr(self, name) < 1:
                raise InvalidInput(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0 <= self.port <= 65535:
            raise InvalidInput(f"--port must be between 0 and 65535, got {self.port}")

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
    ) -> ApiSettings:
        """Settings for ``host:port`` with the token from ``$TOOLPLAN_API_TOKEN``."""
        env = os.environ if env is None else env
        token = (env.get(TOKEN_ENV) or "").strip() or None
        return cls(host=host, port=port, token=token)
