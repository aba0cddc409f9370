"""A small forward HTTP proxy for tests (stdlib only), run as its own process::

    python tests/support/http_proxy.py --log requests.jsonl     # prints PROXY_URL=http://127.0.0.1:N

Clients configured with ``HTTP_PROXY=http://127.0.0.1:N`` send it absolute-form requests
(``POST http://host:port/path HTTP/1.1``). It forwards each one to its origin on a new connection
(``Connection: close``), streams the response back as it arrives (server-sent events included),
then closes the client connection. Every request is appended to the log as one JSON line
(``{"method", "url"}``), so a test can prove that traffic went through the proxy, or did not.
Plain HTTP only: no ``CONNECT`` tunnels.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from urllib.parse import urlsplit


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while chunk := await reader.read(65536):
        writer.write(chunk)
        await writer.drain()


async def _handle(
    client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter, log: str
) -> None:
    try:
        head = await client_reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        client_writer.close()
        return
    request_line, *header_lines = head.decode("latin-1").split("\r\n")[:-2]
    method, target, version = request_line.split(" ", 2)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"method": method, "url": target}) + "\n")
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        client_writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await client_writer.drain()
        client_writer.close()
        return
    headers = [
        line
        for line in header_lines
        if line.split(":", 1)[0].strip().lower() not in ("connection", "proxy-connection")
    ]
    length = next(
        (
            int(line.split(":", 1)[1])
            for line in headers
            if line.lower().startswith("content-length:")
        ),
        0,
    )
    body = await client_reader.readexactly(length) if length else b""
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    upstream_reader, upstream_writer = await asyncio.open_connection(url.hostname, url.port or 80)
    upstream_writer.write(
        "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""]).encode(
            "latin-1"
        )
        + body
    )
    await upstream_writer.drain()
    try:
        await _pipe(upstream_reader, client_writer)
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        upstream_writer.close()
        client_writer.close()


async def _serve(log: str) -> None:
    server = await asyncio.start_server(
        lambda r, w: _handle(r, w, log), host="127.0.0.1", port=0, limit=1 << 20
    )
    port = server.sockets[0].getsockname()[1]
    print(f"PROXY_URL=http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", required=True, help="append one JSON line per request here")
    asyncio.run(_serve(parser.parse_args().log))


if __name__ == "__main__":
    sys.exit(main())
