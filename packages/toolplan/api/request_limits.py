"""Request limits: body size (ASGI, before parsing), query length, tokens, depth and aliases."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from graphql import (
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    ValidationContext,
    ValidationRule,
    visit,
)
from graphql.language import Visitor
from strawberry.extensions import (
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
    SchemaExtension,
)

from toolplan.api.errors import send_error
from toolplan.api.settings import ApiSettings

__all__ = ["BodySizeLimit", "DepthLimiter", "QueryLengthLimiter", "limit_extensions"]

Scope = dict[str, Any]


class QueryLengthLimiter(SchemaExtension):
    """Refuse a GraphQL document longer than ``max_chars`` before it is parsed."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def on_operation(self) -> Iterator[None]:
        """Check the length first; parsing and validation come after."""
        query = self.execution_context.query or ""
        if len(query) > self.max_chars:
            raise GraphQLError(
                f"the query is {len(query)} characters long; the limit is {self.max_chars}",
                extensions={"code": "GRAPHQL_VALIDATION_FAILED"},
            )
        yield


def _has_undefined_fragments(context: ValidationContext) -> bool:
    document = context.document
    defined = {
        node.name.value for node in document.definitions if isinstance(node, FragmentDefinitionNode)
    }
    spread: set[str] = set()

    class Spreads(Visitor):
        def enter_fragment_spread(self, node: FragmentSpreadNode, *_: object) -> None:
            spread.add(node.name.value)

    visit(document, Spreads())
    return not spread <= defined


class DepthLimiter(QueryDepthLimiter):
    """strawberry's depth limit, minus its crash: its rule looks every spread fragment up and
    raised ``KeyError`` (an internal error) for ``{ ...Missing }``. Such a document is left to
    graphql-core's own rule, which reports the undefined fragment as a validation error."""

    def __init__(self, max_depth: int) -> None:
        super().__init__(max_depth=max_depth)
        depth_rule: Any = self.validation_rules[0]

        class Guarded(depth_rule):
            def __init__(self, context: ValidationContext) -> None:
                if _has_undefined_fragments(context):
                    ValidationRule.__init__(self, context)
                else:
                    super().__init__(context)

        self.validation_rules = [Guarded]


def limit_extensions(settings: ApiSettings) -> list[Callable[[], SchemaExtension]]:
    """Factories of the strawberry extensions that enforce the document limits of ``settings``
    (strawberry builds fresh extensions for every operation)."""
    return [
        partial(QueryLengthLimiter, settings.max_query_chars),
        partial(MaxTokensLimiter, max_token_count=settings.max_tokens),
        partial(DepthLimiter, max_depth=settings.max_depth),
        partial(MaxAliasesLimiter, max_alias_count=settings.max_aliases),
    ]


class BodySizeLimit:
    """ASGI middleware: 413 for bodies over ``max_bytes``; nothing downstream sees them.

    A declared ``Content-Length`` over the limit is refused without reading; otherwise the body
    is read (at most ``max_bytes``) and handed on whole.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next(
            (value for name, value in scope.get("headers", ()) if name == b"content-length"), None
        )
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())  # later calls wait for the disconnect

        await self.app(scope, replay, send)

    async def _reject(self, send: Any) -> None:
        message = f"the request body is larger than the limit of {self.max_bytes} bytes"
        # Close the connection: the rest of the body was never read.
        await send_error(send, 413, "PAYLOAD_TOO_LARGE", message, (b"connection", b"close"))
