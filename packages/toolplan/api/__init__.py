"""The GraphQL API (``toolplan serve``): a thin layer over :mod:`toolplan.service.operations`.

Build the ASGI app with :func:`create_app` (uvicorn serves it; tests build it in-process) or the
bare schema with :func:`build_schema`. Needs strawberry's ASGI extra (starlette).
"""

from toolplan.api.app import GRAPHQL_PATH, create_app
from toolplan.api.auth import check_bind, is_loopback
from toolplan.api.context import ApiContext
from toolplan.api.schema import build_schema
from toolplan.api.settings import TOKEN_ENV, ApiSettings

__all__ = [
    "GRAPHQL_PATH",
    "TOKEN_ENV",
    "ApiContext",
    "ApiSettings",
    "build_schema",
    "check_bind",
    "create_app",
    "is_loopback",
]
