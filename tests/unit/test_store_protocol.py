"""Choosing a store from ROSTRUM_DB, placeholders written once for both databases, and a PostgreSQL
password kept out of every message."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from webapp.settings import Settings, storage_secret
from webapp.store import Store, StoreError
from webapp.store.errors import StoreUnavailable
from webapp.store.postgres import PostgresStore
from webapp.store.protocol import is_postgres_url, open_store, redacted
from webapp.store.sql import numbered


def test_placeholders_are_numbered_outside_quoted_text_only() -> None:
    assert numbered("SELECT a FROM t WHERE b = ? AND c IN (?, ?)") == "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"
    assert numbered("SELECT 'why?', \"odd?col\" FROM t WHERE x = ?") == "SELECT 'why?', \"odd?col\" FROM t WHERE x = $1"
    assert numbered("SELECT 'it''s?' WHERE y = ?") == "SELECT 'it''s?' WHERE y = $1"
    assert numbered("SELECT 1") == "SELECT 1"


def test_rostrum_db_names_a_sqlite_file_or_a_postgresql_url(tmp_path: Path) -> None:
    assert Settings(db=str(tmp_path / "x.sqlite3")).db == tmp_path / "x.sqlite3"
    url = "postgresql://rostrum:s3cret@db.internal:5432/rostrum"
    settings = Settings(db=url, storage_secret=None)
    assert settings.db == url and is_postgres_url(settings.db)
    assert not is_postgres_url(Path("postgresql:/not-a-url"))  # a path is a path, whatever it is called
    assert redacted(url) == "postgresql://rostrum:***@db.internal:5432/rostrum"
    assert redacted("postgresql://rostrum@db/rostrum") == "postgresql://rostrum@db/rostrum"
    assert redacted(tmp_path / "x.sqlite3") == str(tmp_path / "x.sqlite3")


def test_the_session_secret_has_a_home_when_the_database_is_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    secret = storage_secret(Settings(db="postgresql://u@h/db", storage_secret=None))
    assert (tmp_path / "data" / ".rostrum-storage-secret").read_text().strip() == secret


async def test_open_store_picks_the_store_the_target_names(tmp_path: Path, pg_dsn: str) -> None:
    sqlite = await open_store(tmp_path / "db.sqlite3")
    postgres = await open_store(pg_dsn)
    try:
        assert isinstance(sqlite, Store) and isinstance(postgres, PostgresStore)
    finally:
        await sqlite.close()
        await postgres.close()


async def test_an_unreachable_server_is_unavailable_and_its_password_never_shown() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreError) as caught:
        await PostgresStore.open(f"postgresql://rostrum:hunter2@127.0.0.1:{port}/rostrum")
    assert isinstance(caught.value, StoreUnavailable) and caught.value.transient
    assert "hunter2" not in str(caught.value) and "***" in str(caught.value)
    assert "PostgreSQL" in caught.value.advice
