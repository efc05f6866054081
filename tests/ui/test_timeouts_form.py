"""The new-debate form shows the timeouts a debate gets when the fields are left empty: the default
of each provider's kind (local servers far more generous); left empty, they stay empty in the config."""

from __future__ import annotations

from nicegui.testing import User

from tests.ui.helpers import one, start_by_clicking
from webapp.models import HOSTED_TIMEOUTS, LOCAL_TIMEOUTS


async def test_empty_timeout_fields_show_the_defaults_per_kind_and_start_with_them(user: User) -> None:
    await user.open("/new")
    for key in ("first_token", "turn"):
        field = one(user, f"field-timeouts.{key}")
        assert field.value is None  # nothing chosen: each provider's kind decides
        hosted, local = f"{HOSTED_TIMEOUTS[key]:g}", f"{LOCAL_TIMEOUTS[key]:g}"
        assert f"default {hosted} s, {local} s for local servers" in field.props["hint"]
        assert field.props["placeholder"] == f"{hosted} / local {local}"
    user.find(marker="field-topic").type("Should exams be open-book?")
    config = (await start_by_clicking(user)).state.config
    assert config.timeouts.model_fields_set == set()
    assert config.timeouts.for_server(local=True).turn == LOCAL_TIMEOUTS["turn"]
