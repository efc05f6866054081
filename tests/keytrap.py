"""A listener standing where a key must not go: a tiny asyncio HTTP server (in its own thread) that records
every request's method, path, Host and Authorization header, and answers 401 — or a redirect, to test
that one is not followed."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field


@dataclass
class Seen:
    """One request the trap received."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


class KeyTrap:
    """`with KeyTrap() as trap:` … `trap.requests` (every request seen), `trap.url` (its root)."""

    def __init__(self, redirect_to: str | None = None) -> None:
        self.redirect_to = redirect_to
        self.requests: list[Seen] = []
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="keytrap")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> KeyTrap:
        self._thread.start()
        assert self._ready.wait(10), "the key trap did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                if length:
                    await reader.readexactly(length)
                self.requests.append(Seen(method, path, headers))
                if self.redirect_to:
                    head = f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {self.redirect_to}{path}\r\n"
                    body = b""
                else:
                    body = b'{"error": {"message": "trapped", "type": "invalid_request_error"}}'
                    head = "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()
