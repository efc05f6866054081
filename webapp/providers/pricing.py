"""Prices: what a call on a model costs, looked up for the engine's budget and the form's model picker.

Prices come from the settings' override table (`ROSTRUM_PRICE_OVERRIDES`) for local or custom
models, then this module's built-in table of *simulated* prices (the offline demo models, so budgets
can be tried without a key), then `genai-prices` (bundled data, no network). Local compatible
servers default to $0. A model with no known price is *unpriced* (cost None), never guessed.

What the engine does with a price (warn-at, the hard limit, the ledger) is `webapp.engine.budget`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, Protocol
from urllib.parse import urlsplit

from webapp.models import Usage
from webapp.settings import Settings, get_settings

PriceSource = Literal["genai-prices", "override", "simulated", "local", "unpriced"]

# genai-prices provider ids for the compatible presets that are hosted services.
HOSTED_PRESET_PROVIDER = {"openrouter": "openrouter", "groq": "groq", "mistral": "mistral", "gemini": "google"}
LOCAL_PRESETS = {"ollama", "vllm", "llamacpp", "lmstudio"}

# Built-in override table: (input, output) USD per million tokens, by `provider:model` (or
# `provider:*` for every model of a provider). Clearly *simulated*: the offline demo models cost
# nothing, but a price lets budgets, warnings and limits be tried without a key.
SIMULATED_PRICES: dict[str, tuple[float, float]] = {"demo:*": (3.0, 15.0)}


class PricedSpec(Protocol):
    """What pricing needs to know about a participant or judge."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def preset(self) -> str | None: ...

    @property
    def base_url(self) -> str | None: ...


@dataclass(frozen=True)
class Cost:
    """The cost of one call, or None when the model is unpriced."""

    usd: float | None
    source: PriceSource

    @property
    def label(self) -> str:
        if self.usd is None:
            return "unpriced"
        suffix = " (simulated)" if self.source == "simulated" else ""
        return f"${self.usd:.4f}{suffix}"


def _per_mtok(tokens: int, rate: float) -> float:
    return tokens * rate / 1_000_000


def cost_of(spec: PricedSpec, usage: Usage, settings: Settings | None = None) -> Cost:
    """The cost of `usage` on `spec`'s model."""
    settings = settings or get_settings()
    override = settings.price_overrides.get(spec.model)
    if override is not None:
        usd = _per_mtok(usage.input_tokens, override.input_per_mtok) + _per_mtok(
            usage.output_tokens, override.output_per_mtok
        )
        return Cost(usd, "override")
    simulated = simulated_price(spec)
    if simulated is not None:
        return Cost(_per_mtok(usage.input_tokens, simulated[0]) + _per_mtok(usage.output_tokens, simulated[1]),
                    "simulated")
    provider_id = spec.provider
    if spec.provider == "compatible":
        if is_local_server(spec):
            return Cost(0.0, "local")
        provider_id = HOSTED_PRESET_PROVIDER.get((spec.preset or "").strip().lower(), "")
        if not provider_id:
            return Cost(None, "unpriced")
    # late: imported on the first priced call, its price tables cost start-up time a demo-only server never needs
    import genai_prices

    try:
        calc = genai_prices.calc_price(
            genai_prices.Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cached_tokens or None,
            ),
            spec.model,
            provider_id=provider_id,
        )
    except (LookupError, ValueError):
        return Cost(None, "unpriced")
    return Cost(float(Decimal(calc.total_price)), "genai-prices")


def simulated_price(spec: PricedSpec) -> tuple[float, float] | None:
    """The built-in simulated (input, output) price per million tokens of `spec`'s model, if any."""
    return SIMULATED_PRICES.get(f"{spec.provider}:{spec.model}") or SIMULATED_PRICES.get(f"{spec.provider}:*")


def is_local_server(spec: PricedSpec) -> bool:
    """A self-hosted OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, or any base URL on
    this machine or network): it costs nothing and may be slow (a CPU), so it gets generous timeouts.
    A named preset decides: a hosted service behind a local proxy URL is still a hosted service."""
    if spec.provider != "compatible":
        return False
    preset = (spec.preset or "").strip().lower()
    return preset in LOCAL_PRESETS or (not preset and _is_local_url(spec.base_url))


def _is_local_url(url: str | None) -> bool:
    """True for a server on this machine or the local network (by host name, not by substring:
    `http://localhost.example.com` is somebody else's server)."""
    if not url:
        return False
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


def estimate_call(
    spec: PricedSpec, input_tokens: int, max_output_tokens: int, settings: Settings | None = None
) -> Cost:
    """The most a call can cost: its estimated input plus its full output allowance."""
    return cost_of(spec, Usage(input_tokens=input_tokens, output_tokens=max_output_tokens), settings)
