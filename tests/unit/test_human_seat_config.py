"""A human seat in the configuration: no model is built or checked for it, the estimate counts it free,
the form offers it to participants only and carries who takes the seat, and viewers may send a seat's
turn (never a share link)."""

from __future__ import annotations

import pytest

from webapp.access.roles import PERMISSIONS, SHARE_LINK_ACTIONS, Action, Role
from webapp.engine.estimate import estimate_debate
from webapp.engine.schedule import model_specs, provider_problem
from webapp.models import DebateConfig, Participant
from webapp.providers.base import ProviderError
from webapp.providers.registry import ProviderCache
from webapp.ui.components.presets import config_to_form, form_to_config


def _config(seat: str | None = "ada") -> DebateConfig:
    return DebateConfig.model_validate({
        "topic": "Should night buses run every hour?", "format": "classic",
        "participants": [{"name": "Ada", "provider": "human", "position": "pro", "seat": seat},
                         {"name": "Bot", "provider": "demo", "position": "con"}],
    })


def test_no_model_is_checked_or_built_for_a_person() -> None:
    config = _config()
    assert [field for field, _ in model_specs(config)] == ["participants[1]", "judge.judges[0]"]
    assert provider_problem(config) is None
    with pytest.raises(ProviderError, match="human seat has no model"):
        ProviderCache().get(config.participants[0])


def test_the_estimate_counts_a_person_free() -> None:
    assert estimate_debate(_config()).free
    assert Participant(name="A", provider="human", model="gpt-4o").model == "human"


def test_the_form_round_trips_a_human_seat() -> None:
    form = config_to_form(_config())
    row = form["participants"][0]
    assert row["provider"] == "human" and row["seat"] == "ada"
    again = DebateConfig.model_validate(form_to_config(form))
    assert again.participants[0].is_human and again.participants[0].seat == "ada"
    row["seat"] = ""  # empty: whoever takes it first
    assert DebateConfig.model_validate(form_to_config(form)).participants[0].seat is None


def test_viewers_may_send_a_seats_turn_but_share_links_may_not() -> None:
    assert Action.SEND_TURN in PERMISSIONS[Role.VIEWER]
    assert Action.SEND_TURN not in SHARE_LINK_ACTIONS
