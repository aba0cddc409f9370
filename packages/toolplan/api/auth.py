"""Who may call the API: a bearer token, or loopback clients only when there is none."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any
from urllib.parse import parse_qs

from toolplan.api.errors import send_error
from toolplan.api.settings import TOKEN_ENV, ApiSettings
from toolplan.errors import InvalidInput

__all__ = ["UI_DATA_PATH", "UI_PATH", "BearerAuth", "LoopbackHostOnly", "check_bind", "is_loopback"]

Scope = dict[str, Any]

UI_PATH = "/ui"
"""The plan page (:mod:`toolplan.api.ui`): its pages and assets hold no data."""
UI_DATA_PATH = "/ui/data"
"""The plan page's data: a token like any API request."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``) or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name could resolve anywhere: treat it as public


def check_bind(settings: ApiSettings) -> None:
    """Refuse to listen beyond this machine without a token (raises :class:`InvalidInput`)."""
    if settings.token is None and not is_loopback(settings.host):
        raise InvalidInput(
            f"refusing to listen on {settings.host!r} without authentication: anyone who can "
            f"reach it could run tools. Set {TOKEN_ENV} to a long random secret (clients then "
            "send 'Authorization: Bearer <token>'), or listen on 127.0.0.1 (the default)"
        )


def _presented_token(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, credentials = bytes(value).partition(b" ")
            return credentials.strip() if scheme.lower() == b"bearer" else None
    return None


def _is_static_page(scope: Scope) -> bool:
    """``GET /graphql`` without a ``query`` (the GraphiQL page), or a plan page or its assets
    under ``/ui`` (not ``/ui/data``): static files that hold no data.

    They are served without a token so a browser can open them; GraphiQL, and the plan page,
    then send the token with every request for data (GraphiQL's Headers pane; the plan page
    asks for it).
    """
    if scope["type"] != "http" or scope.get("method") != "GET":
        return False
    path = scope.get("path", "")
    if path == UI_PATH or (path.startswith(f"{UI_PATH}/") and not path.startswith(UI_DATA_PATH)):
        return True
    params = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    return path == "/graphql" and "query" not in params


def _host_name(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"host":
            host = bytes(value).decode("latin-1")
            if host.startswith("["):  # [::1]:8000
                return host[1 : host.find("]")] if "]" in host else None
            return host.rsplit(":", 1)[0]
    return None


class LoopbackHostOnly:
    """ASGI middleware for a server without a token: answer only requests addressed to a
    loopback name (``Host: localhost:8000``), so a web page cannot reach the API through DNS
    rebinding (a public name that resolves to 127.0.0.1)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _host_name(scope)
        if host is not None and is_loopback(host):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403})
            return
        await send_error(
            send,
            403,
            "FORBIDDEN",
            f"this server has no API token and only answers requests addressed to localhost "
            f"(Host: {host!r}); set {TOKEN_ENV} on the server to serve other names",
        )


class BearerAuth:
    """ASGI middleware: 401 (``UNAUTHENTICATED``) unless ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or _is_static_page(scope):
            await self.app(scope, receive, send)
            return
        presented = _presented_token(scope)
        if presented is not None and hmac.compare_digest(presented, self._token):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401})
            return
        message = (
            "missing bearer token: send 'Authorization: Bearer <token>'"
            if presented is None
            else "invalid bearer token"
        )
        await send_error(send, 401, "UNAUTHENTICATED", message, (b"www-authenticate", b"Bearer"))
