"""The ASGI application behind ``toolplan serve``: ``/graphql`` with GraphiQL, the plan page
(``/ui/plans``, :mod:`toolplan.api.ui`), auth and limits.

Layers, outermost first: the catch-all that turns any unhandled exception into a JSON
``INTERNAL_ERROR`` (:class:`~toolplan.api.errors.CatchAll`), the bearer-token check (or, without a
token, a loopback ``Host`` check), the body-size limit, then strawberry's GraphQL view, whose
schema extensions enforce the document limits and whose results pass through
:func:`toolplan.api.errors.present_errors`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from graphql import GraphQLError, OperationType, get_operation_ast, parse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import Route
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData

# The exception strawberry's base view raises for a bad request (its home moved between
# strawberry versions; the base view always has it).
from strawberry.http.async_base_view import HTTPException
from strawberry.subscriptions import GRAPHQL_SSE_PROTOCOL
from strawberry.types import ExecutionResult

from toolplan.api.auth import BearerAuth, LoopbackHostOnly
from toolplan.api.context import ApiContext
from toolplan.api.errors import CatchAll, ErrorCode, present_errors, send_error
from toolplan.api.request_limits import BodySizeLimit
from toolplan.api.schema import build_schema
from toolplan.api.settings import ApiSettings
from toolplan.api.ui import ui_routes
from toolplan.client import AsyncToolplan
from toolplan.config import Settings
from toolplan.store import Store
from toolplan.store.codec import finite
from toolplan.tools.catalog import ToolCatalog

__all__ = ["GRAPHQL_PATH", "create_app"]

GRAPHQL_PATH = "/graphql"


class _GraphQLView(GraphQL[ApiContext, None]):
    """strawberry's ASGI view with one shared context and client-safe errors."""

    def __init__(self, context: ApiContext, api: ApiSettings) -> None:
        # Subscriptions only over SSE: strawberry's websocket transports do not pass results
        # through process_result, so their errors would escape present_errors.
        super().__init__(
            build_schema(api),
            graphql_ide="graphiql",
            subscription_protocols=(GRAPHQL_SSE_PROTOCOL,),
        )
        self.api_context = context

    async def get_context(self, request: Any, response: Any) -> ApiContext:
        return self.api_context

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """strawberry answers a bad HTTP request with plain text; answer with a GraphQL error
        (``BAD_REQUEST``) instead, like every other error."""
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        try:
            response = await self.run(Request(scope=scope, receive=receive))
        except HTTPException as error:
            code: ErrorCode = "BAD_REQUEST" if error.status_code == 400 else "GRAPHQL_ERROR"
            await send_error(send, error.status_code, code, error.reason)
            return
        await response(scope, receive, send)

    async def execute_single(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        """A subscription that did not ask for SSE would run as a query and fail inside
        (a stream where one value belongs): refuse it up front as a bad request."""
        request_data = kwargs.get("request_data")
        if isinstance(request_data, GraphQLRequestData) and _is_subscription(request_data):
            raise HTTPException(
                400,
                "a subscription answers as a stream of Server-Sent Events: send it with the "
                "header 'Accept: text/event-stream'",
            )
        return await super().execute_single(*args, **kwargs)

    def decode_json(self, data: str | bytes) -> object:
        """The body as a JSON object: strict UTF-8 (JSON over HTTP is UTF-8), within the parser's
        nesting and number limits; anything else is a 400, never a 500."""
        if isinstance(data, bytes):
            try:
                data = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
            except UnicodeDecodeError as error:
                raise HTTPException(
                    400, f"the request body is not UTF-8 (byte at offset {error.start})"
                ) from None
        try:
            parsed = json.loads(data)
        except json.JSONDecodeError:
            raise
        except RecursionError:
            raise HTTPException(400, "the request body is nested too deeply") from None
        except ValueError as error:  # an integer over Python's digit limit
            raise HTTPException(400, f"the request body is not accepted: {error}") from None
        if not isinstance(parsed, dict | list):
            raise HTTPException(
                400,
                'the request body must be a JSON object: {"query": "...", "variables": {...}}',
            )
        return parsed

    def encode_json(self, data: object) -> str:
        """Strict JSON, which every client parses: a NaN or ±Infinity that reached a response (a
        store handing back what an older version wrote) is ``null``, never ``NaN``."""
        try:
            return json.dumps(data, allow_nan=False)
        except ValueError:
            return json.dumps(finite(data), allow_nan=False)

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        if result.errors:
            result.errors = present_errors(list(result.errors))
        return await super().process_result(request, result)


def _is_subscription(request: GraphQLRequestData) -> bool:
    """Whether the operation the request names is a subscription (a document that does not
    parse is not: the execution reports it as usual)."""
    if not isinstance(request.query, str):
        return False
    try:
        operation = get_operation_ast(parse(request.query), request.operation_name)
    except GraphQLError:
        return False
    return operation is not None and operation.operation == OperationType.SUBSCRIPTION


def create_app(
    settings: Settings | None = None,
    *,
    api: ApiSettings | None = None,
    store: Store | None = None,
    catalog: ToolCatalog | None = None,
    client: AsyncToolplan | None = None,
) -> Starlette:
    """The GraphQL server as an ASGI app (serve it with uvicorn, or mount it in another app).

    It serves one :class:`~toolplan.client.AsyncToolplan`: ``client``, or one built from
    ``settings`` (default the environment's), ``store`` and ``catalog``. A store the client
    opened is closed at shutdown, a store given here is left to its owner. Shutdown cancels
    executions still running in the server (each resumes with ``executePlan``).
    """
    if client is None:
        client = AsyncToolplan(store=store, tools=catalog, settings=settings or Settings.from_env())
    api = api or ApiSettings.from_env()
    store = client.store
    client.catalog  # noqa: B018 - the tools load now: a broken tool module fails start-up
    context = ApiContext(client)
    view = _GraphQLView(context, api)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            # Every execution in the server shares one checkpointer connection.
            async with store.keep_checkpointer():
                try:
                    yield
                finally:
                    await context.close()
        finally:
            await client.aclose()

    guard = Middleware(BearerAuth, token=api.token) if api.token else Middleware(LoopbackHostOnly)
    app = Starlette(
        routes=[Route(GRAPHQL_PATH, view, methods=["GET", "POST"]), *ui_routes(context)],
        middleware=[
            Middleware(CatchAll),  # outermost: whatever escapes is still a JSON error
            guard,
            Middleware(BodySizeLimit, max_bytes=api.max_body_bytes),
        ],
        lifespan=lifespan,
    )
    app.state.toolplan = context
    return app
