"""Persistence: the append-only event log in SQLite (WAL, group commit) and its named migrations."""

from webapp.store.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreIOError,
    StoreTooNew,
    StoreUnwritable,
)
from webapp.store.repository import DebateRow, StaleWrite, Store

__all__ = [
    "DebateRow",
    "StaleWrite",
    "Store",
    "StoreBusy",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreIOError",
    "StoreTooNew",
    "StoreUnwritable",
]
