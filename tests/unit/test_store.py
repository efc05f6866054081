"""The event log: SQLite settings, integrity check, one transaction per event, idempotency, listing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from webapp.models import EventKind
from webapp.store import Store, StoreCorrupt
from webapp.store.migrations import LATEST


@pytest.fixture
async def store(tmp_path: Path):
    s = await Store.open(tmp_path / "db.sqlite3")
    yield s
    await s.close()


async def _pragma(store: Store, name: str):
    async with store._db.execute(f"PRAGMA {name}") as cur:
        return (await cur.fetchone())[0]


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


async def test_real_file_uses_wal_full_sync_and_foreign_keys(store: Store):
    assert (await _pragma(store, "journal_mode")).lower() == "wal"
    assert await _pragma(store, "synchronous") == 2  # FULL
    assert await _pragma(store, "foreign_keys") == 1


async def test_foreign_keys_are_enforced(store: Store):
    with pytest.raises(sqlite3.IntegrityError):
        await store._db.execute(
            "INSERT INTO events (debate_id, seq, kind, at, data) VALUES ('ghost', 1, 'note', 'now', '{}')"
        )
    await store._db.rollback()


async def test_new_file_is_at_latest_schema_version(store: Store):
    async with store._db.execute("SELECT version FROM schema_version ORDER BY version") as cur:
        versions = [r[0] for r in await cur.fetchall()]
    assert versions == list(range(1, LATEST + 1))


# --- integrity ----------------------------------------------------------------------------------


async def test_garbage_file_is_refused_and_left_byte_identical(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    path.write_bytes(b"this is not a database\x00\x01\x02" * 500)
    before = _digest(path)
    with pytest.raises(StoreCorrupt, match=r"db\.sqlite3"):
        await Store.open(path)
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite3"]


@pytest.mark.parametrize("table", ["debates", "events"])
async def test_corrupt_page_is_refused_and_left_byte_identical(tmp_path: Path, table: str):
    path = tmp_path / "db.sqlite3"
    await _fill(path)
    with sqlite3.connect(path) as check:
        page_size = check.execute("PRAGMA page_size").fetchone()[0]
        root = check.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        assert check.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    check.close()
    data = bytearray(path.read_bytes())
    offset = (root - 1) * page_size
    data[offset : offset + 4] = b"\x00\x07\x13\x55"  # an impossible b-tree page type and header
    path.write_bytes(bytes(data))
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
    await s._db.execute("INSERT INTO schema_version (version) VALUES (?)", (LATEST + 1,))
    await s._db.commit()
    await s.close()
    with pytest.raises(RuntimeError, match="newer"):
        await Store.open(path)


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
    with pytest.raises(sqlite3.Error):
        await store.append("abc", EventKind.NOTE, {"n": 1}, summary={"status": "debating", "phase": ["unbindable"]})
    assert [e.seq for e in await store.events("abc")] == [1]
    assert (await store.get_row("abc")).status == "idle"
    assert not store._db.in_transaction
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
