"""The HTTP API's small parts: an event stream's ids (places in the log) read back exactly, and the
per-token rate limit's sliding minute."""

from __future__ import annotations

import pytest

from webapp.access.roles import Role
from webapp.access.tokens import PREFIX, TokenRateLimiter, lesser, new_api_token
from webapp.api.events import Position


def test_a_position_round_trips_through_its_event_id() -> None:
    position = Position(12, {"opening/r1/pro/0": (1, 340), "odd,key:with@marks": (2, 5)})
    text = str(position)
    assert text.startswith("12.340@1:opening/r1/pro/0,")
    assert "," not in text.split(",", 1)[1].replace("%2C", "")  # a key's comma cannot split the list
    again = Position.parse(text)
    assert (again.seq, again.turns) == (12, position.turns)
    assert str(Position(7)) == "7" and Position.parse("7").turns == {}


def test_an_unreadable_last_event_id_means_from_the_start() -> None:
    for text in (None, "", "abc", "3.x@1:k", "-4"):
        position = Position.parse(text)
        assert position.seq == 0 and position.turns == {}


def test_the_rate_limit_is_a_sliding_minute_per_token() -> None:
    now = [1000.0]
    limiter = TokenRateLimiter(3, clock=lambda: now[0])
    assert [limiter.hit("a") for _ in range(3)] == [0, 0, 0]
    assert limiter.hit("a") == 60  # the oldest of the three leaves the window in a minute
    assert limiter.hit("b") == 0  # another token has its own minute
    now[0] += 30
    assert limiter.hit("a") == 30  # a refused request is not counted
    now[0] += 30.5
    assert limiter.hit("a") == 0


def test_tokens_look_like_tokens_and_roles_only_shrink() -> None:
    token = new_api_token()
    assert token.startswith(PREFIX) and len(token) > 40 and token != new_api_token()
    assert lesser(Role.ADMIN, Role.VIEWER) is Role.VIEWER and lesser(Role.OPERATOR, Role.ADMIN) is Role.OPERATOR


async def test_a_persons_daily_limit_counts_what_they_start_with_tokens_and_without(tmp_path) -> None:
    """One limit per person: debates started in the browser and with any of their API tokens add up."""
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal
    from webapp.engine.engine import Engine
    from webapp.engine.schedule import ConfigError
    from webapp.models import DebateConfig
    from webapp.providers.demo import OneProvider, RecordingDemoProvider

    engine = await Engine.open(tmp_path / "limit.sqlite3", providers=OneProvider(RecordingDemoProvider("demo")))
    try:
        from webapp.store.accounts import Accounts

        await Accounts(engine.store).add_user("ada", "operator", None)
        browser = Gate(engine, Principal(name="ada", role=Role.OPERATOR), daily_usd=1.0)
        token = Gate(engine, Principal(name="ada", role=Role.OPERATOR, kind="token", token_suffix="f3a9"),
                     daily_usd=1.0)
        config = DebateConfig.model_validate({"topic": "Tea beats coffee", "budget": {"cost_limit": 0.6}})
        started = await token.start(config)
        assert (await engine.store.get_row(started.id)).created_by == "ada (token …f3a9)"
        await started.send("pause", actor="ada")  # keeps its limit reserved, spends nothing more
        assert await browser.daily_spend() == pytest.approx(0.6) == await token.daily_spend()
        with pytest.raises(ConfigError, match="more than you have left today"):
            await browser.start(config)
    finally:
        for session in list(engine.sessions.values()):
            await session.shutdown()
        await engine.close()
