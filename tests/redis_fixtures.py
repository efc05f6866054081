"""A real Redis for the tests: Debian's `redis-server` (`make test` installs it), on a free loopback
port, without persistence, in a temporary directory.

`redis_server` is one server for the whole session (tests share it: each uses its own debate ids, and
`redis_url` empties it first). A test that kills Redis starts its own with `RedisServer` (it can be
killed with SIGKILL and started again on the same port). Where the binary is missing, the tests that need
it are skipped, saying why; nothing else is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import unavailable

REDIS_BIN = Path(os.environ.get("ROSTRUM_TEST_REDIS_SERVER", "/usr/bin/redis-server"))
START_TIMEOUT = 10.0  # seconds for the server to accept connections


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    """Whether a Redis answers PING on `port` (plain RESP, no client library needed)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One `redis-server` process on loopback; `kill()` is a SIGKILL, `start()` starts it again."""

    def __init__(self) -> None:
        if not REDIS_BIN.exists():
            unavailable("redis", f"redis-server is not installed ({REDIS_BIN} is missing): run `make redis`")
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="rostrum-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(REDIS_BIN), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--logfile", str(self.dir / "server.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not _ping(self.port):  # polling a port: there is no event to await from another process
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = (self.dir / "server.log")
                details = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"could not start the test Redis on port {self.port}:\n{details}")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def running_redis() -> Iterator[RedisServer]:
    """A started Redis server, stopped (and its directory removed) on leaving."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A Redis server for this test session."""
    with running_redis() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The URL of the session's Redis, emptied for this test."""
    with socket.create_connection(("127.0.0.1", redis_server.port), timeout=2) as conn:
        conn.sendall(b"FLUSHALL\r\n")
        assert conn.recv(16).startswith(b"+OK")
    return redis_server.url


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A Redis server of this test's own, which it may kill and start again."""
    with running_redis() as server:
        yield server
