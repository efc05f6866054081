"""Persistence: the append-only event log in SQLite (aiosqlite, WAL) and its migrations."""

from webapp.store.repository import DebateRow, StaleWrite, Store, StoreCorrupt

__all__ = ["DebateRow", "StaleWrite", "Store", "StoreCorrupt"]
