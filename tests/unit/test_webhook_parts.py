"""The pure parts of webhooks: which addresses are public, which URLs are refused before any lookup,
the signature, the event names a command line may give, and the Slack message."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from webapp.webhooks.events import EVENTS, format_slack, outcome, parse_events
from webapp.webhooks.guard import WebhookRefused, check_url, is_public, shown_url
from webapp.webhooks.signing import SECRET_PREFIX, new_secret, signature, verify


@pytest.mark.parametrize(("address", "public"), [
    ("93.184.216.34", True), ("2606:4700:4700::1111", True), ("8.8.8.8", True),
    ("127.0.0.1", False), ("10.0.0.1", False), ("172.16.5.4", False), ("192.168.1.1", False),
    ("169.254.169.254", False), ("100.64.0.1", False), ("0.0.0.0", False), ("224.0.0.1", False),
    ("::1", False), ("fe80::1", False), ("fc00::1", False), ("::ffff:127.0.0.1", False),
    ("::ffff:93.184.216.34", True), ("2002:c0a8:0101::1", False),  # 6to4 of 192.168.1.1
])
def test_only_internet_addresses_are_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize("url", ["ftp://example.org/x", "file:///etc/passwd", "https:///nohost", "not a url",
                                 "javascript:alert(1)"])
def test_urls_that_are_not_http_with_a_host_are_refused(url: str) -> None:
    with pytest.raises(WebhookRefused, match="url:"):
        check_url(url)


def test_the_signature_covers_the_timestamp_and_the_body() -> None:
    secret = new_secret()
    assert secret.startswith(SECRET_PREFIX) and len(secret) > 40 and new_secret() != secret
    header = signature(secret, "1764210000", b'{"a":1}')
    assert header.startswith("sha256=") and len(header) == len("sha256=") + 64
    assert verify(secret, "1764210000", b'{"a":1}', header, now=1764210100)
    assert not verify(secret, "1764210001", b'{"a":1}', header, now=1764210100)  # another timestamp
    assert not verify(secret, "1764210000", b'{"a":2}', header, now=1764210100)  # another body
    assert not verify(secret, "1764210000", b'{"a":1}', header, now=1764210000 + 301)  # too late: a replay
    assert not verify(secret, "soon", b'{"a":1}', header)


def test_event_names_are_checked() -> None:
    assert parse_events("debate.completed, debate.error,debate.completed") == ["debate.completed", "debate.error"]
    assert parse_events(list(EVENTS)) == list(EVENTS)
    with pytest.raises(ValueError, match=r"unknown event 'debate\.finished'"):
        parse_events("debate.finished")
    with pytest.raises(ValueError, match="name at least one"):
        parse_events(" , ")


def test_a_slack_message_links_the_debate_and_escapes_the_topic() -> None:
    message = format_slack({"event": "debate.completed", "topic": "A <b> & C", "url": "https://r.example/debate/x",
                            "status": "completed", "outcome": {"headline": "Pro wins"}, "cost_usd": 0.5,
                            "detail": {"ended_because": None}})
    assert message == {"text": "*debate.completed* · <https://r.example/debate/x|A &lt;b&gt; &amp; C> · "
                               "status: completed · Pro wins · cost $0.5000"}


def test_logs_and_the_audit_trail_show_an_endpoint_without_its_path() -> None:
    assert shown_url("https://hooks.slack.com/services/T000/B000/secretpart?x=1") == "https://hooks.slack.com/…"
    assert shown_url("http://127.0.0.1:8080/a") == "http://127.0.0.1:8080/…"


async def test_the_outcome_of_a_collaborative_debate_is_its_solution_and_of_a_debate_its_winner(
        tmp_path: Path) -> None:
    from webapp.engine.engine import Engine
    from webapp.engine.machine import State
    from webapp.models import DebateConfig
    from webapp.providers.demo import OneProvider
    from webapp.settings import Settings
    from webapp.store.repository import Store

    store = await Store.open(tmp_path / "outcome.sqlite3")
    engine = Engine(store, settings=Settings(_env_file=None, demo_speed=0), providers=OneProvider())
    try:
        argued = await engine.start(DebateConfig(topic="Tea is better than coffee", format="classic"))
        assert await argued.join() is State.COMPLETED and argued.state.verdict is not None
        result = outcome(argued.state)
        assert result is not None and result["verdict"] and result["winner"] == argued.state.verdict.winner
        assert result["headline"] in ("Tie", f"{result.get('winner_name')} wins")
        together = await engine.start(DebateConfig(topic="How should a city cut traffic?", format="collaborative",
                                                   clarification=False))
        assert await together.join() is State.COMPLETED
        solution = outcome(together.state)
        assert solution is not None and solution["headline"] == "Final solution" and solution["synthesis"]
        assert solution["winner"] is None and "tie" not in solution
    finally:
        await engine.close()
