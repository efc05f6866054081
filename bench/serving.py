"""Start a server as a subprocess for a benchmark, wait until it answers, stop it however the run ends.

Shared by `startup.py` and `startup_imports.py` (main.py to its first HTTP 200), `local_server.py`
(llama-cpp-python until `/v1/models` answers) and `scale_services.py` (`stop`). Scripts in bench/
import it as a sibling module (`from serving import …`), the way they are run: `python bench/startup.py`.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any


class NotServing(RuntimeError):
    """The server did not answer in time, or exited first (`exited` says which)."""

    def __init__(self, message: str, exited: bool) -> None:
        super().__init__(message)
        self.exited = exited


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether `GET url` answers 200 now (not listening yet, a refused or timed-out request: False)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except OSError:  # URLError, ConnectionError and TimeoutError are all OSErrors
        return False


def wait_until_answering(process: subprocess.Popen[Any], url: str, *, timeout: float, interval: float,
                         started: float | None = None, request_timeout: float | None = None) -> float:
    """Poll `url` every `interval` seconds until it answers 200; the seconds since `started` (default: now,
    `time.perf_counter`). Each request may take `request_timeout` (default: `timeout`, so a slow first
    answer counts, not a retry). Raises `NotServing` when the process exits first or `timeout` passes."""
    started = time.perf_counter() if started is None else started
    while True:
        if answers(url, timeout=timeout if request_timeout is None else request_timeout):
            return time.perf_counter() - started
        if process.poll() is not None:
            raise NotServing(f"the server exited with {process.returncode} before answering", exited=True)
        if time.perf_counter() - started > timeout:
            raise NotServing(f"no HTTP 200 from {url} within {timeout:g} s", exited=False)
        time.sleep(interval)  # polling a port that is not open yet: there is no event to await


def stop(process: subprocess.Popen[Any], grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `grace` seconds; returns once it has ended."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def running(args: list[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`subprocess.Popen(args, **popen)`, stopped (`stop`) when the block ends, whatever happened in it."""
    process = subprocess.Popen(args, **popen)
    try:
        yield process
    finally:
        stop(process)
