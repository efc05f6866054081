"""Money: usage → cost, and the warn-at / hard-limit checks made before and after every call.

Prices come from the settings' override table (`ROSTRUM_PRICE_OVERRIDES`) for local or custom
models, then this module's built-in table of *simulated* prices (the offline demo models, so budgets
can be tried without a key), then `genai-prices` (bundled data, no network). Local compatible
servers default to $0. A model with no known price is *unpriced* (cost None), never guessed.

A hard limit is kept by capping each call's output allowance to what the money left can pay for
(`affordable_tokens`), never by refusing a call that a shorter answer would fit.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass, field
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
    # Imported on the first priced call: its price tables cost start-up time a demo-only server never needs.
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    try:
        calc = calc_price(
            PriceUsage(
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


def affordable_tokens(spec: PricedSpec, input_tokens: int, max_tokens: int, room: float,
                      settings: Settings | None = None, extra_per_token: float = 0.0) -> int | None:
    """The largest output allowance, at most `max_tokens`, whose worst-case cost (the estimated input
    plus every output token, each also charged `extra_per_token`) fits in `room` USD; 0 when not even
    the input fits. None when the model is unpriced: there is nothing to cap by."""
    settings = settings or get_settings()

    def worst(tokens: int) -> float | None:
        usd = estimate_call(spec, input_tokens, tokens, settings).usd
        return None if usd is None else usd + extra_per_token * tokens

    full = worst(max_tokens)
    if full is None:
        return None
    if full <= room:
        return max_tokens
    base = worst(0) or 0.0
    if base > room:
        return 0
    def fits(tokens: int) -> bool:
        return (worst(tokens) or 0.0) <= room

    # Prices are (nearly) linear in the output: the first guess is the answer, checked on both sides;
    # a bisection settles any rounding or price step.
    guess = min(max_tokens - 1, int((room - base) / ((full - base) / max_tokens)))
    low, high = 0, max_tokens  # fits(low); not fits(high)
    if fits(guess):
        low = guess
        if not fits(guess + 1):
            return guess
    else:
        high = guess
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


@dataclass
class Ledger:
    """Running totals of a debate's spending, rebuilt from its turn events."""

    total_usd: float = 0.0
    by_model: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_participant: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_round: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    tokens_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    tokens_by_participant: dict[str, dict[str, int]] = field(default_factory=dict)
    unpriced_models: set[str] = field(default_factory=set)
    simulated: bool = False
    estimated_usage: bool = False

    def add(self, model_label: str, participant: str, round_no: int, usage: Usage, cost: float | None,
            source: str = "") -> None:
        for table, key in ((self.tokens_by_model, model_label), (self.tokens_by_participant, participant)):
            tokens = table.setdefault(key, {"input_tokens": 0, "output_tokens": 0, "calls": 0})
            tokens["input_tokens"] += usage.input_tokens
            tokens["output_tokens"] += usage.output_tokens
            tokens["calls"] += 1
        self.estimated_usage = self.estimated_usage or usage.estimated
        self.simulated = self.simulated or source == "simulated"
        if cost is None:
            self.unpriced_models.add(model_label)
            self.by_model.setdefault(model_label, 0.0)
            return
        self.total_usd += cost
        self.by_model[model_label] += cost
        self.by_participant[participant] += cost
        self.by_round[round_no] += cost

    def to_dict(self) -> dict[str, object]:
        return {
            "total_usd": round(self.total_usd, 6),
            "by_model": {k: round(v, 6) for k, v in self.by_model.items()},
            "by_participant": {k: round(v, 6) for k, v in self.by_participant.items()},
            "by_round": {str(k): round(v, 6) for k, v in sorted(self.by_round.items())},
            "tokens_by_model": self.tokens_by_model,
            "tokens_by_participant": self.tokens_by_participant,
            "unpriced_models": sorted(self.unpriced_models),
            "simulated": self.simulated,
            "estimated_usage": self.estimated_usage,
        }


def warn_due(spent: float, warn_at: float | None) -> bool:
    """Warn-at is a spending threshold: it is reached by money spent, never by a projection."""
    return warn_at is not None and spent >= warn_at
