"""The new-debate form's "Calls at once" field: a participant's endpoint concurrency limit."""

from __future__ import annotations

from nicegui.testing import User

from tests.ui.helpers import engine, one, start_by_clicking


def _set(user: User, marker: str, value: object) -> None:
    with user:
        one(user, marker).value = value


async def test_calls_at_once_reaches_the_debate_and_empty_means_the_default(user: User) -> None:
    await user.open("/new")
    _set(user, "field-topic", "Should exams be open-book?")
    assert one(user, "field-participants[0].concurrency").value is None
    _set(user, "field-participants[0].concurrency", 2)
    config = (await start_by_clicking(user)).state.config
    assert [p.concurrency for p in config.participants] == [2, None]


async def test_an_out_of_range_limit_is_reported_at_its_field(user: User) -> None:
    await user.open("/new")
    _set(user, "field-topic", "Should exams be open-book?")
    _set(user, "field-participants[1].concurrency", 0)
    user.find(marker="start").click()
    await user.should_see(marker="form-errors")
    assert one(user, "field-participants[1].concurrency").error
    assert one(user, "field-participants[1].concurrency").value == 0  # kept as typed
    assert (await engine()).sessions == {}
