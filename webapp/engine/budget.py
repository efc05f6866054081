"""Money: the warn-at / hard-limit checks made before and after every call, and a debate's ledger.

What a call costs is looked up in `webapp.providers.pricing` (override table, simulated prices,
`genai-prices`); its names are re-exported here for the engine's callers.

A hard limit is kept by capping each call's output allowance to what the money left can pay for
(`affordable_tokens`), never by refusing a call that a shorter answer would fit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from webapp.models import Usage
from webapp.providers.pricing import (
    HOSTED_PRESET_PROVIDER,
    LOCAL_PRESETS,
    SIMULATED_PRICES,
    Cost,
    PricedSpec,
    PriceSource,
    cost_of,
    estimate_call,
    is_local_server,
    simulated_price,
)
from webapp.settings import Settings, get_settings

__all__ = ["HOSTED_PRESET_PROVIDER", "LOCAL_PRESETS", "SIMULATED_PRICES", "Cost", "Ledger", "PriceSource",
           "PricedSpec", "affordable_tokens", "cost_of", "estimate_call", "is_local_server", "simulated_price",
           "warn_due"]


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
