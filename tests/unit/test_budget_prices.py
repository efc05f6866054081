"""Pricing rules of `webapp.engine.budget`: genai-prices, overrides, local servers, demo, unpriced, and
sizing a call's output allowance to the money left."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.provider_helpers import genai_cost
from webapp.engine.budget import (
    SIMULATED_PRICES,
    Cost,
    Ledger,
    affordable_tokens,
    cost_of,
    estimate_call,
    is_local_server,
    warn_due,
)
from webapp.models import JudgeSpec, Participant, Usage
from webapp.providers.compatible import PRESETS
from webapp.settings import PriceOverride, Settings

SETTINGS = Settings(_env_file=None)
USAGE = Usage(input_tokens=12_000, output_tokens=3_000)


def genai(model: str, provider: str, usage: Usage) -> float:
    return genai_cost(model, provider, usage.input_tokens, usage.output_tokens, usage.cached_tokens)


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "gpt-4o-mini"), ("openai", "gpt-4o"), ("anthropic", "claude-haiku-4-5"),
     ("anthropic", "claude-sonnet-4-5")],
)
def test_known_models_cost_what_genai_prices_says(provider: str, model: str) -> None:
    cost = cost_of(Participant(provider=provider, model=model), USAGE, SETTINGS)
    assert cost.source == "genai-prices"
    assert cost.usd == pytest.approx(genai(model, provider, USAGE), rel=1e-12) and cost.usd > 0
    assert cost.label == f"${cost.usd:.4f}"


def test_cached_input_tokens_are_cheaper() -> None:
    spec = Participant(provider="openai", model="gpt-4o-mini")
    cached = Usage(input_tokens=100_000, output_tokens=0, cached_tokens=80_000)
    full = cost_of(spec, Usage(input_tokens=100_000), SETTINGS).usd
    assert cost_of(spec, cached, SETTINGS).usd == pytest.approx(genai("gpt-4o-mini", "openai", cached))
    assert cost_of(spec, cached, SETTINGS).usd < full


def test_judges_are_priced_like_participants() -> None:
    judge = JudgeSpec(provider="openai", model="gpt-4o")
    assert cost_of(judge, USAGE, SETTINGS).usd == pytest.approx(genai("gpt-4o", "openai", USAGE))


@pytest.mark.parametrize(
    "spec",
    [
        Participant(provider="openai", model="gpt-imaginary-9"),
        Participant(provider="anthropic", model="claude-nonexistent"),
        Participant(provider="compatible", model="llama3.2", base_url="https://llm.example.com/v1"),
        Participant(provider="compatible", model="some-model", base_url="http://localhost.example.com/v1"),
        Participant(provider="compatible", preset="openrouter", model="acme/unknown-model"),
        Participant(provider="compatible", preset="openrouter", model="acme/unknown",
                    base_url="http://127.0.0.1:9/v1"),
    ],
    ids=["openai-unknown", "anthropic-unknown", "hosted-url", "lookalike-host", "hosted-preset",
         "hosted-preset-local-url"],
)
def test_unknown_prices_are_unpriced_never_guessed(spec: Participant) -> None:
    cost = cost_of(spec, USAGE, SETTINGS)
    assert cost == Cost(None, "unpriced")
    assert cost.label == "unpriced"
    assert estimate_call(spec, 1000, 1000, SETTINGS).usd is None


@pytest.mark.parametrize(
    "spec",
    [
        Participant(provider="compatible", model="llama3.2", base_url="http://localhost:11434/v1"),
        Participant(provider="compatible", model="llama3.2", base_url="http://127.0.0.1:8000/v1"),
        Participant(provider="compatible", model="llama3.2", base_url="http://[::1]:8080/v1"),
        Participant(provider="compatible", model="llama3.2", base_url="http://192.168.1.20:11434/v1"),
        Participant(provider="compatible", model="llama3.2", base_url="http://gpu-box.local:8000/v1"),
        *[Participant(provider="compatible", model="qwen2.5", preset=p.name) for p in PRESETS.values() if p.local],
        Participant(provider="compatible", model="qwen2.5", preset="Ollama"),  # preset names ignore case
        JudgeSpec(provider="compatible", model="llama3.2", base_url="http://localhost:1234/v1"),
    ],
)
def test_local_servers_cost_nothing(spec: Participant | JudgeSpec) -> None:
    assert cost_of(spec, USAGE, SETTINGS) == Cost(0.0, "local")


@pytest.mark.parametrize(
    ("preset", "model", "provider_id"),
    [("openrouter", "openai/gpt-4o-mini", "openrouter"), ("groq", "llama-3.3-70b-versatile", "groq"),
     ("mistral", "mistral-small-latest", "mistral"), ("gemini", "gemini-2.0-flash", "google")],
)
def test_hosted_presets_are_priced_by_their_service(preset: str, model: str, provider_id: str) -> None:
    spec = Participant(provider="compatible", preset=preset, model=model)
    cost = cost_of(spec, USAGE, SETTINGS)
    assert cost.source == "genai-prices" and cost.usd == pytest.approx(genai(model, provider_id, USAGE))
    behind_proxy = spec.model_copy(update={"base_url": "http://localhost:4000/v1"})
    assert cost_of(behind_proxy, USAGE, SETTINGS) == cost  # still billed by the service, not $0


def test_override_table_wins_for_any_provider() -> None:
    settings = Settings(_env_file=None, price_overrides={
        "gpt-4o-mini": PriceOverride(input_per_mtok=1.0, output_per_mtok=2.0),
        "llama3.2": PriceOverride(input_per_mtok=0.5, output_per_mtok=0.25),
    })
    openai = cost_of(Participant(provider="openai", model="gpt-4o-mini"), USAGE, settings)
    assert openai == Cost(pytest.approx(12_000 * 1.0 / 1e6 + 3_000 * 2.0 / 1e6), "override")
    local = Participant(provider="compatible", model="llama3.2", base_url="http://localhost:11434/v1")
    assert cost_of(local, USAGE, settings) == Cost(pytest.approx(12_000 * 0.5 / 1e6 + 3_000 * 0.25 / 1e6),
                                                   "override")
    unknown = Participant(provider="openai", model="gpt-imaginary-9")
    assert cost_of(unknown, USAGE, settings).usd is None  # the table prices only what it names


def test_demo_prices_are_simulated_and_say_so() -> None:
    cost = cost_of(Participant(provider="demo", model="demo"), USAGE, SETTINGS)
    input_rate, output_rate = SIMULATED_PRICES["demo:*"]
    expected = (12_000 * input_rate + 3_000 * output_rate) / 1e6
    assert cost == Cost(pytest.approx(expected), "simulated")
    assert cost.label == f"${expected:.4f} (simulated)"


def test_the_settings_override_table_prices_demo_models_too() -> None:
    settings = Settings(_env_file=None, price_overrides={"demo": PriceOverride(input_per_mtok=1, output_per_mtok=2)})
    assert cost_of(Participant(provider="demo", model="demo"), USAGE, settings) == Cost(
        pytest.approx((12_000 + 6_000) / 1e6), "override")


def test_estimate_charges_the_full_output_allowance() -> None:
    spec = Participant(provider="openai", model="gpt-4o-mini")
    estimate = estimate_call(spec, 500, 1024, SETTINGS)
    assert estimate.usd == pytest.approx(genai("gpt-4o-mini", "openai", Usage(input_tokens=500, output_tokens=1024)))


@given(
    input_tokens=st.integers(0, 200_000),
    output_tokens=st.integers(0, 16_000),
    max_tokens=st.integers(16, 16_000),
)
def test_estimate_bounds_any_call_that_stays_within_its_allowance(
    input_tokens: int, output_tokens: int, max_tokens: int
) -> None:
    spec = Participant(provider="anthropic", model="claude-haiku-4-5")
    actual = cost_of(spec, Usage(input_tokens=input_tokens, output_tokens=min(output_tokens, max_tokens)), SETTINGS)
    estimate = estimate_call(spec, input_tokens, max_tokens, SETTINGS)
    assert actual.usd is not None and estimate.usd is not None
    assert 0 <= actual.usd <= estimate.usd + 1e-12


@pytest.mark.parametrize(
    ("spent", "warn_at", "due"),
    [(0.0, None, False), (0.0, 0.01, False), (0.0099, 0.01, False), (0.01, 0.01, True), (0.5, 0.01, True),
     (0.0, 0.0, True)],
)
def test_warn_at_is_reached_by_money_spent_only(spent: float, warn_at: float | None, due: bool) -> None:
    assert warn_due(spent, warn_at) is due


def test_affordable_tokens_caps_the_output_to_the_money_left() -> None:
    spec = Participant(provider="openai", model="gpt-4o-mini")
    full = estimate_call(spec, 2_000, 1_000, SETTINGS).usd
    assert full is not None
    assert affordable_tokens(spec, 2_000, 1_000, full, SETTINGS) == 1_000  # fits whole: not capped
    half = estimate_call(spec, 2_000, 500, SETTINGS).usd or 0.0
    tokens = affordable_tokens(spec, 2_000, 1_000, half, SETTINGS)
    assert tokens is not None and 490 <= tokens <= 500
    assert (estimate_call(spec, 2_000, tokens, SETTINGS).usd or 0.0) <= half  # never more than the room
    input_only = estimate_call(spec, 2_000, 0, SETTINGS).usd or 0.0
    assert affordable_tokens(spec, 2_000, 1_000, input_only / 2, SETTINGS) == 0  # not even the input fits
    # every output token may carry a surcharge (the judge will read it): fewer tokens then
    assert (affordable_tokens(spec, 2_000, 1_000, half, SETTINGS, extra_per_token=1e-6) or 0) < tokens
    unpriced = Participant(provider="openai", model="gpt-imaginary-9")
    assert affordable_tokens(unpriced, 2_000, 1_000, 0.0, SETTINGS) is None  # nothing to cap by


@given(input_tokens=st.integers(0, 50_000), max_tokens=st.integers(16, 16_000), room=st.floats(0, 0.5))
def test_affordable_tokens_never_exceed_the_room(input_tokens: int, max_tokens: int, room: float) -> None:
    spec = Participant(provider="anthropic", model="claude-haiku-4-5")
    tokens = affordable_tokens(spec, input_tokens, max_tokens, room, SETTINGS)
    assert tokens is not None and 0 <= tokens <= max_tokens
    if tokens:
        assert (estimate_call(spec, input_tokens, tokens, SETTINGS).usd or 0.0) <= room + 1e-12
    if tokens < max_tokens:  # as many as fit: one more would not
        assert (estimate_call(spec, input_tokens, tokens + 1, SETTINGS).usd or 0.0) > room - 1e-9


@pytest.mark.parametrize(("spec", "local"), [
    (Participant(provider="compatible", model="m", preset="ollama"), True),
    (Participant(provider="compatible", model="m", preset="lmstudio"), True),
    (Participant(provider="compatible", model="m", base_url="http://127.0.0.1:8000/v1"), True),
    (Participant(provider="compatible", model="m", base_url="http://localhost:11434/v1"), True),
    (Participant(provider="compatible", model="m", preset="openrouter", base_url="http://127.0.0.1:4000/v1"), False),
    (Participant(provider="compatible", model="m", base_url="https://llm.example.com/v1"), False),
    (Participant(provider="openai", model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1"), False),
    (Participant(provider="demo", model="demo"), False),
])
def test_local_servers_are_told_apart(spec: Participant, local: bool) -> None:
    assert is_local_server(spec) is local


def test_ledger_keeps_unpriced_models_out_of_the_total() -> None:
    ledger = Ledger()
    ledger.add("openai:gpt-4o-mini", "ada", 1, Usage(input_tokens=10, output_tokens=5), 0.25, "genai-prices")
    ledger.add("openai:gpt-imaginary-9", "brook", 1, Usage(input_tokens=7, output_tokens=3), None, "unpriced")
    ledger.add("openai:gpt-4o-mini", "ada", 2, Usage(input_tokens=1, output_tokens=1, estimated=True), 0.5)
    assert ledger.total_usd == pytest.approx(0.75)
    assert ledger.unpriced_models == {"openai:gpt-imaginary-9"}
    assert ledger.by_participant == {"ada": pytest.approx(0.75)}
    assert dict(ledger.by_round) == {1: pytest.approx(0.25), 2: pytest.approx(0.5)}
    assert ledger.tokens_by_model["openai:gpt-imaginary-9"] == {"input_tokens": 7, "output_tokens": 3, "calls": 1}
    data = ledger.to_dict()
    assert data["unpriced_models"] == ["openai:gpt-imaginary-9"] and data["estimated_usage"] is True
    assert data["simulated"] is False
