"""A tiny local OpenAI-compatible HTTP server for tests (stdlib only, no network).

It serves ``POST /v1/chat/completions`` (plain or ``stream=true`` SSE, the text in
``Reply.pieces`` chunks; ``FakeOpenAIServer(streaming="refuse")`` answers a streamed request
400 without taking a reply, ``streaming="ignore"`` answers it as a plain one) and
``GET /v1/models`` on ``127.0.0.1`` and answers from a FIFO script of replies,
recording every request so tests can assert what the client sent::

    from langchain_openai import ChatOpenAI
    from tests.support.fake_openai import FakeOpenAIServer, Reply

    class City(BaseModel):
        name: str

    with FakeOpenAIServer(api_key="sk-test") as srv:
        srv.script([
            Reply.error(429, retry_after=0.01),  # retried quickly by the client
            Reply.structured({"name": "Paris"}, usage=(12, 3)),  # tool call or JSON text
            Reply.tool_call("search", {"q": "louvre"}),  # id "call_1"
        ])
        llm = ChatOpenAI(base_url=srv.base_url, api_key="sk-test", model="gpt-4o-mini")
        assert llm.with_structured_output(City).invoke("capital?") == City(name="Paris")
        assert srv.requests[-1]["response_format"]["type"] == "json_schema"
        assert srv.request_headers[-1]["x-stainless-retry-count"] == "1"

Script entries are :class:`Reply` objects or callables ``fn(request_json) -> Reply``.
An empty queue answers 500 "fake server: no scripted reply left" with
``x-should-retry: false`` so the openai client fails fast instead of retrying.

Retry timing (openai client): ``retry-after-ms`` / ``retry-after`` headers with a
value in ``(0, 120]`` seconds are honoured verbatim; otherwise the client sleeps
0.5 s * 2**n with jitter.  ``Reply.error(..., retry_after=0.01)`` keeps tests fast.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "Reply", "ScriptEntry"]

_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_denied", None),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the classmethods, not directly."""

    kind: str  # "content" | "tool_call" | "structured" | "error"
    text: str = ""
    name: str = ""
    arguments: str = ""
    obj: Any = None
    usage: tuple[int, int] = (10, 5)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    cached: int | None = None
    """Prompt tokens reported as read from the server's cache (``prompt_tokens_details``)."""
    finish_reason: str | None = None
    """Overrides ``stop``/``tool_calls``, e.g. ``length`` for an answer cut off at max_tokens.
    Such an answer reports the request's limit as its output tokens, as a server does, unless
    ``context_full``."""
    context_full: bool = False
    """With ``finish_reason="length"``: the answer ended because the prompt and the answer filled
    the server's context window, so it reports ``usage`` as given, short of the request's limit."""
    pieces: int = 3
    """How many chunks a streamed answer's text (content or arguments) is sent in."""
    delay: float = 0.0
    """Seconds before the answer starts (a local model reading its prompt)."""
    gap: float = 0.0
    """Seconds before each chunk of a streamed answer (a model writing slowly)."""
    hold: Callable[[int], None] | None = field(default=None, compare=False)
    """Called (in the server's thread) before each event of a streamed answer is sent, with its
    index: a test holds the answer there until what it waits for happened (no sleeps)."""

    def with_(self, **changes: Any) -> Reply:
        """A copy with ``cached`` / ``finish_reason`` (or other fields) changed."""
        return replace(self, **changes)

    @classmethod
    def content(cls, text: str, *, usage: tuple[int, int] = (10, 5)) -> Reply:
        """Plain assistant text (also the answer shape for json_schema/json_object)."""
        return cls("content", text=text, usage=usage)

    @classmethod
    def tool_call(
        cls, name: str, arguments: dict[str, Any] | str, *, usage: tuple[int, int] = (10, 5)
    ) -> Reply:
        """Assistant message with a single function ``tool_calls`` entry."""
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls("tool_call", name=name, arguments=args, usage=usage)

    @classmethod
    def structured(cls, obj: Any, *, usage: tuple[int, int] = (10, 5)) -> Reply:
        """Tool call to the function named by ``tool_choice`` if any, else JSON content."""
        return cls("structured", obj=obj, usage=usage)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "fake server error",
        *,
        retry_after: float | None = None,
        should_retry: bool | None = None,
        type: str | None = None,
        code: str | None = None,
    ) -> Reply:
        """HTTP error in OpenAI's ``{"error": {...}}`` shape.

        ``retry_after`` (seconds, must be > 0 to be honoured) sets ``retry-after-ms``
        and ``retry-after``; ``should_retry`` sets the ``x-should-retry`` header.
        """
        etype, ecode = _ERROR_KINDS.get(status, ("server_error", None))
        body = {"message": message, "type": type or etype, "param": None, "code": code or ecode}
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["retry-after-ms"] = str(int(retry_after * 1000))
            headers["retry-after"] = f"{retry_after:g}"
        if should_retry is not None:
            headers["x-should-retry"] = "true" if should_retry else "false"
        return cls("error", obj={"error": body}, status=status, headers=headers)

    def resolve(self, request: dict[str, Any]) -> Reply:
        """Turn a ``structured`` reply into a concrete one for ``request``."""
        if self.kind != "structured":
            return self
        choice = request.get("tool_choice")
        fn = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        tools = request.get("tools") or []
        if fn is None and "response_format" not in request and len(tools) == 1:
            fn = tools[0].get("function", {}).get("name")
        if fn:
            concrete = Reply.tool_call(fn, self.obj, usage=self.usage)
        else:
            concrete = Reply.content(json.dumps(self.obj), usage=self.usage)
        return replace(
            concrete,
            cached=self.cached,
            finish_reason=self.finish_reason,
            context_full=self.context_full,
            pieces=self.pieces,
            delay=self.delay,
            gap=self.gap,
            hold=self.hold,
        )


ScriptEntry = Reply | Callable[[dict[str, Any]], Reply]


def _pieces(text: str, n: int = 3) -> list[str]:
    """Split ``text`` into up to ``n`` non-empty, roughly equal pieces."""
    step = max(1, -(-len(text) // n))
    return [text[i : i + step] for i in range(0, len(text), step)]


class FakeOpenAIServer:
    """Scripted OpenAI-compatible server on ``127.0.0.1:<free port>`` (daemon thread)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: Iterable[str] = ("gpt-4o-mini",),
        streaming: str = "sse",
    ):
        self.api_key = api_key
        self.streaming = streaming
        """``sse`` (streams), ``refuse`` (400 to ``stream=true``), ``ignore`` (plain JSON)."""
        self.models = list(models)
        self._lock = threading.Lock()
        self._queue: deque[ScriptEntry] = deque()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._counter = 0  # chat completions answered -> chatcmpl-fake-<n>
        self._calls = 0  # tool calls emitted -> call_<n>
        self._connections = 0  # TCP connections accepted (each keeps alive: HTTP/1.1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.02,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- script & recordings -------------------------------------------------
    def script(self, replies: Iterable[ScriptEntry]) -> None:
        """Replace the reply queue (FIFO)."""
        with self._lock:
            self._queue = deque(replies)

    def enqueue(self, *replies: ScriptEntry) -> None:
        """Append replies to the queue."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        """Number of scripted replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Snapshot of every POSTed JSON body, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """Headers (lower-cased names) parallel to :attr:`requests`."""
        with self._lock:
            return list(self._headers)

    @property
    def connections(self) -> int:
        """TCP connections accepted so far: a client that keeps its connection alive sends
        every request over one."""
        with self._lock:
            return self._connections

    def _connected(self) -> None:
        with self._lock:
            self._connections += 1

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)

    def _next(self) -> tuple[ScriptEntry | None, int]:
        with self._lock:
            self._counter += 1
            return (self._queue.popleft() if self._queue else None), self._counter

    def _call_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call_{self._calls}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every response has Content-Length
    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        pass

    def setup(self) -> None:
        super().setup()
        self.server.fake._connected()

    def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json", headers or {})

    def _error(self, reply: Reply) -> None:
        self._json(reply.status, reply.obj, reply.headers)

    def _authorized(self) -> bool:
        key = self.server.fake.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._error(Reply.error(401, "Incorrect API key provided (fake server)."))
        return False

    def do_GET(self) -> None:
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/v1/models":
            return self._error(Reply.error(404, f"Unknown path {self.path}"))
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
            for m in self.server.fake.models
        ]
        self._json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        try:
            self._post()
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (its timeout, during a reply's `delay` or `gap`): what
            # a real server sees too; not a traceback on the next test's stderr.
            self.close_connection = True

    def _post(self) -> None:
        fake: FakeOpenAIServer = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._error(Reply.error(400, "Request body is not valid JSON"))
        fake._record(body, {k.lower(): v for k, v in self.headers.items()})
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._error(Reply.error(404, f"Unknown path {self.path}"))
        if body.get("stream") and fake.streaming == "refuse":
            return self._error(Reply.error(400, "streaming is not supported", should_retry=False))
        entry, n = fake._next()
        if entry is None:
            return self._error(
                Reply.error(500, "fake server: no scripted reply left", should_retry=False)
            )
        try:
            reply = (entry if isinstance(entry, Reply) else entry(body)).resolve(body)
        except Exception as exc:  # surface bugs in dynamic replies to the test
            return self._error(
                Reply.error(500, f"fake server: reply callable failed: {exc!r}", should_retry=False)
            )
        if reply.kind == "error":
            return self._error(reply)
        reply = _counted(reply, body)
        base = {
            "id": f"chatcmpl-fake-{n}",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
        }
        call_id = fake._call_id() if reply.kind == "tool_call" else ""
        if reply.delay:
            time.sleep(reply.delay)
        if body.get("stream") and fake.streaming == "sse":
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = [f"data: {json.dumps(c)}\n\n" for c in _chunks(base, reply, call_id, usage)]
            events.append("data: [DONE]\n\n")
            if not reply.gap and reply.hold is None:
                self._send(200, "".join(events).encode(), "text/event-stream", {})
                return
            # Headers at once, then each event after its gap (Content-Length known up front).
            body_bytes = [event.encode() for event in events]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(sum(map(len, body_bytes))))
            self.end_headers()
            self.wfile.flush()
            for index, event in enumerate(body_bytes):
                if reply.hold is not None:
                    reply.hold(index)
                time.sleep(reply.gap)
                self.wfile.write(event)
                self.wfile.flush()
        else:
            self._json(200, _completion(base, reply, call_id))


def _counted(reply: Reply, body: dict[str, Any]) -> Reply:
    """``reply`` with the output tokens a server reports for it: an answer cut off at the
    request's limit (``finish_reason: length``) wrote exactly that many."""
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    if reply.finish_reason != "length" or reply.context_full or not isinstance(limit, int):
        return reply
    return replace(reply, usage=(reply.usage[0], limit))


def _usage(reply: Reply) -> dict[str, Any]:
    p, c = reply.usage
    usage: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
    if reply.cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached}
    return usage


def _finish(reply: Reply) -> str:
    if reply.finish_reason:
        return reply.finish_reason
    return "tool_calls" if reply.kind == "tool_call" else "stop"


def _completion(base: dict[str, Any], reply: Reply, call_id: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.kind == "tool_call":
        fn = {"name": reply.name, "arguments": reply.arguments}
        message.update(
            content=None, tool_calls=[{"id": call_id, "type": "function", "function": fn}]
        )
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
    return {**base, "object": "chat.completion", "choices": [choice], "usage": _usage(reply)}


def _chunks(
    base: dict[str, Any], reply: Reply, call_id: str, include_usage: bool
) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        out = {**base, "object": "chat.completion.chunk", "choices": [choice]}
        return {**out, "usage": None} if include_usage else out

    if reply.kind == "tool_call":
        fn = {"name": reply.name, "arguments": ""}
        call = {"index": 0, "id": call_id, "type": "function", "function": fn}
        yield chunk({"role": "assistant", "content": None, "tool_calls": [call]})
        for piece in _pieces(reply.arguments, reply.pieces):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    else:
        yield chunk({"role": "assistant", "content": "", "refusal": None})
        for piece in _pieces(reply.text, reply.pieces):
            yield chunk({"content": piece})
    yield chunk({}, _finish(reply))
    if include_usage:
        yield {**base, "object": "chat.completion.chunk", "choices": [], "usage": _usage(reply)}
