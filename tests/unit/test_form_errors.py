"""The new-debate form's errors in plain words: what pydantic reports, worded for the field, and never
an internal path."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from webapp.models import DebateConfig
from webapp.ui.components.form_errors import plain, reword, subject


def _errors(data: dict[str, Any]) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as caught:
        DebateConfig.model_validate({"topic": "Tabs or spaces?", **data})
    return [dict(e) for e in caught.value.errors()]


@pytest.mark.parametrize(("path", "expected"), [
    ("participants[1].temperature", "the temperature of participant 2 (Bo)"),
    ("participants[0].max_tokens", "the max tokens of participant 1"),
    ("judge.judges[2].model", "the model of judge 3"),
    ("judge.fallback.provider", "the provider of the fallback judge"),
    ("budget.cost_limit", "the cost limit"),
    ("timeouts.first_token", "the first-token timeout"),
    ("context.window", "the window"),
])
def test_each_path_has_a_name_in_words(path: str, expected: str) -> None:
    assert subject(path, {1: "Bo"}) == expected


@pytest.mark.parametrize(("data", "path", "expected"), [
    ({"max_retries": 50}, "max_retries", "The number of retries must be at most 20"),
    ({"seed": -1}, "seed", "The seed must be at least 0"),
    ({"budget": {"cost_limit": 0}}, "budget.cost_limit", "The cost limit must be more than 0"),
    ({"budget": {"warn_at": 2, "cost_limit": 1}}, "budget.cost_limit",
     "The cost limit must be at least the warn-at amount"),
    ({"topic": "x" * 5000}, "topic", "The topic is too long (at most 2000 characters)"),
    ({"word_limit": "many"}, "word_limit", "The word limit must be a whole number"),
    ({"participants": [{"name": "Ada", "temperature": 3}]}, "participants[0].temperature",
     "The temperature of participant 1 (Ada) must be at most 2"),
    ({"participants": [{"provider": "compatible", "base_url": "localhost"}]}, "participants[0].base_url",
     "The base URL must start with http:// or https://"),
    ({"judge": {"judges": [{"model": ""}]}}, "judge.judges[0].model", "The model of judge 1 is required"),
    ({"judge": {"criteria": []}}, "judge.criteria", "Give at least one judging criterion"),
])
def test_model_errors_read_as_plain_words(data: dict[str, Any], path: str, expected: str) -> None:
    (error,) = _errors(data)
    assert plain(path, error, {0: "Ada"} if "participants" in data else None) == expected


def test_a_repeated_judge_is_counted_from_one() -> None:
    assert reword("Value error, judges[1] repeats demo:demo; a panel needs different models") == (
        "Judge 2 repeats demo:demo: a panel needs different models")
