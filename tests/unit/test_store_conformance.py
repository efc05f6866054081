"""The store conformance suite: what every store (`webapp.store.protocol.EventStore`) must do, run
against each of them (`any_store`: SQLite, PostgreSQL): append and fold, idempotency keys, the
stale-write check across processes, listing, search and paging, series and spending queries, deletion,
the accounts, share links, audit rows and registered endpoints kept beside the log, and the queries
written per database:
the verdict digests, the leaderboard, the tournament store, the topic-and-tag search and the webhook
endpoints and delivery queue. The tests of
one store's own machinery (SQLite's file, pragmas and group commit) stay in test_store.py."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.leaderboard_corpus import ALPHA, BETA, store_league
from webapp.access.throttle import LoginThrottle
from webapp.engine.engine import Engine
from webapp.engine.judge_health import stored_verdicts
from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, EventKind, utcnow
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.providers.endpoints import Endpoint
from webapp.results.leaderboard import LeaderboardFilters, leaderboard
from webapp.results.records import load_results, rebuild_digests
from webapp.settings import Settings
from webapp.store import StaleWrite, Store
from webapp.store.accounts import UNKNOWN_ACTOR, Accounts, UnknownUser, UserExists
from webapp.store.audience import AudienceStore
from webapp.store.comments import CommentStore
from webapp.store.endpoints import EndpointStore, EndpointTaken, UnknownEndpoint
from webapp.store.errors import DuplicateKey
from webapp.store.postgres import PostgresStore
from webapp.store.protocol import EventStore, open_store
from webapp.store.sign_ins import SignIns
from webapp.store.tokens import ApiTokens
from webapp.store.webhooks import WebhookStore
from webapp.tournament.plan import Contender, Tournament, schedule, slot_config
from webapp.tournament.runner import TournamentRunner
from webapp.tournament.store import TournamentBusy, TournamentStore
from webapp.webhooks.relay import WebhookRelay


def target(store: EventStore) -> str | Path:
    """Where `store` keeps its data: another store opened on it is another process's view."""
    if isinstance(store, Store):
        return store.path
    assert isinstance(store, PostgresStore)
    return store.dsn


async def _debate(store: EventStore, debate_id: str = "abc", **summary: Any) -> None:
    await store.create_debate(debate_id, f"Topic {debate_id}", "classic", {}, {"status": "idle", **summary})


# --- append and fold ----------------------------------------------------------------------------


async def test_a_demo_debate_folds_back_to_its_live_state(any_store: EventStore) -> None:
    """The engine runs a whole debate on the store; the log read back folds to the same state."""
    engine = Engine(any_store, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
    try:
        session = await engine.start(DebateConfig(topic="Tea is better than coffee", format="classic"))
        assert await session.join() is State.COMPLETED
    finally:
        for running in list(engine.sessions.values()):
            await running.shutdown()
    events = await any_store.events(session.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    rebuilt = DebateState.from_events(events)
    assert [t.model_dump() for t in rebuilt.turns] == [t.model_dump() for t in session.state.turns]
    assert rebuilt.summary() == session.state.summary() and rebuilt.verdict == session.state.verdict
    row = await any_store.get_row(session.id)
    assert row is not None and (row.status, row.turn_count) == ("completed", len(session.state.turns))


async def test_events_after_returns_only_the_later_events_in_order(any_store: EventStore) -> None:
    await _debate(any_store)
    for n in range(5):
        await any_store.append("abc", EventKind.NOTE, {"n": n, "text": "<b>ünïcode</b> ' \" ?"})
    later = await any_store.events_after("abc", 3)
    assert [(e.seq, e.data["n"]) for e in later] == [(4, 2), (5, 3), (6, 4)]
    assert later[0].data["text"] == "<b>ünïcode</b> ' \" ?"  # stored as given, placeholders and all
    assert await any_store.events_after("abc", 6) == [] and await any_store.events("nope") == []


async def test_the_change_marker_moves_on_every_create_and_append(any_store: EventStore) -> None:
    empty = await any_store.last_change()
    assert empty == (0, "")
    await _debate(any_store)
    created = await any_store.last_change()
    await any_store.append("abc", EventKind.NOTE, {}, at=utcnow() + timedelta(seconds=1))
    appended = await any_store.last_change()
    assert len({empty, created, appended}) == 3 and appended[0] == 1


# --- idempotency and the stale-write check, across processes ---------------------------------------


async def test_an_idempotency_key_stores_once_even_when_two_processes_race(any_store: EventStore) -> None:
    await _debate(any_store)
    other = await open_store(target(any_store))
    try:
        results = await asyncio.gather(*(
            store.append("abc", EventKind.TURN, {"by": n}, idem_key="opening/r1/pro/0", summary={"turn_count": 1})
            for n, store in enumerate([any_store, other, any_store, other])
        ))
    finally:
        await other.close()
    stored = [r for r in results if r is not None]
    assert len(stored) == 1 and stored[0].seq == 2
    assert [e.seq for e in await any_store.events("abc")] == [1, 2]


async def test_a_write_that_does_not_extend_what_its_writer_read_is_refused(any_store: EventStore) -> None:
    """Two processes both read the log at event 1; the first to append wins, the other gets `StaleWrite`
    and writes nothing; after reading again it may append."""
    await _debate(any_store)
    other = await open_store(target(any_store))
    try:
        assert (await any_store.append("abc", EventKind.NOTE, {"by": "first"}, expected_seq=2)) is not None
        with pytest.raises(StaleWrite, match="changed by another process"):
            await other.append("abc", EventKind.NOTE, {"by": "second"}, expected_seq=2,
                               summary={"status": "paused"})
        seen = await other.events("abc")
        assert [e.data.get("by") for e in seen] == [None, "first"]
        assert (await any_store.get_row("abc")).status == "idle"  # the refused write left no trace
        again = await other.append("abc", EventKind.NOTE, {"by": "second"}, expected_seq=seen[-1].seq + 1)
        assert again is not None and again.seq == 3
    finally:
        await other.close()


async def test_racing_writers_with_the_same_expected_sequence_number_have_one_winner(any_store: EventStore) -> None:
    await _debate(any_store)
    other = await open_store(target(any_store))
    try:
        results = await asyncio.gather(
            *(store.append("abc", EventKind.NOTE, {"n": n}, expected_seq=2)
              for n, store in enumerate([any_store, other, any_store, other])),
            return_exceptions=True,
        )
    finally:
        await other.close()
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1 and all(isinstance(r, StaleWrite) for r in results if r not in winners)
    assert [e.seq for e in await any_store.events("abc")] == [1, 2]


async def test_concurrent_appends_keep_their_own_outcomes(any_store: EventStore) -> None:
    """Appends to different debates at once: a stale one, a replayed key and an unknown debate fail
    (or store nothing) alone; the others are stored and listed."""
    for debate_id in ("a", "b", "c"):
        await _debate(any_store, debate_id)
    await any_store.append("c", EventKind.TURN, {"turn": "kept"}, idem_key="turn-1")
    results = await asyncio.gather(
        any_store.append("a", EventKind.NOTE, {"n": 1}, expected_seq=2, summary={"turn_count": 1}),
        any_store.append("b", EventKind.NOTE, {"n": 2}, expected_seq=9),  # stale: b's log is at 1
        any_store.append("c", EventKind.TURN, {"turn": "again"}, idem_key="turn-1"),  # a replay
        any_store.append("ghost", EventKind.NOTE, {}),  # no such debate
        any_store.append("c", EventKind.NOTE, {"n": 4}, summary={"status": "debating"}, expected_seq=3),
        return_exceptions=True,
    )
    first, stale, replay, ghost, last = results
    assert (first.seq, last.seq) == (2, 3) and replay is None
    assert isinstance(stale, StaleWrite) and isinstance(ghost, KeyError)
    assert [e.seq for e in await any_store.events("b")] == [1]
    assert [e.data for e in await any_store.events("c")][1:] == [{"turn": "kept"}, {"n": 4}]
    assert (await any_store.get_row("a")).turn_count == 1 and (await any_store.get_row("c")).status == "debating"


async def test_writes_to_an_unknown_or_deleted_debate_are_refused(any_store: EventStore) -> None:
    with pytest.raises(KeyError):
        await any_store.append("ghost", EventKind.NOTE, {})
    await _debate(any_store)
    assert await any_store.delete_debate("abc") is True
    with pytest.raises(KeyError):
        await any_store.append("abc", EventKind.NOTE, {}, expected_seq=2)
    assert await any_store.delete_debate("abc") is False


# --- queries ----------------------------------------------------------------------------------------


async def test_series_status_and_row_queries(any_store: EventStore) -> None:
    await any_store.create_debate("first", "T", "classic", {"topic": "T"}, {"status": "completed"})
    await any_store.create_debate("rematch", "T", "classic", {"series": "first"}, {"status": "debating"})
    await any_store.create_debate("alone", "T", "classic", {"series": "elsewhere"}, {"status": "paused"})
    assert await any_store.series_ids("first") == ["first", "rematch"]
    assert await any_store.ids_with_status(["debating", "paused"]) == ["rematch", "alone"]
    row = await any_store.get_row("rematch")
    assert row is not None and (row.status, row.topic, row.format) == ("debating", "T", "classic")
    assert await any_store.get_row("missing") is None


async def test_committed_spend_counts_spent_for_ended_debates_and_limits_for_running_ones(
    any_store: EventStore,
) -> None:
    start = utcnow() - timedelta(minutes=1)
    await any_store.create_debate("done", "T", "classic", {"budget": {"cost_limit": 5.0}}, {}, actor="ann")
    await any_store.append("done", EventKind.NOTE, {}, summary={"status": "completed", "cost_usd": 0.5})
    await any_store.create_debate("live", "T", "classic", {"budget": {"cost_limit": 2.0}}, {}, actor="ann")
    await any_store.append("live", EventKind.NOTE, {}, summary={"status": "debating", "cost_usd": 0.25})
    await any_store.create_debate("over", "T", "classic", {"budget": {"cost_limit": 1.0}}, {}, actor="ann")
    await any_store.append("over", EventKind.NOTE, {}, summary={"status": "debating", "cost_usd": 1.5})
    await any_store.create_debate("nolimit", "T", "classic", {}, {}, actor="ann")
    await any_store.append("nolimit", EventKind.NOTE, {}, summary={"status": "paused", "cost_usd": 0.125})
    await any_store.create_debate("bob's", "T", "classic", {"budget": {"cost_limit": 9.0}}, {}, actor="bob")
    spend = await any_store.committed_spend("ann", start, ["completed", "stopped", "error"])
    assert spend == pytest.approx(0.5 + 2.0 + 1.5 + 0.125)
    assert await any_store.committed_spend("ann", utcnow() + timedelta(minutes=1), ["completed"]) == 0


async def test_judge_health_queries_run_on_the_store(any_store: EventStore) -> None:
    await _debate(any_store, participants=[{"id": "pro", "position": "for"}])
    assert await stored_verdicts(any_store) == []
    before = await any_store.verdicts.marker()
    await any_store.append("abc", EventKind.VERDICT, {"verdict": {"winner": "pro"}})
    judged = await any_store.verdicts.marker()
    assert judged != before and judged[0] == before[0] + 1
    [event] = await any_store.verdicts.events()
    assert (event.debate_id, json.loads(event.data)["verdict"]["winner"]) == ("abc", "pro")
    assert json.loads(event.participants or "[]") == [{"id": "pro", "position": "for"}]
    await AudienceStore(any_store).set_verdict("abc", "ada", "pro", {})
    assert await any_store.verdicts.marker() != judged  # a person's verdict moves it too


async def test_participants_and_statuses_of_several_debates(any_store: EventStore) -> None:
    await _debate(any_store, "one", participants=[{"id": "a", "provider": "x", "model": "m"}])
    await _debate(any_store, "two", status="completed")
    assert await any_store.participants(["one", "two", "ghost"]) == {
        "one": [{"id": "a", "provider": "x", "model": "m"}], "two": []}
    assert await any_store.participants([]) == {}
    assert await any_store.ids_with_status(["completed"]) == ["two"]
    assert await any_store.ids_with_status([]) == []


async def test_leases_are_listed_and_renewed_together_only_for_their_holder(any_store: EventStore) -> None:
    for debate_id in ("x", "y"):
        await _debate(any_store, debate_id)
    leases = any_store.leases
    assert await leases.acquire("x", "w1", until=100.0, now=50.0)
    assert await leases.acquire("y", "w2", until=100.0, now=50.0)
    assert not await leases.acquire("y", "w1", until=200.0, now=99.0)  # live: w2 keeps it
    assert await leases.renew_all("w1", ["x", "y"], until=300.0) == {"x"}
    assert await leases.all() == [("x", "w1", 300.0), ("y", "w2", 100.0)]
    assert await leases.expired(["idle"], now=150.0) == ["y"]
    assert await leases.live_elsewhere("w2", now=150.0) == {"x"}


async def test_raw_queries_number_placeholders_but_not_question_marks_in_text(any_store: EventStore) -> None:
    await _debate(any_store)
    row = await any_store.fetchone("SELECT id, 'why?' FROM debates WHERE id = ? AND status = ?", ("abc", "idle"))
    assert row == ("abc", "why?")
    assert await any_store.fetchone("SELECT id FROM debates WHERE id = ?", ("nope",)) is None


async def test_a_transaction_that_fails_leaves_nothing(any_store: EventStore) -> None:
    await _debate(any_store)
    with pytest.raises(RuntimeError, match="changed my mind"):
        async with any_store.transaction() as tx:
            done = await tx.execute("UPDATE debates SET status = ? WHERE id = ?", ("paused", "abc"))
            assert done.rowcount == 1
            raise RuntimeError("changed my mind")
    assert (await any_store.get_row("abc")).status == "idle"
    with pytest.raises(Exception):  # noqa: B017 - each database names the broken foreign key its own way
        async with any_store.transaction() as tx:
            await tx.execute(
                "INSERT INTO events (debate_id, seq, kind, at, data) VALUES ('ghost', 1, 'note', 'now', '{}')"
            )
    assert await any_store.fetchall("SELECT seq FROM events WHERE debate_id = 'ghost'") == []


async def test_a_key_stored_twice_is_a_duplicate_key_on_either_store(any_store: EventStore) -> None:
    """Both stores say "stored already" with one exception type, so nothing above them names a driver's."""
    await _debate(any_store, "same")
    with pytest.raises(DuplicateKey):
        await _debate(any_store, "same")
    assert [e.seq for e in await any_store.events("same")] == [1]


async def test_a_reopened_store_has_the_same_data(any_store: EventStore) -> None:
    await _debate(any_store)
    await any_store.append("abc", EventKind.NOTE, {"kept": True}, summary={"status": "debating"})
    other = await open_store(target(any_store))
    try:
        assert [e.data for e in await other.events("abc")][1:] == [{"kept": True}]
        assert (await other.list_debates())[1] == 1
    finally:
        await other.close()


# --- accounts, share links and audit beside the log --------------------------------------------------


async def test_accounts_compare_names_without_case_and_refuse_duplicates(any_store: EventStore) -> None:
    accounts = Accounts(any_store)
    await accounts.add_user("Alice", "admin", "hash-a")
    await accounts.add_user("bob", "viewer", None)
    with pytest.raises(UserExists):
        await accounts.add_user("ALICE", "viewer", None)
    found = await accounts.user("alice")
    assert found is not None and found.username == "Alice" and found.password_hash == "hash-a"
    await accounts.set_disabled("BOB", True)
    await accounts.set_role("bob", "operator")
    assert [(u.username, u.role, u.disabled) for u in await accounts.users()] == [
        ("Alice", "admin", False), ("bob", "operator", True)]
    assert await accounts.count_admins() == 1
    with pytest.raises(UnknownUser):
        await accounts.set_role("carol", "viewer")


async def test_share_links_are_revoked_once_and_deleted_with_their_debate(any_store: EventStore) -> None:
    await _debate(any_store)
    accounts = Accounts(any_store)
    link = await accounts.add_link("abc", "digest-1", "alice", utcnow() + timedelta(days=1))
    assert (await accounts.link_by_hash("digest-1")).id == link.id
    assert await accounts.revoke_link(link.id, "bob") is True
    assert await accounts.revoke_link(link.id, "bob") is False
    assert (await accounts.link_by_hash("digest-1")).status() == "revoked"
    await any_store.delete_debate("abc")
    assert await accounts.links("abc") == [] and await accounts.link_by_hash("digest-1") is None


async def test_the_audit_trail_pages_newest_first(any_store: EventStore) -> None:
    accounts = Accounts(any_store)
    for n in range(5):
        await accounts.audit("alice" if n % 2 else "bob", "pause", debate_id=f"d{n}", detail={"n": n})
    rows, total = await accounts.audit_page(offset=1, limit=2)
    assert total == 5 and [r.debate_id for r in rows] == ["d3", "d2"]
    rows, total = await accounts.audit_page(actor="alice")
    assert total == 2 and [r.detail for r in rows] == ['{"n": 3}', '{"n": 1}']


async def test_registered_endpoints_are_kept_listed_and_removed(any_store: EventStore) -> None:
    """Endpoints admins registered: names unique without case, listed by name, removed by name."""
    endpoints = EndpointStore(any_store)
    assert await endpoints.list() == []
    team = Endpoint(name="Team vLLM", base_url="http://10.0.0.5:8000/v1/", key_env="TEAM_KEY")
    await endpoints.add(team, "admin")
    await endpoints.add(Endpoint(name="ollama box", base_url="http://192.168.1.9:11434/v1"), "admin")
    with pytest.raises(EndpointTaken):
        await endpoints.add(Endpoint(name="TEAM VLLM", base_url="http://10.0.0.6/v1"), "admin")
    listed = await endpoints.list()
    assert [(e.name, e.base_url, e.key_env) for e in listed] == [
        ("ollama box", "http://192.168.1.9:11434/v1", None), ("Team vLLM", "http://10.0.0.5:8000/v1", "TEAM_KEY")]
    assert (await endpoints.remove("team vllm")).key_env == "TEAM_KEY"
    with pytest.raises(UnknownEndpoint):
        await endpoints.remove("team vllm")
    assert [e.name for e in await endpoints.list()] == ["ollama box"]
# --- sign-in state: throttle counters and browser sessions, shared by every process ---------------


async def test_attempts_at_the_same_moment_from_two_processes_get_only_the_tries_left(any_store: EventStore) -> None:
    """Three attempts made, two left: twenty more sent at once, half through another process's store,
    are counted before any password check and exactly two are let through; nothing else is counted."""
    now = [1000.0]
    throttles = [LoginThrottle(any_store, clock=lambda: now[0])]
    other = await open_store(target(any_store))
    try:
        throttles.append(LoginThrottle(other, clock=lambda: now[0]))
        for _ in range(3):
            assert await throttles[0].reserve("user:ada", "addr:10.0.0.1") == 0
        waits = await asyncio.gather(*(throttles[n % 2].reserve("user:ada", f"addr:10.0.1.{n}") for n in range(20)))
    finally:
        await other.close()
    assert sorted(waits)[:3] == [0, 0, 30] and waits.count(0) == 2
    counts = dict(await any_store.fetchall("SELECT key, attempts FROM login_throttle ORDER BY key"))
    assert counts["user:ada"] == 5 and sum(counts.get(f"addr:10.0.1.{n}", 0) for n in range(20)) == 2
    now[0] += 31  # the wait is over: one more attempt, then twice as long a wait
    assert await throttles[0].reserve("user:ada", "addr:10.0.0.9") == 0
    assert await throttles[0].reserve("user:ada", "addr:10.0.0.9") == 60


async def test_a_success_clears_its_username_and_only_its_own_attempt_from_the_address(any_store: EventStore) -> None:
    throttle = LoginThrottle(any_store, clock=lambda: 50.0)
    for name in ("bob", "cy", "dee", "eve"):  # four guesses at others' accounts from one address
        assert await throttle.reserve(f"user:{name}", "addr:10.0.0.1") == 0
    assert await throttle.reserve("user:ada", "addr:10.0.0.1") == 0  # the account holder signs in
    await throttle.succeeded("user:ada", "addr:10.0.0.1")
    counts = dict(await any_store.fetchall("SELECT key, attempts FROM login_throttle"))
    assert "user:ada" not in counts and counts["addr:10.0.0.1"] == 4 and counts["user:bob"] == 1
    assert await throttle.reserve("user:fay", "addr:10.0.0.1") == 0  # the fifth guess
    assert await throttle.reserve("user:gus", "addr:10.0.0.1") == 30  # and no more


async def test_throttle_counters_are_forgotten_by_age_and_kept_to_the_most_recent(any_store: EventStore) -> None:
    sign_ins = SignIns(any_store)
    for n in range(6):
        assert await sign_ins.reserve([f"user:u{n}"], float(n), -1.0, [(5, 30.0)])
    await sign_ins.prune(forget_before=1.0, keep=3)  # u0 is too old; of the rest the three newest stay
    keys = {r[0] for r in await any_store.fetchall("SELECT key FROM login_throttle")}
    assert keys == {"user:u3", "user:u4", "user:u5"}


async def test_a_session_is_handed_once_to_the_browser_that_asked_and_ends_everywhere(any_store: EventStore) -> None:
    accounts, sign_ins = Accounts(any_store), SignIns(any_store)
    await accounts.add_user("Ada", "operator", "hash-a")
    later = utcnow() + timedelta(hours=1)
    first = await sign_ins.begin("Ada", "ticket-1", "browser-1", "10.0.0.1", later)
    assert await sign_ins.redeem("ticket-1", "browser-2", "token-x") is None  # another browser's ticket
    row = await sign_ins.redeem("ticket-1", "browser-1", "token-1")
    assert row is not None and row.id == first and row.live()
    assert await sign_ins.redeem("ticket-1", "browser-1", "token-2") is None  # once only
    second = await sign_ins.begin("Ada", "ticket-2", "browser-3", "10.0.0.2", later)
    assert await sign_ins.redeem("ticket-2", "browser-3", "token-3") is not None
    assert await sign_ins.ended([first, second]) == {}
    assert await sign_ins.end(first, "signed out") is True
    assert await sign_ins.ended([first, second, "nope"]) == {first: "signed out", "nope": "ended"}
    await accounts.set_password_hash("ada", "hash-b")  # every session of the user, whatever the case
    assert await sign_ins.ended([second]) == {second: "password changed"}
    third = await sign_ins.begin("Ada", "ticket-4", "browser-4", "", later)
    await sign_ins.redeem("ticket-4", "browser-4", "token-4")
    await accounts.set_role("Ada", "viewer")
    assert (await sign_ins.by_token("token-4")).ended_why == "role changed"
    assert await sign_ins.ended([third]) == {third: "role changed"}


async def test_failed_sign_ins_with_unknown_names_are_one_audit_row_per_address(any_store: EventStore) -> None:
    accounts = Accounts(any_store)
    for _ in range(7):
        await accounts.audit_unknown_sign_in("10.0.0.1")
    await accounts.audit_unknown_sign_in("10.0.0.2")
    rows, total = await accounts.audit_page()
    assert total == 2 and {r.actor for r in rows} == {UNKNOWN_ACTOR}
    by_address = {json.loads(r.detail)["address"]: json.loads(r.detail)["attempts"] for r in rows}
    assert by_address == {"10.0.0.1": 7, "10.0.0.2": 1}
async def test_api_tokens_are_found_by_digest_listed_revoked_once_and_expire(any_store: EventStore) -> None:
    tokens = ApiTokens(any_store)
    first = await tokens.add("Ada", "operator", "digest-1", "f3a9", "ci")
    await tokens.add("bob", "viewer", "digest-2", "0b0b")
    soon = await tokens.add("ada", "viewer", "digest-3", "3333", expires_at=utcnow() - timedelta(seconds=1))
    found = await tokens.by_hash("digest-1")
    assert found is not None and (found.id, found.username, found.role, found.suffix, found.name) == (
        first.id, "Ada", "operator", "f3a9", "ci")
    assert found.status() == "active" and (await tokens.get(soon.id)).status() == "expired"
    assert {t.suffix for t in await tokens.list("ADA")} == {"f3a9", "3333"}  # names compared without case
    assert len(await tokens.list()) == 3 and await tokens.by_hash("nope") is None
    await tokens.touch(first.id)
    assert (await tokens.get(first.id)).last_used_at is not None
    assert await tokens.revoke(first.id, "root") is True
    assert await tokens.revoke(first.id, "root") is False and await tokens.revoke("missing", "root") is False
    revoked = await tokens.get(first.id)
    assert revoked.status() == "revoked" and revoked.revoked_by == "root"
    with pytest.raises(DuplicateKey):  # a digest is unique, on either store
        await tokens.add("bob", "viewer", "digest-2", "0b0b")


async def test_committed_spend_counts_what_a_person_started_with_their_api_tokens(any_store: EventStore) -> None:
    start = utcnow() - timedelta(minutes=1)
    await any_store.create_debate("ui", "T", "classic", {"budget": {"cost_limit": 1.0}}, {}, actor="ann_1")
    await any_store.create_debate("api", "T", "classic", {"budget": {"cost_limit": 2.0}}, {},
                                  actor="ann_1 (token …f3a9)")
    await any_store.create_debate("other", "T", "classic", {"budget": {"cost_limit": 4.0}}, {},
                                  actor="annX1 (token …0000)")  # `_` must match only itself
    assert await any_store.committed_spend("ann_1", start, ["completed"]) == pytest.approx(3.0)


# --- leaderboard, tournaments and tag search (queries written per database) ------------------------


async def test_the_verdict_digest_is_the_same_on_either_store(any_store: EventStore) -> None:
    """The trigger digests each debate's LAST verdict: the same JSON values on SQLite and PostgreSQL,
    for a panel with a failed and a flipped judge, an unavailable verdict and a synthesis."""
    await _debate(any_store, "d1")
    await any_store.append("d1", EventKind.VERDICT, {"verdict": {"winner": "b"}})
    await any_store.append("d1", EventKind.VERDICT, {"verdict": {
        "winner": "a", "word_counts": {"a": 12, "b": 30}, "undecided_judges": ["demo:j3"],
        "rulings": [{"judge": "demo:j1", "winner": "a", "reasoning": "long"},
                    {"judge": "demo:j2", "winner": "b", "error": "timed out"},
                    {"judge": "demo:j3", "winner": None, "flipped": True}]}})
    await _debate(any_store, "d2")
    await any_store.append("d2", EventKind.VERDICT, {"verdict": {"available": False, "winner": None,
                                                                 "word_counts": None, "rulings": []}})
    await _debate(any_store, "d3")
    await any_store.append("d3", EventKind.VERDICT, {"verdict": {"synthesis": "common ground", "winner": None}})
    await any_store.append("d3", EventKind.NOTE, {"verdict": {"winner": "a"}})  # not a verdict: not digested
    expected = {
        "d1": {"available": True, "winner": "a", "word_counts": {"a": 12, "b": 30}, "undecided_judges": ["demo:j3"],
               "synthesis": False, "rulings": [
                   {"judge": "demo:j1", "winner": "a", "error": False, "flipped": False},
                   {"judge": "demo:j2", "winner": "b", "error": True, "flipped": False},
                   {"judge": "demo:j3", "winner": None, "error": False, "flipped": True}]},
        "d2": {"available": False, "winner": None, "word_counts": {}, "undecided_judges": [], "synthesis": False,
               "rulings": []},
        "d3": {"available": True, "winner": None, "word_counts": {}, "undecided_judges": [], "synthesis": True,
               "rulings": []},
    }

    async def digests() -> dict[str, Any]:
        rows = await any_store.fetchall("SELECT debate_id, seq, digest FROM verdict_digests ORDER BY debate_id")
        return {r[0]: (int(r[1]), json.loads(r[2])) for r in rows}

    kept = await digests()
    assert {k: v[1] for k, v in kept.items()} == expected
    assert kept["d1"][0] == 3  # the second verdict replaced the first
    assert await rebuild_digests(any_store) == 3  # the back-fill makes the same digests from the log
    assert await digests() == kept


async def test_the_leaderboard_is_computed_from_either_store(any_store: EventStore) -> None:
    await store_league(any_store)
    results = await load_results(any_store)
    assert [r.debate_id for r in results] == ["d1", "d2", "d3", "d4", "d5"]  # d6 is still being judged
    assert results[1].tags == ("ethics", "ai") and results[4].split and results[4].score == 1.0
    board = await leaderboard(any_store, LeaderboardFilters(debate_ids=frozenset({"d1", "d2", "d3"})))
    assert [(r.model, r.wins, r.losses, r.ties) for r in board.ratings] == [(ALPHA, 2, 0, 1), (BETA, 0, 2, 1)]
    everything = await leaderboard(any_store)
    assert everything.debates == 5 and everything.ratings[0].model == ALPHA
    tagged = await leaderboard(any_store, LeaderboardFilters(tag="ethics"))
    assert tagged.debates == 2


async def test_tournament_queries_run_on_either_store(any_store: EventStore) -> None:
    store = TournamentStore(any_store)
    first = await store.create(Tournament(models=[Contender.parse(m) for m in ("alpha", "beta", "gamma")],
                                          topics=["Tea beats coffee"], format="round-limited", rounds=1))
    second = await store.create(Tournament(models=[Contender.parse(m) for m in ("alpha", "beta")],
                                           topics=["Cats"], format="round-limited", rounds=1))
    assert [row.id for row in await store.all()] == [second.id, first.id]  # newest first
    slots = schedule(first)
    for n, slot in enumerate(slots):
        config = slot_config(first, slot, cost_limit=1.0).model_dump(mode="json")
        await any_store.create_debate(f"g{n}", config["topic"], config["format"], config, {"status": "running"})
    await any_store.append("g0", EventKind.VERDICT, {"verdict": {"winner": "con"}},
                           summary={"status": "completed", "cost_usd": 0.25})
    await any_store.append("g1", EventKind.VERDICT, {"verdict": {"winner": None, "available": False}},
                           summary={"status": "completed", "cost_usd": 0.5})
    played = await store.debates(first.id)
    assert sorted(played) == sorted(s.key for s in slots) and await store.debates(second.id) == {}
    assert (played[slots[0].key].winner, played[slots[0].key].has_verdict) == ("con", True)
    assert (played[slots[1].key].winner, played[slots[1].key].has_verdict) == (None, False)
    assert not played[slots[2].key].has_verdict
    # Ended debates count what they spent; the running one its own limit.
    assert await store.committed(first.id, ["completed", "stopped"]) == pytest.approx(0.25 + 0.5 + 1.0)
    await store.set_status(first.id, "running")
    assert await store.with_status("running") == [first.id]
    await store.claim(first.id, "here:1:a")
    with pytest.raises(TournamentBusy):
        await store.claim(first.id, "elsewhere:2:b")
    await store.release(first.id, "here:1:a")
    await store.claim(first.id, "elsewhere:2:b")
    row = await store.get(first.id)
    assert row is not None and row.owner == "elsewhere:2:b" and row.status == "running"


async def test_tournaments_for_workers_are_asked_for_stopped_and_taken_on_either_store(any_store: EventStore) -> None:
    store = TournamentStore(any_store)
    made = await store.create(Tournament(models=[Contender.parse(m) for m in ("alpha", "beta")],
                                         topics=["Cats"], format="round-limited", rounds=1))
    assert await store.for_workers() == []
    assert await store.request_play(made.id) and not await store.request_play(made.id)
    assert await store.for_workers() == [made.id]  # nobody plays it yet
    await store.claim(made.id, "elsewhere:2:cli")  # a CLI's claim: no worker takes it over
    assert await store.for_workers() == []
    await store.release(made.id, "elsewhere:2:cli")
    with pytest.raises(KeyError):
        await store.request_play("ghost")
    assert await store.request_stop(made.id, "enough") and not await store.request_stop(made.id, "again")
    row = await store.get(made.id)
    assert row is not None and (row.status, row.stop_reason) == ("stopped", "enough")
    budgeted = await store.set_budget(made.id, 2.5)
    assert budgeted.budget_usd == 2.5 and (await store.get(made.id)).tournament.budget_usd == 2.5  # type: ignore[union-attr]


async def test_the_topic_search_also_matches_tags(any_store: EventStore) -> None:
    await any_store.create_debate("t1", "Cats or dogs", "classic", {"tags": ["pets", "ethics"]}, {})
    await any_store.create_debate("t2", "Tea beats coffee", "classic", {"tags": ["drinks"]}, {})
    await any_store.create_debate("t3", "Ethics of AI", "classic", {}, {})
    await any_store.create_debate("t4", "No tags at all", "classic", {"tags": None}, {})
    for query, expected in (("ethic", {"t1", "t3"}), ("DRINK", {"t2"}), ("cats", {"t1"}), ("50%", set())):
        rows, total = await any_store.list_debates(query=query)
        assert {r.id for r in rows} == expected and total == len(expected), query
    rows, _ = await any_store.list_debates(order="oldest")
    assert [(r.id, r.tags) for r in rows] == [("t1", ["pets", "ethics"]), ("t2", ["drinks"]), ("t3", []), ("t4", [])]


async def test_a_listing_row_names_its_tournament(any_store: EventStore) -> None:
    await any_store.create_debate("in", "Played in one", "classic", {"tournament": "abc123", "tags": ["x"]}, {})
    await any_store.create_debate("out", "On its own", "classic", {}, {})
    rows, _ = await any_store.list_debates(order="oldest")
    assert [(r.id, r.tournament, r.tags) for r in rows] == [("in", "abc123", ["x"]), ("out", None, [])]


async def test_a_tournament_plays_to_the_end_and_gets_its_leaderboard(any_store: EventStore) -> None:
    """The runner on either store: every slot played once, the standings' debates rated on the board."""
    engine = Engine(any_store, settings=Settings(_env_file=None, demo_speed=0), providers=OneProvider())
    store = TournamentStore(any_store)
    stored = await store.create(Tournament(models=[Contender.parse(m) for m in ("alpha", "beta")],
                                           topics=["Tea beats coffee"], format="round-limited", rounds=1,
                                           swap_sides=True))
    try:
        row = await TournamentRunner(engine, stored.id).run()
    finally:
        for running in list(engine.sessions.values()):
            await running.shutdown()
    assert (row.status, row.stop_reason) == ("completed", None)
    played = await store.debates(stored.id)
    assert sorted(played) == sorted(s.key for s in schedule(stored))
    assert all(d.row.status == "completed" and d.has_verdict for d in played.values())
    board = await leaderboard(any_store, LeaderboardFilters(debate_ids=frozenset(d.row.id for d in played.values())))
    assert board.debates == 2 and {r.model for r in board.ratings} == {"demo:alpha", "demo:beta"}


async def test_a_completed_tournament_queues_its_webhook_once(any_store: EventStore) -> None:
    hooks = WebhookStore(any_store)
    endpoint = await hooks.add_endpoint("https://hooks.example/t", ["tournament.completed"], "whsec_x", "ada")
    engine = Engine(any_store, settings=Settings(_env_file=None, demo_speed=0, public_url="https://rostrum.example"),
                    providers=OneProvider())
    stored = await TournamentStore(any_store).create(Tournament(
        models=[Contender.parse(m) for m in ("alpha", "beta")], topics=["Tea beats coffee"], format="round-limited",
        rounds=1))
    relay = WebhookRelay(engine, engine.settings.base_url)  # what every process that plays tournaments wires
    relay.start()
    try:
        await TournamentRunner(engine, stored.id).run()
    finally:
        await relay.close()  # queues what it heard
        for running in list(engine.sessions.values()):
            await running.shutdown()
    rows, total = await hooks.deliveries(endpoint_id=endpoint.id)
    assert total == 1 and rows[0].event == "tournament.completed" and rows[0].subject == stored.id
    assert rows[0].payload["url"] == f"https://rostrum.example/tournaments/{stored.id}"
    assert rows[0].payload["status"] == "completed" and rows[0].payload["detail"] == {"debates": 1}


# --- webhooks: endpoints and the delivery queue -----------------------------------------------------


async def test_webhook_endpoints_are_added_listed_and_removed_with_their_deliveries(any_store: EventStore) -> None:
    hooks = WebhookStore(any_store)
    a = await hooks.add_endpoint("https://a.example/hook", ["debate.completed", "debate.error"], "whsec_aaaa1234",
                                 "ada")
    b = await hooks.add_endpoint("https://b.example/hook?x=1", ["debate.started"], "whsec_bbbb", "cli", "slack")
    assert [(e.id, e.url, e.events, e.format) for e in await hooks.endpoints()] == [
        (a.id, a.url, ["debate.completed", "debate.error"], "json"), (b.id, b.url, ["debate.started"], "slack")]
    assert (await hooks.endpoint(a.id)) == a
    assert "secret" not in a.public() and a.public()["secret_hint"] == "…1234"
    assert await hooks.enqueue("debate.completed", "d1:9", {"event": "debate.completed"}, now=100.0, window=60) == 1
    assert await hooks.remove_endpoint(a.id) and not await hooks.remove_endpoint(a.id)
    assert await hooks.deliveries() == ([], 0)  # its deliveries went with it
    assert [e.id for e in await hooks.endpoints()] == [b.id]


async def test_an_event_is_queued_once_per_endpoint_that_wants_it(any_store: EventStore) -> None:
    hooks = WebhookStore(any_store)
    wants = await hooks.add_endpoint("https://a.example/", ["debate.completed"], "whsec_a", "ada")
    also = await hooks.add_endpoint("https://b.example/", ["debate.round", "debate.completed"], "whsec_b", "ada")
    await hooks.add_endpoint("https://c.example/", ["debate.error"], "whsec_c", "ada")
    payload = {"event": "debate.completed", "topic": "Tea ' \" ? ünï", "cost_usd": 0.25}
    assert await hooks.enqueue("debate.completed", "d1:12", payload, subject="d1", now=1000.0, window=86400) == 2
    other = await open_store(target(any_store))  # another process sees the same event
    try:
        assert await WebhookStore(other).enqueue("debate.completed", "d1:12", payload, subject="d1", now=1001.0,
                                                 window=86400) == 0
    finally:
        await other.close()
    rows, total = await hooks.deliveries()
    assert total == 2 and {r.endpoint_id for r in rows} == {wants.id, also.id}
    assert all((r.status, r.attempts, r.payload, r.subject, r.give_up_at) == ("pending", 0, payload, "d1", 87400.0)
               for r in rows)
    assert (await hooks.deliveries(subject="d1", endpoint_id=also.id))[1] == 1
    assert await hooks.enqueue("debate.started", "d1:2", {}, now=1000.0, window=60) == 0  # nobody wants it


async def test_two_senders_claiming_at_once_take_each_delivery_once(any_store: EventStore) -> None:
    hooks = WebhookStore(any_store)
    endpoint = await hooks.add_endpoint("https://a.example/", ["debate.round"], "whsec_a", "ada")
    for n in range(30):
        await hooks.enqueue("debate.round", f"d:{n}", {"n": n}, now=100.0, window=3600)
    other = await open_store(target(any_store))
    try:
        ids = await hooks.due(now=100.0, limit=100)
        assert len(ids) == 30
        mine, theirs = await asyncio.gather(hooks.claim(ids, "one", 100.0, 60),
                                            WebhookStore(other).claim(list(reversed(ids)), "two", 100.0, 60))
    finally:
        await other.close()
    taken = [c.delivery.id for c in mine] + [c.delivery.id for c in theirs]
    assert sorted(taken) == sorted(ids)  # every one taken, none twice
    assert all(c.url == "https://a.example/" and c.secret == "whsec_a" and c.delivery.attempts == 1
               for c in [*mine, *theirs])
    assert await hooks.due(now=150.0, limit=100) == []  # held
    assert await hooks.claim(ids, "three", 150.0, 60) == []
    assert endpoint.id


async def test_a_delivery_is_retried_given_up_redelivered_and_reclaimed_after_its_lease(any_store: EventStore) -> None:
    hooks = WebhookStore(any_store)
    await hooks.add_endpoint("https://a.example/", ["debate.error"], "whsec_a", "ada")
    await hooks.enqueue("debate.error", "d:5", {"event": "debate.error"}, now=100.0, window=1000)
    [claimed] = await hooks.claim(await hooks.due(100.0, 10), "one", 100.0, 60)
    delivery_id = claimed.delivery.id
    assert not await hooks.finish(delivery_id, "two", now=101.0, status_code=200, error=None, retry_at=None)
    assert await hooks.finish(delivery_id, "one", now=101.0, status_code=500, error="HTTP 500: oops", retry_at=130.0)
    row = await hooks.delivery(delivery_id)
    assert row is not None and (row.status, row.attempts, row.last_status, row.last_error, row.next_attempt_at,
                                row.lease_owner) == ("pending", 1, 500, "HTTP 500: oops", 130.0, None)
    assert await hooks.due(120.0, 10) == [] and await hooks.due(130.0, 10) == [delivery_id]
    assert await hooks.next_due() == 130.0
    # A sender that dies holding it: after its lease, another takes it.
    assert len(await hooks.claim([delivery_id], "dead", 130.0, 60)) == 1
    assert await hooks.claim([delivery_id], "two", 189.0, 60) == []
    [again] = await hooks.claim([delivery_id], "two", 191.0, 60)
    assert again.delivery.attempts == 3
    assert not await hooks.redeliver(delivery_id, now=192.0, window=1000)  # being sent right now
    assert await hooks.finish(delivery_id, "two", now=195.0, status_code=None, error="ConnectError", retry_at=None)
    row = await hooks.delivery(delivery_id)
    assert row is not None and (row.status, row.last_status, row.last_error) == ("failed", None, "ConnectError")
    assert await hooks.due(10_000.0, 10) == []
    assert await hooks.redeliver(delivery_id, now=300.0, window=1000)
    [third] = await hooks.claim(await hooks.due(300.0, 10), "two", 300.0, 60)
    assert await hooks.finish(third.delivery.id, "two", now=301.0, status_code=204, error=None, retry_at=None)
    row = await hooks.delivery(delivery_id)
    assert row is not None and (row.status, row.attempts, row.last_status, row.delivered_at, row.give_up_at) == (
        "delivered", 4, 204, 301.0, 1300.0)


async def test_finished_deliveries_are_pruned_and_pending_ones_kept(any_store: EventStore) -> None:
    hooks = WebhookStore(any_store)
    await hooks.add_endpoint("https://a.example/", ["debate.round"], "whsec_a", "ada")
    for n, at in enumerate((100.0, 200.0, 300.0)):
        await hooks.enqueue("debate.round", f"d:{n}", {"n": n}, now=at, window=10_000)
    claimed = await hooks.claim(await hooks.due(250.0, 10), "one", 250.0, 60)
    assert len(claimed) == 2
    await hooks.finish(claimed[0].delivery.id, "one", now=251.0, status_code=200, error=None, retry_at=None)
    await hooks.finish(claimed[1].delivery.id, "one", now=251.0, status_code=500, error="HTTP 500", retry_at=260.0)
    assert await hooks.prune(before=1_000.0) == 1  # the delivered one; pending ones stay, however old
    rows, total = await hooks.deliveries()
    assert total == 2 and {r.status for r in rows} == {"pending"}


# --- comments and reactions on turns ----------------------------------------------------------------


async def test_comments_are_listed_per_turn_deleted_once_and_rate_counted(any_store: EventStore) -> None:
    await _debate(any_store)
    comments = CommentStore(any_store)
    first = await comments.add("abc", "opening/r1/pro/0", "user:alice", "alice", "<b>first</b>", at=100.0)
    await comments.add("abc", "opening/r1/pro/0", "user:bob", "bob", "second", at=101.0)
    await comments.add("abc", "opening/r1/con/0", "user:alice", "alice", "on con", at=102.0)
    talk = await comments.for_debate("abc")
    assert [c.body for c in talk["opening/r1/pro/0"].comments] == ["<b>first</b>", "second"]
    assert [c.body for c in talk["opening/r1/con/0"].comments] == ["on con"]
    assert await comments.recent_count("user:alice", 100.0) == 2
    assert await comments.recent_count("user:alice", 101.5) == 1
    assert await comments.oldest_since("user:alice", 100.5) == 102.0
    assert await comments.delete(first.id, "carol") is True
    assert await comments.delete(first.id, "carol") is False  # once
    gone = await comments.get(first.id)
    assert gone is not None and gone.deleted_by == "carol" and gone.deleted_at is not None
    assert [c.body for c in (await comments.for_debate("abc"))["opening/r1/pro/0"].comments] == ["second"]
    assert await comments.recent_count("user:alice", 100.0) == 2  # deleted ones still count
    await any_store.delete_debate("abc")
    assert await comments.for_debate("abc") == {} and await comments.get(first.id) is None


async def test_a_reaction_is_one_per_person_and_toggles(any_store: EventStore) -> None:
    await _debate(any_store)
    comments = CommentStore(any_store)
    key = "opening/r1/pro/0"
    assert await comments.toggle("abc", key, "user:alice", "👍") is True
    assert await comments.toggle("abc", key, "user:bob", "👍") is True
    assert await comments.toggle("abc", key, "user:bob", "❓") is True
    assert (await comments.for_debate("abc"))[key].reactions == {"👍": 2, "❓": 1}
    assert await comments.mine("abc", "user:bob") == {key: sorted(["👍", "❓"])}
    assert await comments.toggle("abc", key, "user:bob", "👍") is False  # taken back
    assert (await comments.for_debate("abc"))[key].public()["reactions"] == {"👍": 1, "❓": 1, "⚠️": 0}
    await any_store.delete_debate("abc")
    assert await comments.mine("abc", "user:alice") == {}


async def test_a_share_link_remembers_whether_it_allows_comments(any_store: EventStore) -> None:
    await _debate(any_store)
    accounts = Accounts(any_store)
    await accounts.add_link("abc", "digest-a", "alice", None, comments=True)
    await accounts.add_link("abc", "digest-b", "alice", None)
    assert (await accounts.link_by_hash("digest-a")).comments is True
    assert (await accounts.link_by_hash("digest-b")).comments is False


# --- the audience: votes, people's verdicts, the after vote's closing time ------------------------------


async def test_one_vote_per_person_per_stage_changeable_and_counted_once_across_processes(
        any_store: EventStore) -> None:
    await _debate(any_store, "aud")
    votes = AudienceStore(any_store)
    await votes.vote("aud", "before", "user:ada", "for")
    await votes.vote("aud", "before", "browser:b1", "against")
    await votes.vote("aud", "before", "user:ada", "undecided")  # changed: still one vote
    other = await open_store(target(any_store))  # a second web instance: the same person, the same key
    try:
        await AudienceStore(other).vote("aud", "before", "user:ada", "against")
        await AudienceStore(other).vote("aud", "after", "user:ada", "for")
    finally:
        await other.close()
    tallies = await votes.tally("aud")
    assert tallies["before"].public() == {"for": 0, "against": 2, "undecided": 0}
    assert tallies["after"].public() == {"for": 1, "against": 0, "undecided": 0}
    assert await votes.votes_of("aud", "user:ada") == {"before": "against", "after": "for"}
    assert (await votes.all_tallies())["aud"]["after"].total == 1
    with pytest.raises(ValueError, match="choice"):
        await votes.vote("aud", "before", "user:ada", "maybe")  # type: ignore[arg-type]


async def test_a_persons_verdict_is_replaced_not_added_and_goes_with_the_debate(any_store: EventStore) -> None:
    await _debate(any_store, "hv")
    await _debate(any_store, "hw")
    people = AudienceStore(any_store)
    await people.set_verdict("hv", "user:ada", "pro", {"logic": 70.0}, "close ' call ?")
    await people.set_verdict("hv", "user:bob", None, {}, "")
    await people.set_verdict("hv", "user:ada", "con", {"logic": 55.5}, "changed my mind")
    await people.set_verdict("hw", "user:ada", "pro", {}, "")
    got = await people.verdicts("hv")
    assert sorted((v.by, v.winner, v.scores, v.note) for v in got) == [
        ("user:ada", "con", {"logic": 55.5}, "changed my mind"), ("user:bob", None, {}, "")]
    assert set(await people.all_verdicts()) == {"hv", "hw"}
    await people.set_after_closes("hv", 1234.5, "ada")
    await people.set_after_closes("hv", 99.0, "bob")
    assert await people.after_closes("hv") == 99.0 and await people.after_closes("hw") is None
    await people.vote("hv", "after", "user:ada", "for")
    assert await any_store.delete_debate("hv")
    assert await people.verdicts("hv") == [] and (await people.tally("hv"))["after"].total == 0
    assert await people.after_closes("hv") is None
    assert [v.by for v in await people.verdicts("hw")] == ["user:ada"]
