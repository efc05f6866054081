"""The HTTP client every provider call, "Test connection" and Settings check goes through.

It enforces at connection time what `webapp.providers.endpoints` decided for a route:

- **One origin.** A client is made for one base URL and refuses a request to any other scheme, host or
  port, so a model server's redirect (or anything else) cannot send the server elsewhere. Redirects
  are not followed at all.
- **Resolved once, connected to that address.** A host name is resolved when a connection is opened;
  every address it resolved to is checked (link-local and metadata addresses never, loopback and private
  ones only when the route allows them: the address classes are `webapp.netpolicy`'s, shared with the
  webhooks' guard), and the connection is made to the checked address itself, so a name that answers
  differently a moment later (DNS rebinding) changes nothing. The Host header and TLS server name stay
  the host's name, so certificates are still verified against it.

The vendor SDKs take this client as `http_client` (both are built on httpx2).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import httpcore2
import httpx2

from webapp.netpolicy import Resolver, parse_address, refusal, resolve_once
from webapp.providers.endpoints import parse_url

# The SDKs' own pool sizes (hundreds of debates may share one hosted provider).
LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)


class BlockedAddress(ConnectionRefusedError):
    """A connection Rostrum refused to open (a metadata, link-local or private address, or another host)."""


def vet(addresses: Iterable[str], host: str, allow_private: bool) -> list[str]:
    """The addresses that may be connected to, in order; raises `BlockedAddress` unless all may (a name
    that points anywhere it must not is refused outright, whatever else it points at)."""
    allowed = list(addresses)
    refused = refusal((parse_address(text) for text in allowed), allow_private)
    if refused is not None:
        ip, kind = refused
        if kind == "blocked":
            raise BlockedAddress(f"{host} resolves to {ip}, a link-local or cloud-metadata address, which "
                                 "Rostrum never calls")
        raise BlockedAddress(f"{host} resolves to {ip}, an address on this machine or a private network: "
                             "only endpoints an admin registered may be there")
    if not allowed:
        raise BlockedAddress(f"{host} did not resolve to any address")
    return allowed


class PinnedBackend(httpcore2.AsyncNetworkBackend):
    """Opens TCP connections only to addresses `vet` passed, resolving each host once per connection."""

    def __init__(self, allow_private: bool, resolver: Resolver | None = None) -> None:
        self.allow_private = allow_private
        self.resolver = resolver  # None: the system's (`webapp.netpolicy.system_resolver`)
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> Any:
        try:
            addresses = await asyncio.wait_for(resolve_once(host, port, self.resolver), timeout)
        except OSError as exc:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from exc
        failure: Exception | None = None
        for address in vet(addresses, host, self.allow_private):  # e.g. ::1 then 127.0.0.1 for localhost
            try:
                return await self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                     socket_options=socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> Any:
        raise BlockedAddress("Rostrum does not call model servers over Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@lru_cache(maxsize=1)
def default_ssl_context() -> ssl.SSLContext:
    """The verifying TLS context every guarded client shares, made once per process (SSL_CERT_FILE is
    honoured then). Making one loads the whole CA bundle, ~35 ms of CPU, and a provider — so a client —
    is made for each seat of each debate; one context serves any number of connections."""
    return httpx2.create_ssl_context()


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport, connecting through `PinnedBackend` and only to `base_url`'s origin."""

    def __init__(self, base_url: str, allow_private: bool, resolver: Resolver | None = None,
                 limits: httpx2.Limits = LIMITS, ssl_context: ssl.SSLContext | None = None) -> None:
        context = ssl_context or default_ssl_context()
        super().__init__(verify=context, trust_env=False, limits=limits)  # not a second context of its own
        self.origin = parse_url(base_url).origin
        # The pool httpx2 made has the default network backend: replace it with one that pins addresses
        # (httpx2's transport takes no backend argument; its pool is the one attribute it reads).
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=PinnedBackend(allow_private, resolver),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        scheme = request.url.scheme.lower()
        port = request.url.port or (443 if scheme == "https" else 80)
        if (scheme, request.url.host.lower().rstrip("."), port) != self.origin:
            raise BlockedAddress(f"refused a request to {request.url.scheme}://{request.url.netloc.decode()}: "
                                 "this client only calls its own endpoint (a redirect to another host?)")
        return await super().handle_async_request(request)


def guarded_client(base_url: str, allow_private: bool, *, timeout: Any = None, resolver: Resolver | None = None,
                   ssl_context: ssl.SSLContext | None = None) -> httpx2.AsyncClient:
    """An httpx2 client for one endpoint: pinned addresses, its own origin only, no redirects, no proxy
    taken from the environment. `resolver` and `ssl_context`: tests (a stub resolver, a test CA)."""
    return httpx2.AsyncClient(transport=GuardedTransport(base_url, allow_private, resolver, ssl_context=ssl_context),
                              timeout=timeout if timeout is not None else httpx2.Timeout(600.0, connect=10.0),
                              follow_redirects=False, trust_env=False)


def blocked_cause(exc: BaseException | None) -> BlockedAddress | None:
    """The `BlockedAddress` behind an error an SDK or httpx2 wrapped around it, if any."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, BlockedAddress):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None
