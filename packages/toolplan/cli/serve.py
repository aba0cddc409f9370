"""``toolplan serve``: the GraphQL API (and GraphiQL) and the plan page over HTTP, served by
uvicorn."""

from __future__ import annotations

import copy
from typing import Annotated, Any

import typer

from toolplan.cli.options import (
    McpOption,
    ModelOption,
    StoreOption,
    TemporalAddressOption,
    ToolsOption,
)
from toolplan.cli.output import guard, stderr

__all__ = ["serve"]

GRACEFUL_SHUTDOWN_SECONDS = 5
"""On SIGTERM, requests still open after this long (a long ``executePlan(wait: true)``, an event
stream) are cut; executions running in the server are cancelled and resume with ``executePlan``."""


def _log_config() -> dict[str, Any]:
    """uvicorn's logging, plus toolplan's API log (errors with their reference, run endings)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["toolplan"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config


def serve(
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on. Anything but loopback needs $TOOLPLAN_API_TOKEN.",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port.")] = 8000,
    tools: ToolsOption = None,
    store: StoreOption = None,
    temporal_address: TemporalAddressOption = None,
    mcp: McpOption = None,
    model: ModelOption = None,
) -> None:
    """Serve the GraphQL API at /graphql (GraphiQL in a browser) and the plan page at /ui/plans
    until interrupted.

    With $TOOLPLAN_API_TOKEN set, every request needs 'Authorization: Bearer <token>' (the plan
    page asks for it); without it the server answers this machine only.
    """

    def body() -> None:
        from toolplan.cli.session import new_client
        from toolplan.errors import ToolplanError

        try:
            import uvicorn

            from toolplan.api import TOKEN_ENV, ApiSettings, check_bind, create_app
        except ImportError as error:
            raise ToolplanError(
                f"toolplan serve needs strawberry's ASGI support and uvicorn ({error}); install "
                "them with: pip install 'strawberry-graphql[asgi]' uvicorn"
            ) from None

        api = ApiSettings.from_env(host=host, port=port)
        check_bind(api)
        with new_client(
            store, tools, temporal_address=temporal_address, mcp=mcp, model=model
        ) as client:
            settings, opened, catalog = client.settings, client.store, client.catalog
            application = create_app(api=api, client=client)
            shown = f"[{host}]" if ":" in host else host
            stderr.print(
                f"toolplan API: http://{shown}:{port}/graphql (GraphiQL in a browser), "
                f"plans at http://{shown}:{port}/ui/plans; "
                f"store {opened.uri}; {len(catalog)} tools"
                + (f"; planning with {model}" if model else "")
                + (
                    f"; plans run on Temporal at {settings.temporal.address}"
                    if settings.temporal.enabled
                    else ""
                ),
                highlight=False,
            )
            if api.token:
                stderr.print(f"every request needs 'Authorization: Bearer <{TOKEN_ENV}>'")
            else:
                stderr.print(
                    f"no {TOKEN_ENV}: no authentication, so only this machine may connect "
                    f"(listening on {host}); set {TOKEN_ENV} to require a bearer token",
                    highlight=False,
                )
            try:
                # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal.
                uvicorn.run(
                    application,
                    host=host,
                    port=port,
                    log_config=_log_config(),
                    timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
                )
            except KeyboardInterrupt:
                raise typer.Exit(130) from None

    guard(body, as_json=False)
