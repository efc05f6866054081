"""The one place that turns a `Participant` or `JudgeSpec` into a `Provider`.

Keys are read only through `webapp.settings.read_env_var`, at the moment a provider is built, and
go straight into the SDK client: they never appear in messages, status reports, logs or reprs. Which
key may go to which URL, and which URLs may be called at all, is decided by the endpoint policy
(`webapp.providers.endpoints`); every provider's HTTP client enforces it again at connection time
(`webapp.providers.netguard`).
`ProviderCache` hands out one provider (one HTTP client, one connection pool) per provider, base
URL and key variable, so every turn of a debate reuses the same connections.

The adapters are imported when a provider is made: importing the vendor SDKs takes over a second,
which the app would otherwise spend at every start even when only the demo provider is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterable
from typing import Any

from webapp.models import JudgeSpec, Participant
from webapp.providers import endpoints
from webapp.providers.base import ErrorKind, Provider, ProviderError
from webapp.providers.demo import DemoProvider
from webapp.providers.endpoints import DEFAULT_KEY_ENVS, DEFAULT_URLS, EndpointPolicy, Problem, Route
from webapp.providers.presets import PRESETS, Preset, get_preset
from webapp.settings import Settings, get_settings, read_env_var

Spec = Participant | JudgeSpec

__all__ = ["DEFAULT_KEY_ENVS", "DEFAULT_URLS", "EndpointBook", "ProviderCache", "check_spec", "spec_problem"]
TITLES = {"demo": "Demo (offline)", "openai": "OpenAI", "anthropic": "Anthropic", "compatible": "Compatible"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _preset(spec: Spec) -> Preset | None:
    return get_preset(spec.preset) if spec.provider == "compatible" else None


def key_env_for(spec: Spec, policy: EndpointPolicy | None = None) -> str | None:
    """Name of the environment variable holding the spec's key; None when no key is needed. A registered
    endpoint's own variable counts when `policy` is given."""
    url = endpoints.effective_url(spec)
    endpoint = policy.endpoint_for(url) if policy is not None and url else None
    return endpoints.key_env(spec, endpoint)


def base_url_for(spec: Spec) -> str | None:
    """The URL the provider talks to (its base URL, its preset's, or its provider's own); None for demo."""
    return endpoints.effective_url(spec)


def default_policy(settings: Settings | None = None) -> EndpointPolicy:
    """The policy from the configuration alone (no endpoints registered in Settings)."""
    return EndpointPolicy.build(settings) if settings is not None else endpoints.configured_policy()


def spec_problem(spec: Spec, policy: EndpointPolicy | None = None) -> Problem | None:
    """Why this spec cannot run here (the field, relative to the spec, and a clear key-free message),
    or None when it can. `policy`: the endpoint rules (default: the configuration's alone)."""
    if spec.provider == "demo":
        return None
    if spec.provider == "human":  # a person writes these turns: no provider is ever built for them
        return None
    preset: Preset | None = None
    if spec.provider == "compatible":
        if spec.preset and get_preset(spec.preset) is None:
            return Problem("preset", f"unknown compatible preset {spec.preset!r}; known presets: {', '.join(PRESETS)}")
        preset = _preset(spec)
        if not spec.base_url and preset is None:
            return Problem("base_url",
                           "a compatible provider needs a base_url (the server's OpenAI-compatible endpoint, "
                           "e.g. http://localhost:11434/v1) or a preset")
    if spec.api_key_env and not _ENV_NAME.match(spec.api_key_env):
        return Problem("api_key_env",
                       "api_key_env must be the name of an environment variable (like MY_API_KEY), not a key")
    policy = policy or default_policy()
    found = policy.route(spec)
    if isinstance(found, Problem):
        return found
    if found.key_env and not read_env_var(found.key_env):
        label = preset.name if preset else spec.provider
        return Problem("api_key_env" if spec.api_key_env else "provider",
                       f"{label} needs an API key: set {found.key_env} in the environment or .env")
    return None


def check_spec(spec: Spec, policy: EndpointPolicy | None = None) -> str | None:
    """`spec_problem`'s message alone."""
    problem = spec_problem(spec, policy)
    return problem.message if problem else None


def _status_row(
    provider: str, preset: str | None, title: str, key_env: str | None, local: bool, default_url: str | None
) -> dict[str, Any]:
    return {
        "provider": provider,
        "preset": preset,
        "title": title,
        "key_env": key_env,
        "needs_key": key_env is not None,
        "configured": key_env is None or read_env_var(key_env) is not None,
        "local": local,
        "default_url": default_url,
    }


def provider_status() -> list[dict[str, Any]]:
    """Every provider and preset, whether it is ready (key configured), and its key variable's name."""
    return [
        _status_row("demo", None, TITLES["demo"], None, True, None),
        *(
            _status_row(provider, None, TITLES[provider], env, False, DEFAULT_URLS[provider])
            for provider, env in DEFAULT_KEY_ENVS.items()
        ),
        *(
            _status_row("compatible", p.name, p.title, p.key_env, p.local, p.default_url)
            for p in PRESETS.values()
        ),
    ]


def _create_demo(spec: Spec, settings: Settings | None = None) -> Provider:
    return DemoProvider(model=spec.model, settings=settings or get_settings())


def _create(spec: Spec, route: Route, connect_timeout: float) -> Provider:
    """A new provider for a spec that `spec_problem` passed, on the route the policy gave it: its key (if
    any) and a client that connects only to that route's host, on addresses the route allows."""
    # late: httpx2 and httpcore2 (the guarded client) are loaded when the first model provider is made,
    # not at start-up (bench/README.md, "Start-up"); a demo-only server never loads them.
    import httpx2

    from webapp.providers.netguard import guarded_client  # late: httpcore2, as above

    api_key = read_env_var(route.key_env) if route.key_env else None
    base_url = base_url_for(spec) or route.url  # as written (refusals are remembered per URL)
    client = guarded_client(route.url, route.allow_private, timeout=httpx2.Timeout(600.0, connect=connect_timeout))
    if spec.provider == "openai":
        from webapp.providers.openai import OpenAIProvider  # late: the OpenAI SDK takes ~0.4 s to import

        return OpenAIProvider(api_key=api_key or "", base_url=base_url, connect_timeout=connect_timeout,
                              http_client=client)
    if spec.provider == "anthropic":
        from webapp.providers.anthropic import AnthropicProvider  # late: the Anthropic SDK, as heavy

        return AnthropicProvider(api_key=api_key or "", base_url=base_url, connect_timeout=connect_timeout,
                                 http_client=client)
    from webapp.providers.compatible import CompatibleProvider  # late: built on the OpenAI SDK

    return CompatibleProvider(base_url, api_key, connect_timeout, preset=_preset(spec), http_client=client)


class EndpointBook:
    """The endpoint rules of one process: the configuration's endpoints plus those admins registered in
    Settings, as the engine last handed them down (`use`: it reads them from the store before it creates
    or starts a debate, so every process sees an endpoint another one registered)."""

    def __init__(self, settings: Settings | None = None, stored: Iterable[endpoints.Endpoint] = ()) -> None:
        self.settings = settings
        self.stored: tuple[endpoints.Endpoint, ...] = tuple(stored)

    def policy(self) -> EndpointPolicy:
        return EndpointPolicy.build(self.settings or get_settings(), self.stored)

    def use(self, stored: Iterable[endpoints.Endpoint]) -> EndpointPolicy:
        """Take the registered endpoints as they are now; returns the rules with them."""
        self.stored = tuple(stored)
        return self.policy()


class ProviderCache:
    """One provider per (provider, base URL, key variable): a debate's turns share HTTP connections."""

    def __init__(self, connect_timeout: float = 10.0, settings: Settings | None = None,
                 endpoints: EndpointBook | None = None) -> None:
        self.connect_timeout = connect_timeout
        self.settings = settings  # None: the process-wide settings, read when a provider is made
        self.endpoints = endpoints or EndpointBook(settings)
        self._providers: dict[tuple[str | bool | None, ...], Provider] = {}

    def _key(self, spec: Spec, route: Route | None) -> tuple[str | bool | None, ...]:
        if spec.provider == "demo" or route is None:
            return ("demo", spec.model)
        secret = read_env_var(route.key_env) if route.key_env else None
        # A changed key gets a new client; only a digest is kept, never the key itself.
        digest = hashlib.sha256(secret.encode()).hexdigest()[:16] if secret else None
        preset = _preset(spec)
        return (spec.provider, base_url_for(spec), route.key_env, preset.name if preset else None, digest,
                route.allow_private)

    def get(self, spec: Spec) -> Provider:
        """The shared provider for `spec`, made on first use; raises a fatal `ProviderError` if not ready."""
        if spec.provider == "human":  # never reached by the engine; refuse rather than call a model for a person
            raise ProviderError(ErrorKind.FATAL, "human", "a human seat has no model to call", reason="config")
        policy = self.endpoints.policy()
        problem = spec_problem(spec, policy)
        if problem:
            raise ProviderError(ErrorKind.FATAL, spec.provider, problem.message, reason="config")
        route = policy.route(spec) if spec.provider != "demo" else None
        assert not isinstance(route, Problem)  # spec_problem passed it
        key = self._key(spec, route)
        provider = self._providers.get(key)
        if provider is None:
            if route is None:
                provider = _create_demo(spec, self.settings)
            else:
                provider = _create(spec, route, self.connect_timeout)
            self._providers[key] = provider
        return provider

    def __len__(self) -> int:
        return len(self._providers)

    async def aclose(self) -> None:
        """Close every provider's connections; the cache can be used again afterwards."""
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            with contextlib.suppress(Exception):
                await provider.aclose()

    async def __aenter__(self) -> ProviderCache:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
