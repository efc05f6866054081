"""`presets.config_to_form` is the inverse of `form_to_config`: a stored config, turned into a form and
back, is the same config (what "Clone" relies on)."""

from __future__ import annotations

import pytest

from webapp.models import DebateConfig
from webapp.settings import Settings
from webapp.ui.components.presets import blank_form, config_to_form, form_to_config, quick_demo_config


def _round_trip(config: DebateConfig) -> DebateConfig:
    settings = Settings()
    return DebateConfig.model_validate(form_to_config(config_to_form(config, settings=settings), settings))


def _comparable(config: DebateConfig) -> dict[str, object]:
    return config.model_dump(exclude={"series", "rematch_of"})


def test_a_quick_demo_config_survives_the_round_trip() -> None:
    config = quick_demo_config("Should homework be abolished?", Settings())
    assert _comparable(_round_trip(config)) == _comparable(config)


def test_a_config_with_every_setting_survives_the_round_trip() -> None:
    config = DebateConfig.model_validate({
        "topic": "Design a cheaper cloud", "format": "collaborative", "rounds": 3,
        "participants": [
            {"name": "Ada", "provider": "compatible", "model": "llama3.1", "position": "architect",
             "preset": "ollama", "base_url": "http://localhost:11434/v1", "concurrency": 2, "persona": "terse",
             "temperature": 0.4, "max_tokens": 900, "context_tokens": 4000, "color": "#16a34a"},
            {"name": "Bo", "provider": "openai", "model": "gpt-4o", "position": "critic"},
        ],
        "judge": {"judges": [{"provider": "demo", "model": "demo"}, {"provider": "anthropic", "model": "claude"}],
                  "fallback": {"provider": "demo", "model": "demo-instant"}, "criteria": ["clarity"],
                  "frequency": "round", "swap_sides": True},
        "budget": {"warn_at": 0.5, "cost_limit": 2.0},
        "timeouts": {"turn": 200},
        "context": {"strategy": "sliding-window", "window": 4},
        "word_limit": 80, "word_limit_action": "reject", "strict": True, "seed": 7, "max_retries": 0,
        "evaluation": "convergence", "quality_threshold": 90, "clarification": True,
        "clarification_questions": 2, "clarification_iterations": 1,
        "series": "s1", "rematch_of": "abc",
    })
    again = _round_trip(config)
    assert _comparable(again) == _comparable(config)
    assert again.timeouts.model_fields_set == {"turn"}  # empty timeouts stay "the kind's default"
    assert (again.series, again.rematch_of) == (None, None)  # a clone is a debate of its own


@pytest.mark.parametrize("judged", [True, False])
def test_a_form_survives_config_and_back(judged: bool) -> None:
    settings = Settings()
    form = blank_form(settings=settings)
    form["topic"] = "Tabs or spaces?"
    form["judge"]["enabled"] = judged
    config = DebateConfig.model_validate(form_to_config(form, settings))
    assert form_to_config(config_to_form(config, settings=settings), settings) == form_to_config(form, settings)
