"""Money: usage → cost, and the warn-at / hard-limit checks made before and after every call.

Prices come from `genai-prices` (bundled data, no network), then the settings' override table for
local or custom models. Local compatible servers default to $0; demo models carry a clearly
labelled *simulated* price. A model with no known price is *unpriced* (cost None), never guessed.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal, Protocol
from urllib.parse import urlsplit

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from webapp.models import Usage
from webapp.providers.demo import DEMO_PRICE_PER_MTOK
from webapp.settings import Settings, get_settings

PriceSource = Literal["genai-prices", "override", "simulated", "local", "unpriced"]

# genai-prices provider ids for the compatible presets that are hosted services.
HOSTED_PRESET_PROVIDER = {"openrouter": "openrouter", "groq": "groq", "mistral": "mistral", "gemini": "google"}
LOCAL_PRESETS = {"ollama", "vllm", "llamacpp", "lmstudio"}


class PricedSpec(Protocol):
    """What pricing needs to know about a participant or judge."""

    provider: str
    model: str
    preset: str | None
    base_url: str | None


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
    if spec.provider == "demo":
        usd = _per_mtok(usage.input_tokens, DEMO_PRICE_PER_MTOK["input"]) + _per_mtok(
            usage.output_tokens, DEMO_PRICE_PER_MTOK["output"]
        )
        return Cost(usd, "simulated")
    provider_id = spec.provider
    if spec.provider == "compatible":
        preset = (spec.preset or "").strip().lower()
        # A named preset decides: a hosted service bills its models even behind a local proxy URL,
        # and a self-hosted server (Ollama, vLLM, …) costs nothing wherever it runs.
        if preset in LOCAL_PRESETS or (not preset and _is_local_url(spec.base_url)):
            return Cost(0.0, "local")
        provider_id = HOSTED_PRESET_PROVIDER.get(preset, "")
        if not provider_id:
            return Cost(None, "unpriced")
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


BudgetCheck = Literal["ok", "warn", "limit"]


def check_budget(spent: float, next_cost: float | None, warn_at: float | None, cost_limit: float | None) -> BudgetCheck:
    """Where spending would stand after a call costing at most `next_cost` (None = unpriced: 0; pass 0
    to check what was actually spent): over the hard limit, at or past warn-at, or fine."""
    projected = spent + (next_cost or 0.0)
    if cost_limit is not None and projected > cost_limit:
        return "limit"
    if warn_at is not None and projected >= warn_at:
        return "warn"
    return "ok"
