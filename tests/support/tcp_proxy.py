"""A TCP proxy in its own process, to take a server away from its clients and bring it back.

jongodb keeps its data in memory, so killing it loses every plan. Killing this proxy instead is
what a client sees when a persistent MongoDB dies: connections reset, the port refuses, and after
a restart on the same port the same data is there again.

Run as a script: ``python -m tests.support.tcp_proxy LISTEN_PORT TARGET_HOST TARGET_PORT``
(``LISTEN_PORT`` 0 picks a free one); it prints ``PROXY_PORT=<port>`` once it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["TcpProxy"]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _serve(listen_port: int, host: str, port: int) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, server_w), _pipe(server_r, client_w))

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, reuse_address=True)
    print(f"PROXY_PORT={server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


_REPO = Path(__file__).resolve().parents[2]


class TcpProxy:
    """A proxy process in front of ``host:port``; ``kill`` it (SIGKILL) and ``restart`` it on the
    same port."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> TcpProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def start(self, *, retry_for: float = 5.0) -> None:
        """Start listening (on the same port as before, after a kill)."""
        deadline = time.monotonic() + retry_for
        while True:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.support.tcp_proxy",
                    str(self.port),
                    *map(str, self.target),
                ],
                cwd=_REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert process.stdout is not None
            line = process.stdout.readline()
            if line.startswith("PROXY_PORT="):
                self.port = int(line.strip().split("=", 1)[1])
                self._process = process
                return
            process.kill()
            _, err = process.communicate(timeout=10)
            if time.monotonic() > deadline:
                raise RuntimeError(f"the TCP proxy did not start: {err.strip()}")
            time.sleep(0.1)  # the old socket may still hold the port for a moment

    def kill(self) -> None:
        """SIGKILL the proxy: every connection through it drops, the port refuses."""
        if self._process is not None:
            self._process.kill()
            self._process.communicate(timeout=10)
            self._process = None


if __name__ == "__main__":
    listen, host, target = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(listen, host, target))
