"""Every guarded model-server client verifies TLS with one context made once per process: making a
context loads the whole CA bundle (~35 ms of CPU), and a client is made for each seat of each debate."""

from __future__ import annotations

import ssl

from webapp.providers.netguard import default_ssl_context, guarded_client


def pool_context(base_url: str, given: ssl.SSLContext | None = None) -> ssl.SSLContext:
    client = guarded_client(base_url, False, ssl_context=given)
    return client._transport._pool._ssl_context  # type: ignore[attr-defined]  # what its connections use


def test_clients_share_one_verifying_context() -> None:
    first, second = pool_context("https://api.example.test/v1"), pool_context("https://other.example.test")
    assert first is second is default_ssl_context()
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname


def test_a_context_given_is_the_one_used() -> None:
    given = ssl.create_default_context()
    assert pool_context("https://api.example.test/v1", given) is given
    assert default_ssl_context() is not given
