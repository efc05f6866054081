"""The event log: SQLite settings, integrity check, group commit (one transaction per group, one savepoint
per event), idempotency, listing, and storage faults reported as what they are. The tests that take the
`store` fixture run on both stores (SQLite and PostgreSQL) unless marked `@sqlite_only`."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.pg_fixtures import STORE_KINDS, opened_store
from webapp.models import EventKind
from webapp.store import (
    StaleWrite,
    Store,
    StoreBusy,
    StoreCorrupt,
    StoreFull,
    StoreIOError,
    StoreTooNew,
    StoreUnwritable,
    repository,
)
from webapp.store.errors import classify
from webapp.store.migrations import LEGACY_MARK, NAMES, applied_migrations_async


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    """Each store in turn (SQLite, PostgreSQL); tests of SQLite's own machinery say `@sqlite_only`."""
    async with opened_store(request.param, request, tmp_path) as s:
        yield s


# The tests of what only the SQLite store has: its file, pragmas, group commit, writer queue and locks.
sqlite_only = pytest.mark.parametrize("store", ["sqlite"], indirect=True)
# What each store raises for a value its database cannot hold (a list where text belongs).
UNSTORABLE: tuple[type[BaseException], ...] = (sqlite3.Error, ValueError)


async def _pragma(store: Store, name: str):
    """A setting of the store's writer connection."""
    [(value,)] = await store._writer.execute_fetchall(f"PRAGMA {name}")
    return value


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def _fill(path: Path, debates: int = 20) -> None:
    """A real store file with enough rows to span many pages."""
    s = await Store.open(path)
    for i in range(debates):
        await s.create_debate(f"d{i:03d}", f"Topic {i} " * 20, "classic", {"pad": "x" * 400}, {})
        for _ in range(3):
            await s.append(f"d{i:03d}", EventKind.NOTE, {"pad": "y" * 600})
    await s.close()


# --- connection settings -----------------------------------------------------------------------


@sqlite_only
async def test_real_file_uses_wal_full_sync_and_foreign_keys(store: Store):
    assert (await _pragma(store, "journal_mode")).lower() == "wal"
    assert await _pragma(store, "synchronous") == 2  # FULL
    assert await _pragma(store, "foreign_keys") == 1


@sqlite_only
async def test_foreign_keys_are_enforced(store: Store):
    with pytest.raises(sqlite3.IntegrityError):
        async with store.transaction() as tx:
            await tx.execute(
                "INSERT INTO events (debate_id, seq, kind, at, data) VALUES ('ghost', 1, 'note', 'now', '{}')"
            )
    assert not store._writer.in_transaction


@sqlite_only
async def test_new_file_has_every_named_migration(store: Store):
    assert await applied_migrations_async(store._writer) == list(NAMES)
    # A Rostrum from before named migrations finds a version it does not know, and refuses the file.
    assert await store.fetchall("SELECT version FROM schema_version") == [(LEGACY_MARK,)]


# --- integrity ----------------------------------------------------------------------------------


async def test_garbage_file_is_refused_and_left_byte_identical(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    path.write_bytes(b"this is not a database\x00\x01\x02" * 500)
    before = _digest(path)
    with pytest.raises(StoreCorrupt, match=r"db\.sqlite3"):
        await Store.open(path)
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite3"]


def _corrupt_root_page(path: Path, table: str) -> None:
    """Damage the first page of a table's b-tree (the header stays valid: only a check notices)."""
    with sqlite3.connect(path) as check:
        page_size = check.execute("PRAGMA page_size").fetchone()[0]
        root = check.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        assert check.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    check.close()
    data = bytearray(path.read_bytes())
    offset = (root - 1) * page_size
    data[offset : offset + 4] = b"\x00\x07\x13\x55"  # an impossible b-tree page type and header
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("table", ["debates", "events"])
async def test_corrupt_page_is_refused_and_left_byte_identical(tmp_path: Path, table: str):
    path = tmp_path / "db.sqlite3"
    await _fill(path)
    _corrupt_root_page(path, table)
    before = _digest(path)
    with pytest.raises(StoreCorrupt):
        await Store.open(path)
    assert _digest(path) == before


async def test_healthy_file_reopens_with_its_data(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    await _fill(path, debates=3)
    s = await Store.open(path)
    try:
        assert len(await s.events("d001")) == 4
        assert (await s.list_debates())[1] == 3
    finally:
        await s.close()


async def test_newer_schema_than_the_code_is_refused(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    s = await Store.open(path)
    async with s.transaction() as tx:
        await tx.execute("INSERT INTO _rostrum_migrations (name, applied_at) VALUES ('999_from_the_future', 'x')")
    await s.close()
    before = _digest(path)
    with pytest.raises(StoreTooNew, match=r"newer.*999_from_the_future") as caught:
        await Store.open(path)
    assert isinstance(caught.value, RuntimeError) and caught.value.path == path
    assert _digest(path) == before


# --- appending ----------------------------------------------------------------------------------


async def test_create_debate_stores_the_created_event_first(store: Store):
    event = await store.create_debate("abc", "Topic", "classic", {"topic": "Topic"}, {"status": "idle"})
    assert event.seq == 1 and event.kind is EventKind.CREATED
    events = await store.events("abc")
    assert [(e.seq, e.kind) for e in events] == [(1, EventKind.CREATED)]
    assert events[0].data == {"config": {"topic": "Topic"}}


async def test_append_numbers_events_and_updates_the_listing(store: Store):
    await store.create_debate("abc", "Topic", "classic", {}, {"status": "idle", "total_rounds": 2})
    first = await store.append("abc", EventKind.NOTE, {"n": 1}, summary={"status": "debating", "round": 1})
    second = await store.append("abc", EventKind.NOTE, {"n": 2}, summary={"turn_count": 5, "cost_usd": 0.25})
    assert (first.seq, second.seq) == (2, 3)
    assert [e.data.get("n") for e in await store.events("abc")] == [None, 1, 2]
    row = await store.get_row("abc")
    assert (row.status, row.round, row.total_rounds, row.turn_count, row.cost_usd) == ("debating", 1, 2, 5, 0.25)


@sqlite_only
async def test_each_append_is_committed_when_it_returns(store: Store):
    """Another connection sees the event at once: committed before anyone is told about it."""
    await store.create_debate("abc", "Topic", "classic", {}, {})
    reader = sqlite3.connect(store.path)
    try:
        for n in range(3):
            event = await store.append("abc", EventKind.NOTE, {"n": n})
            seen = reader.execute("SELECT max(seq) FROM events WHERE debate_id = 'abc'").fetchone()[0]
            assert seen == event.seq
    finally:
        reader.close()


async def test_a_failed_append_stores_neither_event_nor_projection(store: Store):
    """The event and its listing update are one transaction: a failure in the second undoes the first."""
    await store.create_debate("abc", "Topic", "classic", {}, {"status": "idle"})
    with pytest.raises(UNSTORABLE):
        await store.append("abc", EventKind.NOTE, {"n": 1}, summary={"status": "debating", "phase": ["unbindable"]})
    assert [e.seq for e in await store.events("abc")] == [1]
    assert (await store.get_row("abc")).status == "idle"
    if isinstance(store, Store):
        assert not store._writer.in_transaction
    after = await store.append("abc", EventKind.NOTE, {"n": 2})
    assert after.seq == 2


async def test_append_to_unknown_debate_raises(store: Store):
    with pytest.raises(KeyError):
        await store.append("nope", EventKind.NOTE, {})


async def test_existing_idempotency_key_stores_nothing(store: Store):
    await store.create_debate("abc", "Topic", "classic", {}, {})
    first = await store.append("abc", EventKind.TURN, {"turn": {"text": "first"}}, idem_key="opening/r1/pro/0",
                               summary={"turn_count": 1})
    again = await store.append("abc", EventKind.TURN, {"turn": {"text": "second"}}, idem_key="opening/r1/pro/0",
                               summary={"turn_count": 2})
    assert first is not None and again is None
    events = await store.events("abc")
    assert [e.data for e in events if e.kind is EventKind.TURN] == [{"turn": {"text": "first"}}]
    assert (await store.get_row("abc")).turn_count == 1
    # The sequence continues without a gap, and the same key in another debate is independent.
    assert (await store.append("abc", EventKind.NOTE, {})).seq == first.seq + 1
    await store.create_debate("other", "Topic", "classic", {}, {})
    assert await store.append("other", EventKind.TURN, {}, idem_key="opening/r1/pro/0") is not None


async def test_events_without_key_are_never_deduplicated(store: Store):
    await store.create_debate("abc", "Topic", "classic", {}, {})
    for _ in range(3):
        assert await store.append("abc", EventKind.NOTE, {"same": True}) is not None
    assert len(await store.events("abc")) == 4


# --- listing ------------------------------------------------------------------------------------


async def test_list_debates_searches_filters_and_pages(store: Store):
    for i, (topic, status) in enumerate([
        ("Cats beat dogs", "completed"), ("Dogs beat cats", "debating"), ("Tea over coffee", "completed"),
        ("100% renewable_energy", "paused"),
    ]):
        await store.create_debate(f"id{i}", topic, "classic", {}, {"status": status})
    rows, total = await store.list_debates(query="CATS")
    assert total == 2 and {r.id for r in rows} == {"id0", "id1"}
    rows, total = await store.list_debates(statuses=["completed"])
    assert total == 2 and {r.id for r in rows} == {"id0", "id2"}
    rows, total = await store.list_debates(query="cats", statuses=["completed"])
    assert [r.id for r in rows] == ["id0"]
    # LIKE wildcards in the query are taken literally.
    assert (await store.list_debates(query="100%"))[1] == 1
    assert (await store.list_debates(query="_"))[1] == 1
    assert (await store.list_debates(query="%"))[1] == 1
    # Newest first, paged.
    page1, total = await store.list_debates(limit=3)
    page2, _ = await store.list_debates(offset=3, limit=3)
    assert total == 4
    assert [r.id for r in page1 + page2] == ["id3", "id2", "id1", "id0"]


async def test_find_id_accepts_unique_prefixes_only(store: Store):
    await store.create_debate("abc123", "T", "classic", {}, {})
    await store.create_debate("abd456", "T", "classic", {}, {})
    assert await store.find_id("abc123") == "abc123"
    assert await store.find_id("abc") == "abc123"
    assert await store.find_id("ab") is None
    assert await store.find_id("a_c") is None  # `_` is not a wildcard
    assert await store.find_id("zzz") is None
    assert await store.get_row("abd456") is not None and await store.get_row("abd") is None


# --- group commit -------------------------------------------------------------------------------


@sqlite_only
async def test_concurrent_appends_share_one_commit_and_keep_their_own_outcomes(store: Store):
    """Everything queued together commits in one transaction, yet each append keeps its own result: a
    stale `expected_seq` or an existing idempotency key affects only that append."""
    for debate_id in ("a", "b", "c"):
        await store.create_debate(debate_id, "Topic", "classic", {}, {"status": "idle"})
    await store.append("c", EventKind.TURN, {"turn": "kept"}, idem_key="turn-1")
    commits = store.commits
    results = await asyncio.gather(
        store.append("a", EventKind.NOTE, {"n": 1}, expected_seq=2, summary={"turn_count": 1}),
        store.append("b", EventKind.NOTE, {"n": 2}, expected_seq=9),  # stale: b's log is at 1
        store.append("a", EventKind.NOTE, {"n": 3}, expected_seq=3),
        store.append("c", EventKind.TURN, {"turn": "again"}, idem_key="turn-1"),  # a replay
        store.append("ghost", EventKind.NOTE, {}),  # no such debate
        store.append("c", EventKind.NOTE, {"n": 4}, summary={"status": "debating"}),
        return_exceptions=True,
    )
    assert store.commits == commits + 1  # one transaction, one fsync, for all six
    first, stale, second, replay, ghost, last = results
    assert (first.seq, second.seq, last.seq) == (2, 3, 3)
    assert isinstance(stale, StaleWrite) and "changed by another process" in str(stale)
    assert replay is None
    assert isinstance(ghost, KeyError)
    assert [e.data for e in await store.events("a")][1:] == [{"n": 1}, {"n": 3}]
    assert [e.seq for e in await store.events("b")] == [1]
    assert [e.data for e in await store.events("c")][1:] == [{"turn": "kept"}, {"n": 4}]
    assert (await store.get_row("a")).turn_count == 1 and (await store.get_row("c")).status == "debating"


@sqlite_only
async def test_a_failing_append_in_a_group_leaves_no_trace_of_itself(store: Store):
    """A write that fails halfway (its event inserted, its listing update refused) is rolled back to its
    savepoint: neither half stays, and the appends around it commit."""
    await store.create_debate("abc", "Topic", "classic", {}, {"status": "idle"})
    ok1, bad, ok2 = await asyncio.gather(
        store.append("abc", EventKind.NOTE, {"n": 1}),
        store.append("abc", EventKind.NOTE, {"n": "bad"}, summary={"phase": ["unbindable"]}),
        store.append("abc", EventKind.NOTE, {"n": 2}),
        return_exceptions=True,
    )
    assert isinstance(bad, sqlite3.Error)
    assert (ok1.seq, ok2.seq) == (2, 3)
    assert [e.data for e in await store.events("abc")][1:] == [{"n": 1}, {"n": 2}]


@sqlite_only
async def test_appends_sqlite_refuses_fail_alone_wherever_they_are_in_the_group(store: Store):
    """Refused values first, in the middle and last of one group: each fails with its own error, and every
    other append of the group is stored, numbered and listed as if the refused ones had not been there."""
    await store.create_debate("abc", "Topic", "classic", {}, {"status": "idle"})
    commits = store.commits
    results = await asyncio.gather(
        store.append("abc", EventKind.NOTE, {"n": "bad"}, summary={"phase": ["unbindable"]}),
        store.append("abc", EventKind.NOTE, {"n": 1}, summary={"turn_count": 1}),
        store.append("abc", EventKind.NOTE, {"n": "big"}, summary={"turn_count": 2**70}),
        store.append("abc", EventKind.NOTE, {"n": 2}, expected_seq=3, summary={"status": "debating"}),
        store.append("abc", EventKind.NOTE, {"n": "bad"}, summary={"round": {"no": "dict"}}),
        return_exceptions=True,
    )
    assert store.commits == commits + 1
    first, one, big, two, last = results
    assert isinstance(first, sqlite3.Error) and isinstance(last, sqlite3.Error) and isinstance(big, OverflowError)
    assert (one.seq, two.seq) == (2, 3)
    assert [e.data for e in await store.events("abc")][1:] == [{"n": 1}, {"n": 2}]
    row = await store.get_row("abc")
    assert (row.status, row.turn_count, row.round, row.phase) == ("debating", 1, 0, None)


@sqlite_only
async def test_a_group_mixing_writes_has_the_outcome_of_the_writes_one_after_another(store: Store):
    """The appends of a group are written together, yet each sees what the writes queued before it did:
    a debate created, or deleted, earlier in the same group; its own earlier appends (numbering, a key
    used twice, the listing row left by the last one)."""
    await store.create_debate("gone", "Topic", "classic", {}, {})
    commits = store.commits
    results = await asyncio.gather(
        store.create_debate("new", "Topic", "classic", {}, {"status": "idle"}),
        store.append("new", EventKind.NOTE, {"n": 1}, expected_seq=2,
                     summary={"status": "debating", "round": 1, "phase": "opening"}),
        store.append("new", EventKind.TURN, {"n": 2}, idem_key="k", summary={"turn_count": 1}),
        store.append("new", EventKind.TURN, {"n": 3}, idem_key="k", summary={"turn_count": 9}),  # a replay
        store.append("new", EventKind.NOTE, {"n": 4}, expected_seq=3, summary={"round": 2}),  # stale: 3 is taken
        store.append("new", EventKind.NOTE, {"n": 5}, expected_seq=4, summary={"round": 3, "phase": None}),
        store.delete_debate("gone"),
        store.append("gone", EventKind.NOTE, {}),  # deleted just before, in the same group
        return_exceptions=True,
    )
    assert store.commits == commits + 1
    _, first, turn, replay, stale, last, deleted, ghost = results
    assert (first.seq, turn.seq, last.seq) == (2, 3, 4) and replay is None and deleted is True
    assert isinstance(stale, StaleWrite) and isinstance(ghost, KeyError)
    assert [(e.seq, e.data) for e in await store.events("new")][1:] == [(2, {"n": 1}), (3, {"n": 2}), (4, {"n": 5})]
    row = await store.get_row("new")
    assert (row.status, row.round, row.turn_count, row.phase) == ("debating", 3, 1, None)
    assert row.updated_at == last.at
    assert await store.get_row("gone") is None and await store.events("gone") == []


def test_a_failed_open_leaves_no_thread_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Each connection has a thread; an open that fails stops the ones it started and waits for them, so
    none is left running, or reporting later into an event loop that has closed (a CLI exiting on the
    error used to print "Exception in thread ...: Event loop is closed")."""
    errors: list[object] = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    blocker = tmp_path / "data"
    blocker.write_text("a file where the database directory should be")
    (tmp_path / "garbage.sqlite3").write_bytes(b"not a database" * 500)
    before = set(threading.enumerate())
    for path in [blocker / "db.sqlite3", tmp_path / "garbage.sqlite3"] * 10:
        loop = asyncio.new_event_loop()
        try:
            with pytest.raises((StoreUnwritable, StoreCorrupt)):
                loop.run_until_complete(Store.open(path))
        finally:
            loop.close()  # at once, as a CLI that exits on the error
    left = set(threading.enumerate()) - before
    for thread in left:
        thread.join(5)
    assert [t for t in left if t.is_alive()] == [] and errors == []


@sqlite_only
async def test_an_append_cancelled_while_queued_is_never_stored(store: Store):
    await store.create_debate("abc", "Topic", "classic", {}, {})
    async with store.transaction():  # the writer connection is busy: the append waits in the queue
        task = asyncio.create_task(store.append("abc", EventKind.NOTE, {"n": 1}))
        await asyncio.sleep(0)  # one loop step: the task queues its write
        assert len(store._pending) == 1
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await store.append("abc", EventKind.NOTE, {"n": 2})).seq == 2
    assert [e.data for e in await store.events("abc")][1:] == [{"n": 2}]


async def test_close_commits_what_is_queued(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    s = await Store.open(path)
    await s.create_debate("abc", "Topic", "classic", {}, {})
    tasks = [asyncio.create_task(s.append("abc", EventKind.NOTE, {"n": n})) for n in range(5)]
    await asyncio.sleep(0)  # one loop step: every task queues its write
    await s.close()
    assert [t.result().seq for t in tasks] == [2, 3, 4, 5, 6]
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT count(*) FROM events").fetchone()[0] == 6
    check.close()


# --- storage faults, each reported as what it is ----------------------------------------------------


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another process's connection holding the database's write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    return other


async def test_a_directory_that_cannot_be_created_is_unwritable_not_corrupt(tmp_path: Path):
    blocker = tmp_path / "data"
    blocker.write_text("a file where the database directory should be")
    for path in (blocker / "rostrum.sqlite3", blocker / "deeper" / "rostrum.sqlite3"):
        with pytest.raises(StoreUnwritable) as caught:
            await Store.open(path)
        assert not isinstance(caught.value, StoreCorrupt)
        assert str(path.parent) in str(caught.value) and caught.value.path == path
        assert "directory" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


async def test_a_directory_in_place_of_the_file_is_unwritable(tmp_path: Path):
    (tmp_path / "db.sqlite3").mkdir()
    with pytest.raises(StoreUnwritable, match="is a directory"):
        await Store.open(tmp_path / "db.sqlite3")


async def test_a_read_only_file_is_reported_as_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "db.sqlite3"
    await _fill(path, debates=1)
    before = _digest(path)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == path and mode & os.W_OK
                        else real_access(p, mode))  # what a chmod 444 file or a read-only mount says
    with pytest.raises(StoreUnwritable, match="read-only") as caught:
        await Store.open(path)
    assert str(path) in str(caught.value) and not isinstance(caught.value, StoreCorrupt)
    assert _digest(path) == before


async def test_writes_to_a_read_only_database_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """SQLite itself refusing the write (the file opened read-only) is reported as read-only, with the path."""
    path = tmp_path / "db.sqlite3"
    await _fill(path, debates=1)
    monkeypatch.setattr(repository, "_connect", lambda p: sqlite3.connect(
        f"file:{p}?mode=ro", uri=True, isolation_level=None, check_same_thread=False))
    s = await Store.open(path)
    try:
        with pytest.raises(StoreUnwritable, match="read-only") as caught:
            await s.append("d000", EventKind.NOTE, {"n": 1})
        assert str(path) in str(caught.value)
        assert len(await s.events("d000")) == 4  # reading still works
    finally:
        await s.close()


@sqlite_only
async def test_a_full_disk_fails_the_group_with_disk_full_and_the_store_recovers(store: Store):
    await store.create_debate("abc", "Topic", "classic", {}, {})
    pages = await _pragma(store, "page_count")
    await _pragma(store, f"max_page_count = {pages}")  # the disk is full: the file cannot grow
    big, small = await asyncio.gather(
        store.append("abc", EventKind.NOTE, {"pad": "x" * 200_000}),
        store.append("abc", EventKind.NOTE, {"n": 1}),
        return_exceptions=True,
    )
    for error in (big, small):  # both were in the transaction the full disk rolled back
        assert isinstance(error, StoreFull) and isinstance(error, StoreUnwritable), error
        assert "full" in str(error) and str(store.path) in str(error)
    assert not store._writer.in_transaction
    await _pragma(store, "max_page_count = 1073741823")  # space freed
    assert (await store.append("abc", EventKind.NOTE, {"n": 2})).seq == 2


async def test_a_locked_database_is_busy_not_corrupt_and_left_untouched(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    await _fill(path, debates=1)
    before = _digest(path)
    other = _hold_write_lock(path)
    try:
        with pytest.raises(StoreBusy, match="another process holds the database") as caught:
            await Store.open(path, lock_timeout=0.2)
        assert caught.value.transient and str(path) in str(caught.value)
        assert caught.value.advice.startswith("another process holds the database; retry")
    finally:
        other.rollback()
        other.close()
    assert _digest(path) == before


@sqlite_only
async def test_an_append_waits_out_a_lock_held_by_another_process(store: Store):
    await store.create_debate("abc", "Topic", "classic", {}, {})
    other = _hold_write_lock(store.path)
    waited = asyncio.Event()
    store.on_busy = waited.set
    try:
        task = asyncio.create_task(store.append("abc", EventKind.NOTE, {"n": 1}))
        await waited.wait()  # it found the lock taken and is backing off
        assert not task.done()
    finally:
        other.rollback()  # the other process lets go
        other.close()
    assert (await task).seq == 2
    assert store.busy_waits >= 1


async def test_an_append_gives_up_on_a_lock_held_too_long_with_busy(tmp_path: Path):
    s = await Store.open(tmp_path / "db.sqlite3", lock_timeout=0.2)
    try:
        await s.create_debate("abc", "Topic", "classic", {}, {})
        other = _hold_write_lock(s.path)
        try:
            with pytest.raises(StoreBusy, match="another process holds the database"):
                await s.append("abc", EventKind.NOTE, {"n": 1})
        finally:
            other.rollback()
            other.close()
        assert [e.seq for e in await s.events("abc")] == [1]
        assert (await s.append("abc", EventKind.NOTE, {"n": 2})).seq == 2  # and it works again afterwards
    finally:
        await s.close()


async def test_transactions_wait_out_a_lock_then_report_busy(tmp_path: Path):
    s = await Store.open(tmp_path / "db.sqlite3", lock_timeout=0.2)
    other = _hold_write_lock(s.path)
    try:
        with pytest.raises(StoreBusy):
            async with s.transaction() as tx:
                await tx.execute("DELETE FROM debates")
    finally:
        other.rollback()
        other.close()
        await s.close()


# --- the integrity check runs once per process start -------------------------------------------------


async def test_the_check_is_skipped_only_for_a_file_this_process_checked_and_nobody_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "db.sqlite3"
    await _fill(path, debates=2)
    checks: list[str] = []
    real_connect = repository._connect

    def counting_connect(p: Path) -> sqlite3.Connection:
        conn = real_connect(p)
        conn.set_trace_callback(lambda sql: checks.append(sql) if "quick_check" in sql else None)
        return conn

    monkeypatch.setattr(repository, "_connect", counting_connect)
    await (await Store.open(path, remember_check=True)).close()  # main.py, before serving
    assert len(checks) == 1
    await (await Store.open(path)).close()  # the app's engine: same file, unchanged
    assert len(checks) == 1
    await (await Store.open(path)).close()  # the hand-over is used once: the next open checks again
    assert len(checks) == 2
    # A file changed after the check is checked again, and refused now that it is corrupt.
    await (await Store.open(path, remember_check=True)).close()
    assert len(checks) == 3
    _corrupt_root_page(path, "events")
    with pytest.raises(StoreCorrupt):
        await Store.open(path)
    assert len(checks) == 4


def test_a_store_outlives_the_event_loop_that_first_wrote_with_it(tmp_path: Path):
    """Used again from a second `asyncio.run`, the store writes (and closes) as before instead of waiting
    forever for a writer task whose loop has ended."""

    async def first() -> Store:
        s = await Store.open(tmp_path / "db.sqlite3")
        await s.create_debate("abc", "Topic", "classic", {}, {})
        return s

    async def second(s: Store) -> int:
        event = await s.append("abc", EventKind.NOTE, {"n": 1})
        async with s.transaction() as tx:
            await tx.execute("UPDATE debates SET topic = 'Renamed'")
        await s.close()
        return event.seq

    s = asyncio.run(first())
    assert asyncio.run(asyncio.wait_for(second(s), 30)) == 2


def test_a_store_left_open_does_not_keep_the_process_from_exiting(tmp_path: Path):
    """A command that fails without closing its store (or a crash on the way out) still exits: before,
    the read connection's thread kept the interpreter waiting forever."""
    script = (
        "import asyncio, sys\n"
        "from webapp.models import EventKind\n"
        "from webapp.store import Store\n"
        "async def main():\n"
        "    s = await Store.open(sys.argv[1])\n"
        "    await s.create_debate('abc', 'Topic', 'classic', {}, {})\n"
        "    await s.append('abc', EventKind.NOTE, {'n': 1})\n"
        "    print(len(await s.events('abc')), flush=True)\n"
        "    raise SystemExit(3)  # no close\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "db.sqlite3")], capture_output=True,
                            text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert (result.returncode, result.stdout.strip()) == (3, "2"), result.stderr
    with sqlite3.connect(tmp_path / "db.sqlite3") as check:  # and what it committed is there
        assert check.execute("SELECT count(*) FROM events").fetchone()[0] == 2
    check.close()


def _sqlite_error(code: int, name: str, message: str) -> sqlite3.Error:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode, error.sqlite_errorname = code, name
    return error


@pytest.mark.parametrize(("error", "kind", "words"), [
    (_sqlite_error(10 | (3 << 8), "SQLITE_IOERR_WRITE", "disk I/O error"), StoreIOError, "disk I/O error"),
    (_sqlite_error(5 | (2 << 8), "SQLITE_BUSY_SNAPSHOT", "database is locked"), StoreBusy, "is locked"),
    (_sqlite_error(8 | (6 << 8), "SQLITE_READONLY_DIRECTORY", "readonly"), StoreUnwritable, "its directory"),
    (_sqlite_error(14, "SQLITE_CANTOPEN", "unable to open database file"), StoreUnwritable, "cannot open"),
    (_sqlite_error(26, "SQLITE_NOTADB", "file is not a database"), StoreCorrupt, "not a readable"),
    (OSError(errno.ENOSPC, "No space left on device", "/data"), StoreFull, "full"),
    (OSError(errno.EROFS, "Read-only file system", "/data"), StoreUnwritable, "Read-only file system"),
    (OSError(errno.EIO, "Input/output error", "/data"), StoreIOError, "I/O error"),
])
def test_faults_sqlite_and_the_os_report_are_classified_with_the_path(error: Exception, kind: type, words: str):
    path = Path("/data/rostrum.sqlite3")
    classified = classify(error, path)
    assert type(classified) is kind and words in str(classified) and str(path) in str(classified)
    assert classified.path == path and classified.advice


def test_errors_that_are_not_storage_faults_are_left_alone():
    assert classify(sqlite3.IntegrityError("UNIQUE constraint failed"), Path("x")) is None
    assert classify(_sqlite_error(1, "SQLITE_ERROR", "no such table: nope"), Path("x")) is None
    assert classify(KeyError("no debate"), Path("x")) is None


@sqlite_only
async def test_a_transaction_cancelled_while_it_begins_leaves_none_open(store: Store):
    """A caller cancelled while its BEGIN is on its way to the database (a worker closing mid-release):
    the next transaction starts cleanly, not with "cannot start a transaction within a transaction"."""
    entered = asyncio.Event()

    async def begin_then_wait() -> None:
        async with store.transaction():
            entered.set()  # (not reached: cancelled before)

    task = asyncio.create_task(begin_then_wait())
    while not store._lock.locked():  # the task holds the write lock and has sent BEGIN: cancel it there
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not entered.is_set()
    async with store.transaction() as tx:
        await tx.execute("UPDATE debates SET topic = topic WHERE 0")
    assert await store.fetchall("SELECT 1") == [(1,)]
