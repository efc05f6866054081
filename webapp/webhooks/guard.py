"""No server-side request forgery through webhooks: an endpoint must resolve to public addresses only.

`resolve_target` is the one check: it resolves the URL's host once, refuses it when any address it
resolves to is link-local or a cloud-metadata address (always), or loopback, private, shared, reserved
or otherwise not on the internet (unless private addresses are allowed: `ROSTRUM_WEBHOOK_ALLOW_PRIVATE=1`),
and returns the addresses to connect to. The address classes are `webapp.netpolicy`'s, the same the
model servers' guard (`webapp.providers.netguard`) uses; only the switch for private addresses differs.
The sender then connects to exactly that address (the request keeps the host name in its `Host` header
and, for https, in TLS's SNI and certificate check), so a name that resolves differently a moment later
(DNS rebinding) cannot send the request elsewhere. Redirects are not followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webapp.netpolicy import IPAddress, Resolver, parse_address, reach, refusal, resolve_once

if TYPE_CHECKING:  # httpx is loaded on first use, not at start-up (bench/README.md, "Start-up")
    import httpx


class WebhookRefused(ValueError):
    """An endpoint URL that may not be used (not http(s), no host, or a private address)."""


@dataclass(frozen=True)
class Target:
    """Where one request goes: `urls`, the URL with its host replaced by each checked address in the
    order the resolver gave them (tried in turn when one cannot be connected to), and what keeps the
    host name (the `Host` header, TLS's server name)."""

    urls: tuple[httpx.URL, ...]
    host_header: str
    extensions: dict[str, Any]


def is_public(ip: IPAddress) -> bool:
    """An address on the internet: not loopback, private, link-local, shared (100.64/10), reserved,
    multicast or unspecified; an IPv4 address inside IPv6 (::ffff:a.b.c.d, NAT64, 6to4) is judged as IPv4."""
    return reach(ip) == "public"


def shown_url(url: str) -> str:
    """`url` as logs and the audit trail show it: scheme, host and port only. A path or query may be a
    credential itself (a Slack incoming-webhook URL is one)."""
    import httpx  # loaded on first use, not at start-up

    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError):
        return "(not a URL)"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}/…"


def check_url(url: str) -> httpx.URL:
    """The URL parsed, or `WebhookRefused` saying what is wrong with it."""
    import httpx  # loaded on first use, not at start-up

    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError) as exc:
        raise WebhookRefused(f"url: {url!r} is not a URL ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise WebhookRefused(f"url: {url!r} must be an http:// or https:// address with a host")
    return parsed


async def resolve_target(url: str, allow_private: bool, resolver: Resolver | None = None) -> Target:
    """Resolve `url`'s host once and check every address; the addresses to connect to. `resolver`:
    tests (a stub); the system's by default."""
    parsed = check_url(url)
    host = parsed.host
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        addresses = [parse_address(text) for text in await resolve_once(host, port, resolver)]
    except OSError as exc:
        raise WebhookRefused(f"url: cannot resolve {host} ({exc})") from None
    if not addresses:
        raise WebhookRefused(f"url: {host} resolves to no address") from None
    refused = refusal(addresses, allow_private)
    if refused is not None:
        ip, kind = refused
        what = f"{host} is" if str(ip) == host else f"{host} resolves to {ip},"
        if kind == "blocked":
            raise WebhookRefused(f"url: {what} a link-local or cloud-metadata address, which Rostrum never calls "
                                 "(not even with ROSTRUM_WEBHOOK_ALLOW_PRIVATE=1)")
        raise WebhookRefused(
            f"url: {what} a loopback or private address; webhooks go only to public addresses unless "
            "an admin allows private ones (ROSTRUM_WEBHOOK_ALLOW_PRIVATE=1)")
    netloc = parsed.netloc.decode("ascii")
    extensions: dict[str, Any] = {"sni_hostname": host} if parsed.scheme == "https" else {}
    urls = tuple(parsed.copy_with(host=str(ip)) for ip in addresses)
    return Target(urls, netloc.rsplit("@", 1)[-1], extensions)
