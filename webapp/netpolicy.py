"""Which network addresses Rostrum may connect to, for every request to a URL someone typed in.

One policy for the two guards against server-side request forgery: model servers
(`webapp.providers.netguard`) and webhooks (`webapp.webhooks.guard`). Each guard keeps its own switch
for private addresses (a registered model endpoint or the single-user instance; `ROSTRUM_WEBHOOK_ALLOW_PRIVATE`)
and its own error and wording; the classes, the IPv4 addresses hidden inside IPv6 and resolving a host
once are decided here only, so the two cannot drift apart.

- **blocked**, never called whoever asks: link-local (where clouds serve instance metadata and
  credentials), the metadata addresses that are not link-local (AWS over IPv6, Alibaba, Oracle), and
  addresses no server is reached at (unspecified, multicast, reserved, "this network").
- **private**: this machine or a private network, or anything else that is not on the internet.
- **public**: the rest.

An IPv4 address inside IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged
as the IPv4 address it carries: the connection ends up there.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Literal

Reach = Literal["blocked", "private", "public"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

BLOCKED_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32", "192.0.0.192/32",
    "0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4", "ff00::/8", "::/128",
))
PRIVATE_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
    "fc00::/7", "198.18.0.0/15", "192.0.0.0/24",
))
NAT64 = ipaddress.ip_network("64:ff9b::/96")


def unwrap(ip: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped, NAT64 or 6to4 IPv6 address; any other address itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour is not None:  # Python counts 2002::/16 as global, whatever it carries
            return ip.sixtofour
    return ip


def reach(ip: IPAddress) -> Reach:
    """Whether an address is never to be called, private (this machine or a private network), or public."""
    ip = unwrap(ip)
    if ip.is_link_local or ip.is_multicast or ip.is_unspecified or any(ip in n for n in BLOCKED_NETWORKS):
        return "blocked"
    if ip.is_loopback or ip.is_private or any(ip in n for n in PRIVATE_NETWORKS) or not ip.is_global:
        return "private"
    return "public"


def refusal(addresses: Iterable[IPAddress], allow_private: bool) -> tuple[IPAddress, Reach] | None:
    """The first address that may not be connected to, with its class; None when every one may. A name
    that points anywhere it must not is refused outright, whatever else it points at."""
    for ip in addresses:
        kind = reach(ip)
        if kind == "blocked" or (kind == "private" and not allow_private):
            return ip, kind
    return None


def parse_address(text: str) -> IPAddress:
    """An address as a resolver or a URL writes it (`[::1]`, `fe80::1%eth0`: the zone is not part of it)."""
    return ipaddress.ip_address(text.strip("[]").split("%")[0])


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to now (the system resolver, off the event loop), without repeats.
    A name the resolver cannot encode is an `OSError` like any other failed lookup."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:
        raise OSError(f"not a valid host name ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def resolve_once(host: str, port: int, resolver: Resolver | None = None) -> list[str]:
    """The addresses to check and then connect to: a literal address is itself (nothing to look up), a
    name is resolved once, here. Raises `OSError` when the lookup fails."""
    try:
        return [str(parse_address(host))]
    except ValueError:
        return await (resolver or system_resolver)(host, port)
