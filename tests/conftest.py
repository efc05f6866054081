"""Shared pytest configuration for every test directory."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from webapp.settings import get_settings

pytest_plugins = ["tests.fakellm_fixtures", "tests.pg_fixtures", "tests.redis_fixtures"]

LOCAL_HOSTS = ("127.0.0.1", "::1", "localhost")


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    """No test leaves its environment's settings cached for the next (e.g. endpoints it registered)."""
    yield
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def no_internet(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches the internet: resolving or connecting to anything but this machine fails loudly
    (in this process; browser and CLI subprocesses are pointed at localhost by their tests)."""
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def check(host: Any) -> None:
        if isinstance(host, bytes):
            host = host.decode()
        if isinstance(host, str) and host not in LOCAL_HOSTS:
            raise AssertionError(f"a test tried to reach {host}")

    def connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple):
            check(address[0])
        return real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        check(host)
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
