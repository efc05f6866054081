"""Both guards against server-side request forgery apply one address policy (`webapp.netpolicy`): the
model servers' (`webapp.providers.netguard`) and the webhooks' (`webapp.webhooks.guard`) refuse the same
link-local and metadata addresses in every written form, even where private addresses are allowed, and
differ only in their switch for private ones. Names go to a stub resolver (no lookup leaves the machine)."""

from __future__ import annotations

import ipaddress

import pytest

from webapp.netpolicy import Resolver, reach
from webapp.providers.netguard import BlockedAddress, PinnedBackend, vet
from webapp.webhooks.guard import WebhookRefused, resolve_target

# Cloud metadata and link-local, written the ways a URL or a DNS answer can carry them.
NEVER = [
    "169.254.169.254",  # AWS, GCP, Azure metadata (link-local)
    "::ffff:169.254.169.254", "::ffff:a9fe:a9fe",  # IPv4-mapped IPv6
    "64:ff9b::a9fe:a9fe",  # NAT64
    "2002:a9fe:a9fe::1",  # 6to4 (Python counts 2002::/16 as global)
    "fe80::1",  # IPv6 link-local
    "fd00:ec2::254",  # AWS metadata over IPv6
    "100.100.100.200",  # Alibaba metadata
    "192.0.0.192",  # Oracle metadata
    "0.0.0.0", "224.0.0.1",  # unspecified, multicast
]


def resolver_to(address: str) -> Resolver:
    """A stub DNS: every name resolves to a public address and `address` (one public address does not
    excuse the other)."""

    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34", address]

    return resolve


@pytest.mark.parametrize("address", NEVER)
async def test_both_guards_refuse_a_name_resolving_to_a_metadata_or_link_local_address(address: str) -> None:
    assert reach(ipaddress.ip_address(address)) == "blocked"
    with pytest.raises(BlockedAddress, match="link-local or cloud-metadata"):
        await PinnedBackend(True, resolver_to(address)).connect_tcp("innocent.example.test", 80, timeout=5)
    with pytest.raises(WebhookRefused, match="link-local or cloud-metadata"):
        await resolve_target("https://innocent.example.test/hook", True, resolver_to(address))


@pytest.mark.parametrize("address", NEVER)
async def test_both_guards_refuse_the_address_written_in_the_url(address: str) -> None:
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(BlockedAddress, match="link-local or cloud-metadata"):
        await PinnedBackend(True).connect_tcp(host, 80, timeout=5)
    with pytest.raises(WebhookRefused, match="link-local or cloud-metadata"):
        await resolve_target(f"http://{host}/hook", True)


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.1.2.3", "192.168.0.9", "100.64.0.1", "fd12::1",
                                     "::ffff:10.0.0.1", "2002:c0a8:0101::1"])
async def test_private_addresses_follow_each_guards_own_switch(address: str) -> None:
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(BlockedAddress, match="private network"):
        vet([address], host, allow_private=False)
    with pytest.raises(WebhookRefused, match="ROSTRUM_WEBHOOK_ALLOW_PRIVATE"):
        await resolve_target(f"http://{host}/hook", False)
    assert vet([address], host, allow_private=True) == [address]
    target = await resolve_target(f"http://{host}/hook", True)
    assert [ipaddress.ip_address(url.host) for url in target.urls] == [ipaddress.ip_address(address)]


async def test_public_addresses_pass_both() -> None:
    assert vet(["93.184.216.34", "2606:4700:4700::1111"], "example.test", allow_private=False)
    target = await resolve_target("https://example.test/hook", False, resolver_to("2606:4700:4700::1111"))
    assert [url.host for url in target.urls] == ["93.184.216.34", "2606:4700:4700::1111"]
