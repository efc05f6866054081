"""The one place that turns a `Participant` or `JudgeSpec` into a `Provider`.

Keys are read only through `webapp.settings.read_env_var`, at the moment a provider is built, and
go straight into the SDK client: they never appear in messages, status reports, logs or reprs.
`ProviderCache` hands out one provider (one HTTP client, one connection pool) per provider, base
URL and key variable, so every turn of a debate reuses the same connections.

The adapters are imported when a provider is made: importing the vendor SDKs takes over a second,
which the app would otherwise spend at every start even when only the demo provider is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from typing import Any

from webapp.models import JudgeSpec, Participant
from webapp.providers.base import ErrorKind, Provider, ProviderError
from webapp.providers.presets import PRESETS, Preset, get_preset
from webapp.settings import Settings, get_settings, read_env_var

Spec = Participant | JudgeSpec

DEFAULT_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
TITLES = {"demo": "Demo (offline)", "openai": "OpenAI", "anthropic": "Anthropic", "compatible": "Compatible"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _preset(spec: Spec) -> Preset | None:
    return get_preset(spec.preset) if spec.provider == "compatible" else None


def key_env_for(spec: Spec) -> str | None:
    """Name of the environment variable holding the spec's key; None when no key is needed."""
    if spec.provider == "demo":
        return None
    if spec.api_key_env:
        return spec.api_key_env
    if spec.provider == "compatible":
        preset = _preset(spec)
        return preset.key_env if preset else None
    return DEFAULT_KEY_ENVS[spec.provider]


def base_url_for(spec: Spec) -> str | None:
    """The URL the provider talks to; None means the SDK's own default."""
    if spec.provider == "compatible":
        preset = _preset(spec)
        return spec.base_url or (preset.default_url if preset else None)
    return spec.base_url if spec.provider != "demo" else None


def check_spec(spec: Spec) -> str | None:
    """A clear, key-free message saying why this spec cannot run yet, or None when it can."""
    if spec.provider == "demo":
        return None
    preset: Preset | None = None
    if spec.provider == "compatible":
        if spec.preset and get_preset(spec.preset) is None:
            return f"unknown compatible preset {spec.preset!r}; known presets: {', '.join(PRESETS)}"
        preset = _preset(spec)
        if not spec.base_url and preset is None:
            return (
                "a compatible provider needs a base_url (the server's OpenAI-compatible endpoint, "
                "e.g. http://localhost:11434/v1) or a preset"
            )
    if spec.api_key_env and not _ENV_NAME.match(spec.api_key_env):
        return "api_key_env must be the name of an environment variable (like MY_API_KEY), not a key"
    env = key_env_for(spec)
    if env and not read_env_var(env):
        label = preset.name if preset else spec.provider
        return f"{label} needs an API key: set {env} in the environment or .env"
    return None


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


def _create(spec: Spec, connect_timeout: float, settings: Settings | None = None) -> Provider:
    """A new provider for a spec that `check_spec` passed."""
    if spec.provider == "demo":
        from webapp.providers.demo import DemoProvider

        return DemoProvider(model=spec.model, settings=settings or get_settings())
    env = key_env_for(spec)
    api_key = read_env_var(env) if env else None
    base_url = base_url_for(spec)
    if spec.provider == "openai":
        from webapp.providers.openai import OpenAIProvider

        return OpenAIProvider(api_key=api_key or "", base_url=base_url, connect_timeout=connect_timeout)
    if spec.provider == "anthropic":
        from webapp.providers.anthropic import AnthropicProvider

        return AnthropicProvider(api_key=api_key or "", base_url=base_url, connect_timeout=connect_timeout)
    from webapp.providers.compatible import CompatibleProvider

    return CompatibleProvider(base_url or "", api_key, connect_timeout, preset=_preset(spec))


class ProviderCache:
    """One provider per (provider, base URL, key variable): a debate's turns share HTTP connections."""

    def __init__(self, connect_timeout: float = 10.0, settings: Settings | None = None) -> None:
        self.connect_timeout = connect_timeout
        self.settings = settings  # None: the process-wide settings, read when a provider is made
        self._providers: dict[tuple[str | None, ...], Provider] = {}

    def _key(self, spec: Spec) -> tuple[str | None, ...]:
        if spec.provider == "demo":
            return ("demo", spec.model)
        env = key_env_for(spec)
        secret = read_env_var(env) if env else None
        # A changed key gets a new client; only a digest is kept, never the key itself.
        digest = hashlib.sha256(secret.encode()).hexdigest()[:16] if secret else None
        preset = _preset(spec)
        return (spec.provider, base_url_for(spec), env, preset.name if preset else None, digest)

    def get(self, spec: Spec) -> Provider:
        """The shared provider for `spec`, made on first use; raises a fatal `ProviderError` if not ready."""
        problem = check_spec(spec)
        if problem:
            raise ProviderError(ErrorKind.FATAL, spec.provider, problem, reason="config")
        key = self._key(spec)
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = _create(spec, self.connect_timeout, self.settings)
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
