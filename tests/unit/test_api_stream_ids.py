"""The HTTP API's small parts: an event stream's ids (places in the log) read back exactly, and the
per-token rate limit's sliding minute."""

from __future__ import annotations

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
