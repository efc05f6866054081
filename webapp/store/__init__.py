"""Persistence: the append-only event log in SQLite (WAL, group commit; the embedded default) or in
PostgreSQL (`ROSTRUM_DB=postgresql://…`), both behind one protocol (`EventStore`, `open_store`), each
with its named, forward-only migrations."""

from webapp.store.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreIOError,
    StoreTooNew,
    StoreUnwritable,
)
from webapp.store.protocol import EventStore, open_store
from webapp.store.repository import DebateRow, StaleWrite, Store

__all__ = [
    "DebateRow",
    "EventStore",
    "StaleWrite",
    "Store",
    "StoreBusy",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreIOError",
    "StoreTooNew",
    "StoreUnwritable",
    "open_store",
]
