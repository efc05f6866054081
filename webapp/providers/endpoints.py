"""Where a provider call may go, and which server key may go with it: the one check every path shares.

A server-held key is bound to its host. `OPENAI_API_KEY` goes only to api.openai.com,
`ANTHROPIC_API_KEY` only to api.anthropic.com, each hosted preset's variable only to that preset's host,
and a variable an admin registered with an endpoint only to that endpoint. A debate whose base URL is
not one its key is bound to is refused before its first call (`EndpointPolicy.check`), whichever way it
came in: the form, the CLI, a config file, a template or a tournament plan all reach `check_spec` in
`webapp.providers.registry`, which asks this module.

An endpoint is registered by an admin (Settings, stored in the store) or in the configuration
(`ROSTRUM_ENDPOINTS`, `ROSTRUM_ENDPOINTS_FILE`). Any other base URL is a *free* URL: allowed only where
free URLs are (`ROSTRUM_ALLOW_FREE_URLS`, by default only on the single-user instance: bound to loopback,
no sign-in), and never with a server key.

Addresses (classed by `webapp.netpolicy`, as the webhooks' are): link-local and cloud-metadata addresses
are never called; loopback and private addresses only for a registered endpoint or on the single-user
instance. A host name is checked when it is connected to,
on the address it resolved to (`webapp.providers.netguard`), so a name cannot change its answer between
the check and the call.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

# The endpoint model and its URL rules live below the settings and the store (both keep endpoints);
# they are named here too, where the policy that uses them is.
from webapp.endpoints import ENV_NAME as ENV_NAME
from webapp.endpoints import Endpoint as Endpoint
from webapp.endpoints import Target as Target
from webapp.endpoints import literal_reach as literal_reach
from webapp.endpoints import parse_endpoints as parse_endpoints
from webapp.endpoints import parse_url as parse_url
from webapp.endpoints import read_endpoints_file
from webapp.endpoints import same_endpoint as same_endpoint
from webapp.models import JudgeSpec, Participant
from webapp.netpolicy import reach as reach
from webapp.providers.presets import PRESETS, Preset, get_preset
from webapp.settings import Settings, get_settings

log = logging.getLogger(__name__)
DEFAULT_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}


def _builtin_bindings() -> dict[str, list[str]]:
    bound: dict[str, list[str]] = {env: [DEFAULT_URLS[p]] for p, env in DEFAULT_KEY_ENVS.items()}
    for preset in PRESETS.values():
        if preset.key_env:
            bound.setdefault(preset.key_env, []).append(preset.default_url)
    return bound


# Each provider's own key variable and the URLs of its own host(s).
BUILTIN_BINDINGS = _builtin_bindings()


def configured_endpoints(settings: Settings) -> list[Endpoint]:
    """The endpoints the configuration registers: `ROSTRUM_ENDPOINTS` then `ROSTRUM_ENDPOINTS_FILE`."""
    found = list(settings.endpoints)
    if settings.endpoints_file is not None:
        found += read_endpoints_file(settings.endpoints_file)
    return found


Spec = Participant | JudgeSpec


@dataclass(frozen=True)
class Problem:
    """Why a spec may not run: the field to show it at (relative to the spec) and the message."""

    field: str
    message: str


@dataclass(frozen=True)
class Route:
    """Where a checked spec goes: its URL, the key variable sent there (if any), and whether private
    addresses may be connected to (a registered endpoint, or the single-user instance)."""

    url: str
    key_env: str | None
    allow_private: bool


@dataclass(frozen=True)
class EndpointPolicy:
    """One snapshot of the rules: the registered endpoints, whether free URLs are allowed, and whether
    this is the single-user instance (bound to loopback without sign-in)."""

    endpoints: tuple[Endpoint, ...] = ()
    allow_free_urls: bool = False
    single_user: bool = False

    @classmethod
    def build(cls, settings: Settings, stored: tuple[Endpoint, ...] | list[Endpoint] = ()) -> EndpointPolicy:
        single_user = settings.loopback and not settings.auth_enabled
        free = settings.allow_free_urls
        allow = single_user if free == "auto" else free == "on"
        try:
            configured = configured_endpoints(settings)
        except ValueError as exc:  # the file was changed since start-up and is broken now: register less
            log.error("%s; its endpoints are not registered until it is fixed", exc)
            configured = list(settings.endpoints)
        return cls(tuple(configured) + tuple(stored), allow, single_user)

    # --- what keys are bound to ---------------------------------------------------------------

    def key_bindings(self) -> dict[str, list[str]]:
        """Each key variable and the base URLs it may be sent to."""
        bound = {env: list(urls) for env, urls in BUILTIN_BINDINGS.items()}
        for endpoint in self.endpoints:
            if endpoint.key_env:
                bound.setdefault(endpoint.key_env, []).append(endpoint.base_url)
        return bound

    def key_variables(self) -> list[str]:
        """The only names `api_key_env` may take: the providers' own and those registered with endpoints."""
        return list(self.key_bindings())

    def endpoint_for(self, url: str) -> Endpoint | None:
        """The registered endpoint at `url`, if any."""
        return next((e for e in self.endpoints if same_endpoint(e.base_url, url)), None)

    def endpoint_named(self, name: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.name.lower() == name.strip().lower()), None)

    def key_may_go(self, env: str, url: str) -> bool:
        """Whether the key in `env` may be sent to `url`: a provider's key to its own host (any path on
        it), a registered endpoint's key to that endpoint."""
        try:
            target = parse_url(url)
        except ValueError:
            return False
        if any(parse_url(own).origin == target.origin for own in BUILTIN_BINDINGS.get(env, [])):
            return True
        return any(e.key_env == env and same_endpoint(e.base_url, url) for e in self.endpoints)

    # --- the check ----------------------------------------------------------------------------

    def route(self, spec: Spec) -> Route | Problem:
        """Where `spec` goes and with which key variable, or why it may not go anywhere."""
        preset = get_preset(spec.preset) if spec.provider == "compatible" else None
        url = effective_url(spec)
        if not url:
            return Problem("base_url", "a compatible provider needs a base_url or a preset")
        field = "base_url" if spec.base_url else ("preset" if preset else "provider")
        try:
            target = parse_url(url)
        except ValueError as exc:
            return Problem(field, str(exc))
        endpoint = self.endpoint_for(url)
        if spec.api_key_env:
            name = spec.api_key_env.strip()
            if not ENV_NAME.match(name):
                return Problem("api_key_env",
                               "api_key_env must be the name of an environment variable (like MY_API_KEY), not a key")
            if name not in self.key_bindings():
                return Problem("api_key_env", f"api_key_env {name} is not a provider key variable; use one of "
                                              f"{', '.join(self.key_variables())} (an admin registers others "
                                              "with an endpoint)")
        env = key_env(spec, endpoint)
        own = _own_url(spec, preset, url)
        if env and not self.key_may_go(env, url):  # said first: the most specific reason
            hosts = ", ".join(dict.fromkeys(parse_url(u).where for u in self.key_bindings().get(env, [])))
            return Problem(field if spec.base_url or not spec.api_key_env else "api_key_env",
                           f"{env} is only sent to {hosts}; ask an admin to register this endpoint "
                           f"({target.where}) to use it there")
        if endpoint is None and not own and not self.allow_free_urls:
            return Problem(field, f"{target.url} is not a registered endpoint: pick one an admin registered "
                                  "(Settings lists them), or ask an admin to register this one")
        kind = literal_reach(target.host)
        if kind == "blocked":
            return Problem(field, f"{target.where} is a link-local or cloud-metadata address, which Rostrum "
                                  "never calls")
        allow_private = endpoint is not None or self.single_user
        if kind == "private" and not allow_private:
            return Problem(field, f"{target.where} is an address on this machine or a private network: only "
                                  "endpoints an admin registered may be there")
        return Route(target.url, env, allow_private)

    def check(self, spec: Spec) -> Problem | None:
        """Why `spec` may not run here (the field and a key-free message), or None."""
        if spec.provider in ("demo", "human"):
            return None
        found = self.route(spec)
        return found if isinstance(found, Problem) else None

    def url_rule(self, url: str) -> tuple[Route | None, str | None]:
        """The network rule for a keyless request to `url` ("Test connection", the Settings checks): the
        route, or why it may not be asked."""
        try:
            target = parse_url(url)
        except ValueError as exc:
            return None, str(exc)
        endpoint = self.endpoint_for(url)
        own = any(same_endpoint(p.default_url, url) for p in PRESETS.values())
        if endpoint is None and not own and not self.allow_free_urls:
            return None, f"{target.url} is not a registered endpoint; ask an admin to register it"
        kind = literal_reach(target.host)
        if kind == "blocked":
            return None, f"{target.where} is a link-local or cloud-metadata address, which Rostrum never calls"
        allow_private = endpoint is not None or self.single_user
        if kind == "private" and not allow_private:
            return None, (f"{target.where} is an address on this machine or a private network: only endpoints "
                          "an admin registered may be there")
        return Route(target.url, None, allow_private), None


def configured_policy() -> EndpointPolicy:
    """The rules from the process's configuration alone (without the endpoints registered in Settings)."""
    return EndpointPolicy.build(get_settings())


def _own_url(spec: Spec, preset: Preset | None, url: str) -> bool:
    """Whether `url` is the spec's provider's or preset's own address (not one typed over it)."""
    if spec.provider in DEFAULT_URLS:
        return same_endpoint(url, DEFAULT_URLS[spec.provider])
    return preset is not None and same_endpoint(url, preset.default_url)


def effective_url(spec: Spec) -> str | None:
    """The URL a spec's calls go to: its base URL, else its preset's, else its provider's default."""
    if spec.provider in ("demo", "human"):
        return None
    if spec.base_url:
        return str(spec.base_url)
    if spec.provider == "compatible":
        preset = get_preset(spec.preset)
        return preset.default_url if preset else None
    return DEFAULT_URLS.get(spec.provider)


def key_env(spec: Spec, endpoint: Endpoint | None = None) -> str | None:
    """The variable whose key a spec sends: its own `api_key_env`, else its registered endpoint's,
    else its preset's or provider's; None when no key is sent."""
    if spec.provider in ("demo", "human"):
        return None
    if spec.api_key_env:
        return str(spec.api_key_env).strip()
    if endpoint is not None and endpoint.key_env:
        return endpoint.key_env
    if spec.provider == "compatible":
        preset = get_preset(spec.preset)
        return preset.key_env if preset else None
    return DEFAULT_KEY_ENVS.get(spec.provider)
