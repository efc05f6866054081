"""`python -m webapp migrate-store`: a SQLite database with real debates, accounts, share links, audit
rows, saved profiles and templates and a tournament copied into PostgreSQL, checked by counts and
checksums, and the copy usable; every table of either store is accounted for (copied, derived,
transient or bookkeeping), and a table nobody accounted for stops the copy."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from webapp import cli
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, EventKind
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.providers.endpoints import Endpoint
from webapp.results.records import load_results
from webapp.store import Store
from webapp.store.accounts import Accounts
from webapp.store.endpoints import EndpointStore
from webapp.store.library import Library
from webapp.store.postgres import PostgresStore
from webapp.store.protocol import EventStore
from webapp.store.transfer import (
    COPIED,
    DERIVED,
    TABLES,
    TRANSIENT,
    TransferError,
    TransferReport,
    debate_checksum,
    migrate_store,
    parse_target,
    table_checksum,
    table_names,
    unaccounted,
    verify,
)
from webapp.tournament.plan import Contender, Tournament
from webapp.tournament.store import TournamentStore


async def _source(path: Path) -> list[str]:
    """A SQLite database as a team leaves it: two finished debates (one a hostile topic), one paused
    half-way, a deleted one, accounts, a share link, audit rows, saved profiles and a template, and a
    tournament."""
    engine = await Engine.open(path, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
    try:
        ids = []
        for topic in ("Cats beat dogs", "<script>alert('x')</script> 100% _sure_?"):
            session = await engine.start(DebateConfig(topic=topic, format="classic"))
            assert await session.join() is State.COMPLETED
            ids.append(session.id)
        gone = await engine.start(DebateConfig(topic="Removed", format="classic"))
        await gone.join()
        await engine.store.delete_debate(gone.id)
        await engine.store.create_debate("paused1", "Half done", "classic", {"series": ids[0]}, {"status": "paused"})
        await engine.store.append("paused1", EventKind.NOTE, {"text": "ünïcode"}, idem_key="k1",
                                  summary={"status": "paused", "interrupted": True, "cost_usd": 0.125})
        ids.append("paused1")
        accounts = Accounts(engine.store)
        await accounts.add_user("Admin", "admin", "argon2-hash")
        await accounts.add_user("viewer", "viewer", None)
        await accounts.add_link(ids[0], "digest", "Admin", None)
        for n in range(3):
            await accounts.audit("Admin", "pause", ids[0], detail={"n": n})
        library = Library(engine.store)
        await library.save("profile", "Calm demo", {"provider": "demo", "model": "demo", "persona": "calm"}, "Admin")
        await library.save("profile", "<b>Loud</b> ünïcode", {"provider": "demo", "model": "demo-instant"}, "viewer")
        await library.save("template", "Two rounds", {"topic": "", "format": "oxford", "rounds": 2}, "Admin")
        await TournamentStore(engine.store).create(Tournament(
            models=[Contender.parse("alpha"), Contender.parse("beta")], topics=["Tea?"], created_by="Admin"))
        await EndpointStore(engine.store).add(
            Endpoint(name="Team vLLM", base_url="http://10.0.0.5:8000/v1", key_env="TEAM_KEY"), "Admin")
    finally:
        await engine.close()
    return ids


async def test_every_debate_and_account_is_copied_and_verified(tmp_path: Path, pg_dsn: str) -> None:
    path = tmp_path / "old.sqlite3"
    ids = await _source(path)
    out = io.StringIO()
    code = await asyncio.to_thread(cli.main, ["migrate-store", "--from", f"sqlite:{path}", "--to", pg_dsn], out)
    assert code == cli.EXIT_OK, out.getvalue()
    assert "copied 3 debate(s)" in out.getvalue() and "checksum match" in out.getvalue()
    assert "3 library" in out.getvalue() and "1 tournaments" in out.getvalue()

    source, copy = await Store.open(path), await PostgresStore.open(pg_dsn)
    try:
        for debate_id in ids:
            assert await debate_checksum(copy, debate_id) == await debate_checksum(source, debate_id)
        for debate_id in ids[:2]:  # the engine's debates: the copy folds to the same debate
            before = DebateState.from_events(await source.events(debate_id))
            after = DebateState.from_events(await copy.events(debate_id))
            assert after.summary() == before.summary() and after.turns == before.turns
        assert [r.id for r in (await copy.list_debates())[0]] == [r.id for r in (await source.list_debates())[0]]
        assert await copy.series_ids(ids[0]) == [ids[0], "paused1"]
        # The leaderboard's digests are made on the way; the tournaments are copied.
        assert await load_results(copy) == await load_results(source) and len(await load_results(copy)) == 2
        assert await TournamentStore(copy).all() == await TournamentStore(source).all()
        assert await Library(copy).items() == await Library(source).items()
        assert await EndpointStore(copy).list() == await EndpointStore(source).list() != []
        assert [i.name for i in await Library(copy).items("profile")] == ["<b>Loud</b> ünïcode", "Calm demo"]
        for table in (*COPIED, *DERIVED):  # the derived verdict digests were remade, one per judged debate
            want = (await source.fetchone(f"SELECT count(*) FROM {table}"))[0]
            assert (await copy.fetchone(f"SELECT count(*) FROM {table}"))[0] == want, table
        accounts = Accounts(copy)
        admin = await accounts.user("admin")
        assert admin is not None and admin.password_hash == "argon2-hash"
        assert (await accounts.link_by_hash("digest")).debate_id == ids[0]
        await accounts.audit("Admin", "resume", ids[0])  # new audit ids continue after the copied ones
        rows, total = await accounts.audit_page()
        assert total == 4 and rows[0].action == "resume" and rows[0].id == 4
        # The copy takes new events where the log left off; the old key is still known.
        assert await copy.append("paused1", EventKind.NOTE, {}, idem_key="k1") is None
        assert (await copy.append("paused1", EventKind.NOTE, {}, expected_seq=3)).seq == 3
    finally:
        await source.close()
        await copy.close()

    again = io.StringIO()
    assert await asyncio.to_thread(cli.main, ["migrate-store", "--from", str(path), "--to", pg_dsn], again) == 1


async def test_a_copy_that_differs_from_its_source_fails_verification(tmp_path: Path, pg_dsn: str) -> None:
    source = await Store.open(tmp_path / "db.sqlite3")
    copy = await PostgresStore.open(pg_dsn)
    try:
        for store in (source, copy):
            await store.create_debate("d", "T", "classic", {}, {})
            await store.append("d", EventKind.NOTE, {"text": "original"}, at=None)
        report = TransferReport(debates=1, checksums={"d": await debate_checksum(source, "d")})
        with pytest.raises(TransferError, match="debate d: its copy differs"):
            await verify(source, copy, report)  # the `at` of each event differs: not the same copy
    finally:
        await source.close()
        await copy.close()


def test_targets_are_read_as_sqlite_paths_or_postgresql_urls() -> None:
    assert parse_target("sqlite:data/x.sqlite3") == Path("data/x.sqlite3")
    assert parse_target("data/x.sqlite3") == Path("data/x.sqlite3")
    assert parse_target("postgresql://u@h/db") == "postgresql://u@h/db"
    with pytest.raises(TransferError, match="needs a path"):
        parse_target("sqlite:")


async def test_every_table_of_either_store_is_copied_derived_transient_or_bookkeeping(any_store: EventStore) -> None:
    """A migration that adds a table must say here how migrate-store treats it (this fails until it does)."""
    tables = await table_names(any_store)
    assert {"debates", "events", "library", "tournaments", "debate_leases"} <= tables
    assert unaccounted(tables) == set()
    assert not set(TRANSIENT) & set(COPIED)


async def test_a_table_nobody_accounted_for_stops_the_copy_before_it_starts(tmp_path: Path, pg_dsn: str) -> None:
    path = tmp_path / "old.sqlite3"
    await _source(path)
    store = await Store.open(path)
    try:
        async with store.transaction() as tx:
            await tx.execute("CREATE TABLE ratings_cache (id TEXT PRIMARY KEY)")
    finally:
        await store.close()
    with pytest.raises(TransferError, match="does not know how to copy: ratings_cache"):
        await migrate_store(path, pg_dsn)
    copy = await PostgresStore.open(pg_dsn)
    try:
        assert (await copy.fetchone("SELECT count(*) FROM debates"))[0] == 0
    finally:
        await copy.close()


async def test_a_library_row_that_differs_after_the_copy_fails_verification(tmp_path: Path, pg_dsn: str) -> None:
    source = await Store.open(tmp_path / "db.sqlite3")
    copy = await PostgresStore.open(pg_dsn)
    try:
        for store in (source, copy):
            await Library(store).save("profile", "Calm", {"provider": "demo", "model": "demo"}, "Admin")
        report = TransferReport(table_checksums={table: await table_checksum(source, table) for table in TABLES})
        with pytest.raises(TransferError, match="library: the copied rows differ"):
            await verify(source, copy, report)  # same name and data, but its own id and times: not a copy
    finally:
        await source.close()
        await copy.close()
