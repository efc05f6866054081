"""Webhooks end to end: real demo debates on real stores, a real HTTP receiver on this machine (a small
threaded server in the test), the real sender over httpx.

The receiver verifies signatures with the README's recipe; it can answer a status of the test's choosing
and hold every request until the test lets it go (a slow receiver). Waiting is on events the receiver
or the engine signals, never on a clock.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.webhook_receiver import TIMEOUT, Receiver, receiving, verify_signature
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.cli import EXIT_OK, EXIT_USAGE, main
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.runner import DebateSession
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.settings import Settings, get_settings
from webapp.store import Store
from webapp.store.protocol import EventStore, open_store
from webapp.store.webhooks import WebhookStore
from webapp.webhooks import Webhooks
from webapp.webhooks.guard import WebhookRefused
from webapp.webhooks.manage import WebhookAdmin
from webapp.webhooks.sender import WebhookSender


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    opened = await Store.open(tmp_path / "hooks.sqlite3")
    try:
        yield opened
    finally:
        await opened.close()


SETTINGS = Settings(_env_file=None, demo_speed=0, webhook_allow_private=True, public_url="https://rostrum.example/")


@pytest.fixture
async def engine(store: EventStore) -> AsyncIterator[Engine]:
    made = Engine(store, settings=SETTINGS, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
    try:
        yield made
    finally:
        for session in list(made.sessions.values()):
            await session.shutdown()


async def _register(engine: Engine, url: str, events: str, slack: bool = False) -> str:
    done = await WebhookAdmin(Gate(engine, CLI), allow_private=True).add(url, events, "slack" if slack else "json")
    return done.secret


def _fast_sender(store: EventStore, **kwargs: object) -> WebhookSender:
    options: dict = {"allow_private": True, "poll": 0.05, "backoff": 0.01, "backoff_cap": 0.05} | kwargs
    return WebhookSender(store, **options)


def _target(store: EventStore) -> str | Path:
    """Where `store` keeps its data (another store opened on it is another process's view)."""
    from webapp.store.postgres import PostgresStore

    return store.path if isinstance(store, Store) else (store.dsn if isinstance(store, PostgresStore) else "")


def _rounds_completed(session: DebateSession) -> int:
    return sum(1 for t in session.state.transitions if t.event == "ROUND_COMPLETE")


# --- signed deliveries of a real debate ------------------------------------------------------------


async def test_a_demo_debate_sends_signed_started_round_and_completed_deliveries(
        engine: Engine, store: EventStore, receiver: Receiver) -> None:
    secret = await _register(engine, receiver.url, "debate.started,debate.round,debate.completed")
    hooks = Webhooks(engine, SETTINGS)
    await hooks.start()
    try:
        session = await engine.start(DebateConfig(topic="Tea is better than coffee", format="classic"))
        assert await asyncio.wait_for(session.join(), TIMEOUT) is State.COMPLETED
        rounds = _rounds_completed(session)
        got = [await receiver.next() for _ in range(rounds + 2)]
        assert hooks.sender is not None
        await hooks.sender.settled()
    finally:
        await hooks.close()
    events = sorted(r.headers["X-Rostrum-Event"] for r in got)
    assert rounds >= 1 and events == ["debate.completed", *["debate.round"] * rounds, "debate.started"]
    assert len({r.headers["X-Rostrum-Delivery"] for r in got}) == len(got)
    done = next(r for r in got if r.headers["X-Rostrum-Event"] == "debate.completed")
    assert done.headers["Content-Type"] == "application/json"
    assert verify_signature(secret, done.headers, done.body)  # the README's recipe
    assert not verify_signature(secret, done.headers, done.body.replace(b'"completed"', b'"stopped"'))
    assert not verify_signature("whsec_not-the-secret", done.headers, done.body)
    stale = {**done.headers, "X-Rostrum-Timestamp": str(int(done.headers["X-Rostrum-Timestamp"]) - 3600)}
    assert not verify_signature(secret, stale, done.body)  # a replay an hour later
    payload = done.json
    state = session.state
    assert payload["event"] == "debate.completed" and payload["debate_id"] == session.id
    assert payload["url"] == f"https://rostrum.example/debate/{session.id}"
    assert (payload["topic"], payload["status"], payload["format"]) == ("Tea is better than coffee", "completed",
                                                                        "classic")
    assert state.verdict is not None and payload["outcome"]["winner"] == state.verdict.winner
    assert payload["cost_usd"] == state.summary()["cost_usd"]
    rows, total = await WebhookStore(store).deliveries()
    assert total == len(got) and {(r.status, r.attempts, r.last_status) for r in rows} == {("delivered", 1, 200)}


async def test_a_receiver_that_answers_500_first_gets_the_same_delivery_again(
        engine: Engine, store: EventStore, receiver: Receiver) -> None:
    receiver.statuses = [500]
    secret = await _register(engine, receiver.url, "debate.completed")
    sender = _fast_sender(store)
    relay = Webhooks(engine, SETTINGS, send=False).relay
    relay.on_queued = sender.wake
    relay.start()
    await sender.start()
    try:
        session = await engine.start(DebateConfig(topic="Cats or dogs", format="classic"))
        assert await asyncio.wait_for(session.join(), TIMEOUT) is State.COMPLETED
        first, second = await receiver.next(), await receiver.next()
        await sender.settled()
    finally:
        await relay.close()
        await sender.close()
    assert first.headers["X-Rostrum-Delivery"] == second.headers["X-Rostrum-Delivery"]
    assert first.body == second.body and verify_signature(secret, second.headers, second.body)
    row = await WebhookStore(store).delivery(second.headers["X-Rostrum-Delivery"])
    assert row is not None
    assert (row.status, row.attempts, row.last_status, row.last_error) == ("delivered", 2, 200, "HTTP 500: not today")


async def test_an_error_and_a_spending_warning_are_queued_with_their_detail(store: EventStore) -> None:
    engine = Engine(store, settings=SETTINGS, providers=OneProvider(
        RecordingDemoProvider("demo-instant", speed=0, failures={5: "auth!"})))  # turn 5 fails every time
    await _register(engine, "http://127.0.0.1:9/a", "debate.error,debate.warning")
    relay = Webhooks(engine, SETTINGS, send=False).relay  # queued only: nothing is sent here
    relay.start()
    try:
        failing = await engine.start(DebateConfig(topic="Can a key be missing?", format="classic", max_retries=0))
        assert await asyncio.wait_for(failing.join(), TIMEOUT) is State.ERROR
        engine.providers = OneProvider(RecordingDemoProvider("demo-instant", speed=0))
        warned = await engine.start(DebateConfig(topic="Is it worth it?", format="oxford",
                                                 budget={"warn_at": 0.001}))
        assert await asyncio.wait_for(warned.join(), TIMEOUT) is State.AWAITING_ACK
        await relay.flush()
    finally:
        await relay.close()
        for session in list(engine.sessions.values()):
            await session.shutdown()
    rows, _ = await WebhookStore(store).deliveries()
    by_event = {r.event: r for r in rows}
    assert sorted(by_event) == ["debate.error", "debate.warning"] and len(rows) == 2
    error = by_event["debate.error"].payload
    assert (error["debate_id"], error["status"], error["outcome"]) == (failing.id, "error", None)
    assert error["detail"]["error"]["kind"] == "fatal" and error["detail"]["error"]["message"]
    warning = by_event["debate.warning"].payload
    assert warning["debate_id"] == warned.id and warning["detail"]["type"] == "cost_warning"
    assert warning["detail"]["warn_at"] == 0.001 and warning["cost_usd"] > 0


# --- no slowing down, no sending twice ---------------------------------------------------------------


async def test_a_receiver_that_holds_every_request_does_not_slow_the_debate(
        engine: Engine, store: EventStore, receiver: Receiver) -> None:
    receiver.hold.clear()  # every request waits until the test lets it go
    await _register(engine, receiver.url, "debate.started,debate.round,debate.completed")
    sender = _fast_sender(store, timeout=TIMEOUT * 2)
    relay = Webhooks(engine, SETTINGS, send=False).relay
    relay.on_queued = sender.wake
    relay.start()
    await sender.start()
    try:
        session = await engine.start(DebateConfig(topic="Tea is better than coffee", format="classic"))
        held = await receiver.next()  # a delivery is stuck in the receiver…
        assert await asyncio.wait_for(session.join(), TIMEOUT) is State.COMPLETED  # …and the debate ends
        assert not receiver.hold.is_set()
        row = await WebhookStore(store).delivery(held.headers["X-Rostrum-Delivery"])
        assert row is not None and row.status == "pending"  # still being sent
        receiver.hold.set()
        expected = _rounds_completed(session) + 2
        for _ in range(expected - 1):
            await receiver.next()
        await relay.flush()
        await sender.settled()
    finally:
        receiver.hold.set()
        await relay.close()
        await sender.close()
    rows, total = await WebhookStore(store).deliveries()
    assert total == expected and all(r.status == "delivered" for r in rows)


async def test_two_senders_on_one_store_send_each_delivery_once(any_store: EventStore, receiver: Receiver) -> None:
    hooks = WebhookStore(any_store)
    await hooks.add_endpoint(receiver.url, ["debate.round"], "whsec_two-senders", "ada")
    count = 24
    for n in range(count):
        await hooks.enqueue("debate.round", f"d:{n}", {"event": "debate.round", "n": n}, subject="d",
                            now=time.time(), window=3600)
    other = await open_store(_target(any_store))  # the second sender is another process's view of the store
    first, second = _fast_sender(any_store, owner="web"), _fast_sender(other, owner="worker")
    try:
        await asyncio.gather(first.start(), second.start())
        got = [await receiver.next() for _ in range(count)]
        await asyncio.gather(first.settled(), second.settled())
        assert await first.pump() == 0 and await second.pump() == 0  # nothing left to send
    finally:
        await first.close()
        await second.close()
        await other.close()
    assert sorted(r.json["n"] for r in got) == list(range(count)) and receiver.arrivals.empty()
    assert len({r.headers["X-Rostrum-Delivery"] for r in got}) == count
    assert first.sent + second.sent == count
    rows, _ = await hooks.deliveries(limit=100)
    assert {(r.status, r.attempts) for r in rows} == {("delivered", 1)}


# --- no server-side request forgery ----------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://[::1]/hook", "http://10.1.2.3/hook",
    "http://192.168.0.10/hook", "http://169.254.169.254/latest/meta-data", "http://[::ffff:192.168.0.1]/hook",
    "http://100.64.0.1/hook", "http://0.0.0.0/hook",
])
async def test_an_endpoint_on_a_private_address_is_refused(engine: Engine, store: EventStore, url: str) -> None:
    admin = WebhookAdmin(Gate(engine, CLI), allow_private=False)
    with pytest.raises(WebhookRefused, match="ROSTRUM_WEBHOOK_ALLOW_PRIVATE=1"):
        await admin.add(url, "debate.completed")
    assert await WebhookStore(store).endpoints() == []


async def test_an_address_that_became_private_is_not_sent_to(store: EventStore, receiver: Receiver) -> None:
    """Allowed when it was registered; a sender that does not allow private addresses refuses it at send
    time (the check runs on every attempt, on the address it then connects to)."""
    hooks = WebhookStore(store)
    await hooks.add_endpoint(receiver.url, ["debate.completed"], "whsec_x", "ada")
    await hooks.enqueue("debate.completed", "d:1", {"event": "debate.completed"}, now=time.time(), window=86400)
    sender = WebhookSender(store, allow_private=False, backoff=3600)
    try:
        assert await sender.run_once() == 1
    finally:
        await sender.close()
    assert receiver.received == []
    [row], _ = await hooks.deliveries()
    assert row.status == "pending" and row.attempts == 1 and "loopback or private" in (row.last_error or "")


async def test_a_host_name_is_resolved_once_and_the_request_keeps_it_in_its_host_header(
        store: EventStore, receiver: Receiver) -> None:
    """The sender connects to an address it resolved `localhost` to and checked (trying the next one if
    there are several and one refuses), and says the name it was given in the `Host` header."""
    port = receiver.url.split(":")[2].split("/")[0]
    hooks = WebhookStore(store)
    await hooks.add_endpoint(f"http://localhost:{port}/hooks/rostrum", ["debate.completed"], "whsec_pin", "ada")
    await hooks.enqueue("debate.completed", "d:1", {"event": "debate.completed"}, now=time.time(), window=3600)
    sender = WebhookSender(store, allow_private=True)
    try:
        assert await sender.run_once() == 1
    finally:
        await sender.close()
    [got] = receiver.received
    assert got.headers["Host"] == f"localhost:{port}" and verify_signature("whsec_pin", got.headers, got.body)
    [row], _ = await hooks.deliveries()
    assert (row.status, row.last_status) == ("delivered", 200)


def test_the_cli_refuses_a_private_endpoint_and_prints_the_secret_of_an_allowed_one_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.sqlite3")
    monkeypatch.delenv("ROSTRUM_WEBHOOK_ALLOW_PRIVATE", raising=False)
    get_settings.cache_clear()

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        out = io.StringIO()
        code = main([*argv, "--db", db], out=out)
        return code, out.getvalue(), capsys.readouterr().err

    try:
        code, out, err = run("webhooks", "add", "http://127.0.0.1:9/hook", "--events", "debate.completed")
        assert code == EXIT_USAGE and "secret" not in out
        assert "127.0.0.1" in err and "ROSTRUM_WEBHOOK_ALLOW_PRIVATE=1" in err
        code, out, err = run("webhooks", "add", "https://hooks.example/x", "--events", "debate.done")
        assert code == EXIT_USAGE and "unknown event 'debate.done'" in err
        monkeypatch.setenv("ROSTRUM_WEBHOOK_ALLOW_PRIVATE", "1")
        get_settings.cache_clear()
        code, out, _ = run("webhooks", "add", "http://127.0.0.1:9/hook", "--events", "debate.completed,debate.error")
        assert code == EXIT_OK
        secrets = [line.removeprefix("secret: ") for line in out.splitlines() if line.startswith("secret: whsec_")]
        assert len(secrets) == 1 and len(secrets[0]) > 40
        code, listed, _ = run("webhooks", "list", "--json")
        [endpoint] = json.loads(listed)
        assert code == EXIT_OK and secrets[0] not in listed
        assert endpoint["events"] == ["debate.completed", "debate.error"]
        code, out, _ = run("webhooks", "remove", endpoint["id"])
        assert code == EXIT_OK and "Removed" in out
        assert json.loads(run("webhooks", "list", "--json")[1]) == []
    finally:
        get_settings.cache_clear()


def test_a_debate_run_from_the_cli_sends_its_webhook_before_the_command_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI is a process that commits events too: it queues them and gives them their first attempt
    before it exits (the receiver has the request when `main` returns)."""
    db = str(tmp_path / "cli.sqlite3")
    monkeypatch.setenv("ROSTRUM_WEBHOOK_ALLOW_PRIVATE", "1")
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    monkeypatch.setenv("ROSTRUM_PUBLIC_URL", "https://rostrum.example")
    get_settings.cache_clear()
    with receiving() as receiver:  # a loop of its own (`main` runs its own); the settings cache is
        # cleared after every test (tests/conftest.py)
        out = io.StringIO()
        assert main(["webhooks", "add", receiver.url, "--events", "debate.completed", "--db", db], out=out) == EXIT_OK
        secret = next(line for line in out.getvalue().splitlines() if line.startswith("secret: ")).split(" ", 1)[1]
        assert main(["debate", "Should cities ban cars downtown?", "--format", "classic", "--db", db],
                    out=io.StringIO()) == EXIT_OK
        if not receiver.received:  # say what became of the delivery (its log), not only that none arrived
            log = io.StringIO()
            main(["webhooks", "deliveries", "--db", db], out=log)
            pytest.fail(f"no delivery arrived before the command ended; the delivery log:\n{log.getvalue()}")
        [got] = receiver.received
        assert got.json["event"] == "debate.completed" and verify_signature(secret, got.headers, got.body)
        assert got.json["url"].startswith("https://rostrum.example/debate/")
        out = io.StringIO()
        assert main(["webhooks", "deliveries", "--db", db], out=out) == EXIT_OK
        assert "debate.completed" in out.getvalue() and "delivered  attempts 1  HTTP 200" in out.getvalue()
