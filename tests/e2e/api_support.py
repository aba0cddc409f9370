"""A real uvicorn server running the GraphQL API in a thread, and an httpx client for it.

Every response the client receives is checked for traceback text, so no test can forget to.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from toolplan.api import ApiSettings, create_app
from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.store import Store, open_store
from toolplan.tools import load_tool_modules

TOOL_MODULES = ("blog", "metrics", "weather", "tests.support.tools")
PLAN_ID = re.compile(r"^plan_\d{9,11}_[a-z0-9]{6,32}$")
REQUEST_ID = re.compile(r"^req_\d{9,11}_[a-z0-9]{6,32}$")
TRACE_MARKERS = ("Traceback", 'File "')


def assert_no_trace(response: httpx.Response) -> None:
    """No traceback text in a response (streamed ones are read by their test)."""
    if response.is_stream_consumed or "text/event-stream" not in response.headers.get(
        "content-type", ""
    ):
        text = response.read().decode("utf-8", "replace")
        for marker in TRACE_MARKERS:
            assert marker not in text, f"{marker!r} in response: {text[:2000]}"


class SpyStore:
    """Forwards to a real store and records the name of every method called."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.calls: list[str] = []

    @property
    def uri(self) -> str:
        return self._inner.uri

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            if name != "keep_checkpointer":  # the server's start-up; reads and writes nothing
                self.calls.append(name)
            return attribute(*args, **kwargs)

        return call


class GraphQLClient:
    """``httpx.Client`` for one server, plus ``gql`` for operations."""

    def __init__(self, base_url: str, *, token: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(
            base_url=base_url,
            headers=headers,
            timeout=30,
            event_hooks={"response": [assert_no_trace]},
        )

    def post(self, body: Any = None, **kwargs: Any) -> httpx.Response:
        """POST /graphql."""
        return self.http.post("/graphql", json=body, **kwargs)

    def gql(self, query: str, variables: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        """The JSON of a 200 response to one operation."""
        response = self.post({"query": query, "variables": variables or {}}, **kwargs)
        assert response.status_code == 200, response.text
        return response.json()

    def data(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        """``data`` of an operation that must succeed without errors."""
        body = self.gql(query, variables)
        assert "errors" not in body, body["errors"]
        return body["data"]

    def close(self) -> None:
        self.http.close()


@dataclass
class ApiServer:
    """uvicorn serving :func:`toolplan.api.create_app` on a free loopback port, in a thread."""

    store: Store
    api: ApiSettings = field(default_factory=ApiSettings)
    settings: Settings = field(default_factory=Settings)
    port: int = 0
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    def start(self) -> ApiServer:
        app = create_app(
            self.settings,
            api=self.api,
            store=self.store,
            catalog=load_tool_modules(self.settings.tool_modules),
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="api-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert self._thread.is_alive(), "the API server thread died while starting"
            assert time.monotonic() < deadline, "the API server did not start within 10 s"
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, *, token: str | None = None) -> GraphQLClient:
        """A client that sends ``token`` (none by default)."""
        return GraphQLClient(self.url, token=token)

    def stop(self) -> None:
        """Graceful shutdown: lifespan shutdown cancels the runs still going on."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=15)
            assert not self._thread.is_alive(), "the API server did not stop"


ServerFactory = Callable[..., ApiServer]


def server_factory(tmp_path: Path) -> Iterator[ServerFactory]:
    """Yield ``start(api=..., store=...)``; every server started is stopped afterwards."""
    started: list[ApiServer] = []
    stores: list[Store] = []
    store_uri = f"sqlite:///{tmp_path / 'api.db'}"

    def start(*, api: ApiSettings | None = None, store: Store | None = None) -> ApiServer:
        # Settings are read when the server starts, as `toolplan serve` does (the model's
        # configuration included), with the test's store, tools and fast retries.
        settings = replace(
            Settings.from_env(),
            store_uri=store_uri,
            tool_modules=TOOL_MODULES,
            execution=ExecutionOptions(retry=RetryPolicy(initial_backoff=0.001)),
        )
        if store is None:
            store = open_store(settings.store_uri, options=settings.store_options)
            stores.append(store)
        server = ApiServer(store, api or ApiSettings(), settings).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
        for store in stores:
            store.close()


def wait_for(predicate: Callable[[], Any], *, timeout: float = 10, what: str = "condition") -> Any:
    """Poll ``predicate`` (cheap, local) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
