"""A webhook receiver for tests: a small threaded HTTP server on 127.0.0.1 that records every POST,
answers the statuses a test chooses and can hold every request until the test lets it go (a slow
receiver); `receiving()`, one started for a block; and the README's signature check, as a receiver
writes it. Integration tests get it as the `receiver` fixture (tests/integration/conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TIMEOUT = 60.0  # a guard against hanging forever, never a synchronisation


def verify_signature(secret: str, headers: dict[str, str], body: bytes, tolerance: int = 300) -> bool:
    """The README's verification recipe, word for word (what a receiver writes)."""
    timestamp = headers["X-Rostrum-Timestamp"]
    if abs(time.time() - int(timestamp)) > tolerance:
        return False  # too old (or from the future): a replay
    expected = "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers["X-Rostrum-Signature"])


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that records every POST. `statuses`: the answers to give, in order
    (then 200); `hold`: cleared, every request waits for it to be set before answering."""

    loop: asyncio.AbstractEventLoop
    statuses: list[int] = field(default_factory=list)
    hold: threading.Event = field(default_factory=threading.Event)
    received: list[Received] = field(default_factory=list)
    arrivals: asyncio.Queue[Received] = field(default_factory=asyncio.Queue)
    server: ThreadingHTTPServer | None = None
    arrived: threading.Condition = field(default_factory=threading.Condition)  # for tests without a loop

    def __post_init__(self) -> None:
        self.hold.set()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/rostrum"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                record = Received({k: v for k, v in self.headers.items()}, body)
                with receiver.arrived:
                    receiver.received.append(record)
                    receiver.arrived.notify_all()
                receiver.loop.call_soon_threadsafe(receiver.arrivals.put_nowait, record)
                receiver.hold.wait(TIMEOUT)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"not today" if status >= 400 else b"ok")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.hold.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    async def next(self) -> Received:
        return await asyncio.wait_for(self.arrivals.get(), TIMEOUT)

    def wait_for_count(self, count: int) -> list[Received]:
        """(From a thread without an event loop.) Until `count` requests have arrived."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.received) >= count, TIMEOUT), self.received
            return list(self.received)


@contextlib.contextmanager
def receiving(loop: asyncio.AbstractEventLoop | None = None) -> Iterator[Receiver]:
    """A started receiver, stopped when the block ends. `loop`: the test's running loop, for `next()`.
    Without one (the code under test runs its own loop: the CLI's `main`, a browser test) it gets a loop
    of its own, closed at the end; wait on `received` or `wait_for_count` then."""
    own = loop is None
    made = Receiver(loop if loop is not None else asyncio.new_event_loop())
    made.start()
    try:
        yield made
    finally:
        made.stop()
        if own:
            made.loop.close()
