"""scripts/eval_real_llm.py's logging proxy passes a streamed answer on as it comes.

The planner reads its answer while the model writes it: it shows each step and stops a runaway
by hanging up. A proxy that waited for the whole answer would make the evaluation measure
neither."""

from __future__ import annotations

import importlib.util
import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "eval_real_llm.py"
_spec = importlib.util.spec_from_file_location("eval_real_llm", _SCRIPT)
assert _spec is not None and _spec.loader is not None
eval_real_llm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eval_real_llm)


def _chunk(text: str) -> bytes:
    data = {"choices": [{"delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


class _Endless(BaseHTTPRequestHandler):
    """A model that writes forever, until its client hangs up."""

    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.server.started.set()
        written = 0
        try:
            while written < 1_000_000 and not self.server.stop.is_set():
                piece = _chunk("loop ")
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                written += 1
                self.server.stop.wait(0.01)
        except OSError:
            self.server.hung_up.set()


@pytest.fixture
def endless() -> Iterator[Any]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    httpd.daemon_threads = True
    httpd.started, httpd.stop, httpd.hung_up = (
        threading.Event(),
        threading.Event(),
        threading.Event(),
    )
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd
    httpd.stop.set()
    httpd.shutdown()
    httpd.server_close()


def _post(url: str) -> Any:
    body = json.dumps({"model": "m", "stream": True, "messages": []}).encode()
    request = urllib.request.Request(
        url + "/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    return urllib.request.urlopen(request, timeout=30)


def test_a_stream_comes_through_before_it_ends_and_a_hang_up_reaches_the_model(
    endless: Any, tmp_path: Path
) -> None:
    log = tmp_path / "llm-log.jsonl"
    upstream = f"http://127.0.0.1:{endless.server_address[1]}/v1"
    with eval_real_llm.logging_proxy(upstream, log) as proxied:
        answer = _post(proxied)
        first = answer.readline()  # arrives while the model is still writing
        assert first.startswith(b"data: ") and b"loop" in first
        answer.close()  # the planner stopping a runaway
        assert endless.hung_up.wait(30), "the model never saw the hang-up"
    line = eval_real_llm.read_log(log)[-1]
    assert line["clientClosed"] is True
    assert line["response"]["choices"][0]["message"]["content"].startswith("loop loop")
