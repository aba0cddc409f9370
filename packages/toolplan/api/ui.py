"""The plan page served by ``toolplan serve``: ``/ui/plans`` and ``/ui/plans/{planId}``.

Two kinds of route, behind the same auth and ``Host`` middleware as ``/graphql``:

- **pages and their assets** (``/ui/plans``, ``/ui/plans/{planId}``, ``/ui/assets/...``): static
  files shipped in the wheel (``ui_assets/``), the same for every plan, holding no data. Like the
  GraphiQL page they load without a token, so a browser can open them; the page then asks for
  the token and sends it with every request for data.
- **data** (``/ui/data/plans``, ``/ui/data/plans/{planId}``,
  ``/ui/data/plans/{planId}/steps/{stepId}/items?offset=&limit=&status=``): JSON from the
  service functions GraphQL uses (:func:`~toolplan.service.listing.recent_plans`,
  :func:`~toolplan.service.plan_view.plan_view`, :func:`~toolplan.service.plan_view.item_page`:
  a map's items a page at a time), with the token when the server has one.
  Live updates come from the GraphQL ``stepEvents`` subscription over SSE, as for any client.

Nothing here decides what a plan looks like; handlers read parameters and serve JSON.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from toolplan.api.auth import UI_DATA_PATH, UI_PATH
from toolplan.api.context import ApiContext
from toolplan.api.errors import INTERNAL_MESSAGE, ErrorCode, client_message, error_code
from toolplan.errors import InvalidInput, ToolplanError
from toolplan.plan_format.ids import is_valid_id
from toolplan.service.listing import DEFAULT_LIMIT, LISTED_STATUSES, page_json, recent_plans
from toolplan.service.plan_view import DEFAULT_ITEM_PAGE, item_page, plan_view
from toolplan.store.codec import dumps

__all__ = ["ASSETS", "ui_routes"]

logger = logging.getLogger("toolplan.api")

ASSETS: dict[str, str] = {
    "plans.html": "text/html; charset=utf-8",
    "plan.html": "text/html; charset=utf-8",
    "ui.css": "text/css; charset=utf-8",
    "ui.js": "text/javascript; charset=utf-8",
    "plans.js": "text/javascript; charset=utf-8",
    "plan.js": "text/javascript; charset=utf-8",
}
"""The page's files (package data under ``toolplan/api/ui_assets/``) and their types."""

_HEADERS = {
    # Only this server's own files and requests: no inline script, no CDN, no framing.
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
_STATUS: dict[ErrorCode, int] = {
    "NOT_FOUND": 404,
    "BAD_USER_INPUT": 400,
    "STORE_UNAVAILABLE": 503,
    "UNAVAILABLE": 503,
}


@cache
def _asset(name: str) -> bytes:
    return (resources.files("toolplan.api") / "ui_assets" / name).read_bytes()


def _file(name: str) -> Response:
    return Response(_asset(name), media_type=ASSETS[name], headers=_HEADERS)


def _error(status: int, code: ErrorCode, message: str) -> JSONResponse:
    body = {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    return JSONResponse(body, status_code=status, headers=_HEADERS)


async def _json(call: Callable[[], Any]) -> Response:
    """``call()`` in a worker thread (store calls block) as JSON; a toolplan error as the API's
    error shape with its code, anything else as ``INTERNAL_ERROR`` with a logged reference."""
    try:
        data = await asyncio.to_thread(call)
        # Encoded here, inside the try: strict JSON (a NaN a store handed back is null), and a
        # value that cannot be encoded is this route's INTERNAL_ERROR, not a plain-text 500.
        body = dumps(data).encode("utf-8")
    except ToolplanError as error:
        code = error_code(error)
        return _error(_STATUS.get(code, 500), code, client_message(error))
    except Exception:
        reference = secrets.token_hex(4)
        logger.exception("unexpected error in %s (reference %s)", UI_DATA_PATH, reference)
        return _error(500, "INTERNAL_ERROR", INTERNAL_MESSAGE.format(reference=reference))
    return Response(body, media_type="application/json", headers=_HEADERS)


def _limit(text: str | None, *, name: str = "first", default: int = DEFAULT_LIMIT) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {text!r}") from None


def ui_routes(context: ApiContext) -> list[BaseRoute]:
    """The page's routes over the server's store."""

    async def index(request: Request) -> Response:
        return RedirectResponse(f"{UI_PATH}/plans", status_code=307)

    async def plans_page(request: Request) -> Response:
        return _file("plans.html")

    async def plan_page(request: Request) -> Response:
        if not is_valid_id(request.path_params["plan_id"], "plan"):
            return Response("not a plan ID (plan_...)", status_code=404, media_type="text/plain")
        return _file("plan.html")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response("no such file", status_code=404, media_type="text/plain")
        return _file(name)

    async def plans_data(request: Request) -> Response:
        params = request.query_params

        def listed() -> dict[str, Any]:
            page = recent_plans(
                context.store,
                status=params.get("status") or None,
                request_id=params.get("requestId") or None,
                limit=_limit(params.get("first")),
                after=params.get("after") or None,
            )
            return {**page_json(page), "statuses": list(LISTED_STATUSES)}

        return await _json(listed)

    async def plan_data(request: Request) -> Response:
        plan_id = request.path_params["plan_id"]
        return await _json(lambda: plan_view(context.store, plan_id))

    async def items_data(request: Request) -> Response:
        params = request.query_params

        def page() -> dict[str, Any]:
            step_id = request.path_params["step_id"]
            found = item_page(
                context.store,
                request.path_params["plan_id"],
                step_id,
                offset=_limit(params.get("offset"), name="offset", default=0),
                limit=_limit(params.get("limit"), name="limit", default=DEFAULT_ITEM_PAGE),
                status=params.get("status") or None,
            )
            if found is None:
                raise InvalidInput(
                    f"step {step_id!r} has no items (not a forEach step, or not started)"
                )
            return found

        return await _json(page)

    return [
        Route(UI_PATH, index, methods=["GET"]),
        Route(f"{UI_PATH}/plans", plans_page, methods=["GET"]),
        Route(f"{UI_PATH}/plans/{{plan_id}}", plan_page, methods=["GET"]),
        Route(f"{UI_PATH}/assets/{{name}}", asset, methods=["GET"]),
        Route(f"{UI_DATA_PATH}/plans", plans_data, methods=["GET"]),
        Route(f"{UI_DATA_PATH}/plans/{{plan_id}}", plan_data, methods=["GET"]),
        Route(
            f"{UI_DATA_PATH}/plans/{{plan_id}}/steps/{{step_id}}/items", items_data, methods=["GET"]
        ),
    ]
