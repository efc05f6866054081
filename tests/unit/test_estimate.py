"""The estimated cost range of a whole debate (`webapp.engine.estimate`): from the format's turns and
each model's price, judge calls included; free models are free, unknown ones unpriced, never guessed."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.engine.estimate import LOW_TURN_TOKENS, TOKENS_PER_WORD, estimate_debate, usd
from webapp.engine.formats import get_format
from webapp.engine.schedule import plan
from webapp.models import DebateConfig
from webapp.settings import PriceOverride, Settings

# $1 per output token, input free: a cost is the output tokens counted
PER_OUTPUT_TOKEN = Settings(_env_file=None, price_overrides={
    "priced": PriceOverride(input_per_mtok=0.0, output_per_mtok=1_000_000.0)})
REAL = Settings(_env_file=None)


def config(provider: str = "openai", model: str = "gpt-4o", judge: dict[str, Any] | None = None,
           **changes: Any) -> DebateConfig:
    seat = {"provider": provider, "model": model}
    if provider == "compatible":
        seat["base_url"] = "http://localhost:11434/v1"
    return DebateConfig.model_validate({
        "topic": "Should museums be free?", "format": "classic",
        "participants": [{"name": "A", "position": "pro", **seat}, {"name": "B", "position": "con", **seat}],
        "judge": judge or {"judges": [{"provider": "demo", "model": "demo"}]}, **changes})


def test_demo_and_local_models_are_free() -> None:
    assert estimate_debate(config("demo", "demo"), REAL).label == "Free"
    local = estimate_debate(config("compatible", "llama3.1"), REAL)
    assert local.free and local.label == "Free" and "compatible:llama3.1" in local.free_models


def test_an_unknown_model_is_unpriced_and_adds_nothing() -> None:
    estimate = estimate_debate(config("openai", "no-such-model-xyz"), REAL)
    assert estimate.label == "Unpriced: openai:no-such-model-xyz"
    assert (estimate.low_usd, estimate.high_usd) == (0, 0)


def test_every_turn_counts_its_allowance_at_the_high_end() -> None:
    cfg = config("openai", "priced", word_limit=100, rounds=2)
    estimate = estimate_debate(cfg, PER_OUTPUT_TOKEN)
    turns = sum(len(step.turns) for step in plan(get_format("classic"), cfg))
    assert estimate.turns_high == estimate.turns_low == turns
    per_turn = round(100 * TOKENS_PER_WORD)  # the word limit in tokens, under the 1024 max tokens
    assert per_turn < LOW_TURN_TOKENS  # so the short answer is that long too
    assert estimate.high_usd == pytest.approx(per_turn * turns)
    assert estimate.low_usd == pytest.approx(per_turn * turns)
    assert estimate.label == f"{usd(estimate.low_usd)} – {usd(estimate.high_usd)}"


def test_the_range_grows_with_rounds_and_a_priced_judge_adds_its_calls() -> None:
    one, three = (estimate_debate(config(rounds=r), REAL) for r in (1, 3))
    assert 0 < one.low_usd < one.high_usd
    assert one.low_usd < three.low_usd and one.high_usd < three.high_usd
    judged = estimate_debate(config(rounds=3, judge={"judges": [{"provider": "openai", "model": "gpt-4o"}]}), REAL)
    assert judged.high_usd > three.high_usd and judged.judge_calls_high == 1
    swapped = estimate_debate(config(rounds=3, judge={"judges": [{"provider": "openai", "model": "gpt-4o"}],
                                                      "swap_sides": True}), REAL)
    assert swapped.judge_calls_high == 2 and swapped.high_usd > judged.high_usd
    unjudged = estimate_debate(config(rounds=3, judge={"enabled": False}), REAL)
    assert unjudged.judge_calls_high == 0


def test_a_format_that_may_stop_early_spans_its_fewest_to_its_most_rounds() -> None:
    cfg = config().model_copy(update={"format": "convergence"})
    fmt = get_format("convergence")
    estimate = estimate_debate(DebateConfig.model_validate(cfg.model_dump()), REAL)
    assert fmt.termination.min_rounds < fmt.termination.max_rounds
    assert estimate.turns_low < estimate.turns_high
    assert estimate.low_usd < estimate.high_usd
