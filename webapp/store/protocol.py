"""What the rest of Rostrum may ask of a store: the protocol both the SQLite store (`Store`) and the
PostgreSQL store (`PostgresStore`) implement, and the one place that picks between them (`open_store`).

The event log is the truth (append-only, numbered per debate, idempotency keys, the stale-write
check); the `debates` table is a projection of it kept for listing. The protocol offers domain methods
and domain objects only (`tournaments`, `leases`, `jobs`, `verdicts`), never SQL: every statement is in
`webapp.store`, whose own modules run theirs through `webapp.store.sql.SqlRunner`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from webapp.models import DebateEvent, EventKind
from webapp.store.leases import JobTable, LeaseTable
from webapp.store.repository import Store
from webapp.store.rows import DebateRow
from webapp.store.targets import is_postgres_url, redacted
from webapp.store.tournaments import TournamentTable
from webapp.store.verdicts import VerdictTable

__all__ = ["EventStore", "is_postgres_url", "open_store", "redacted"]

class EventStore(Protocol):
    """A debate store: the event log, its listing projection, and the tables beside it as domain objects."""

    async def close(self) -> None: ...

    @property
    def tournaments(self) -> TournamentTable:
        """Tournaments, the debates of their slots, and who plays each (`webapp.store.tournaments`)."""
        ...

    @property
    def leases(self) -> LeaseTable:
        """Which worker runs which debate, until when (`webapp.store.leases`)."""
        ...

    @property
    def jobs(self) -> JobTable:
        """What web processes ask of workers (`webapp.store.leases`)."""
        ...

    @property
    def verdicts(self) -> VerdictTable:
        """The stored verdicts as the leaderboard and judge health read them (`webapp.store.verdicts`)."""
        ...

    async def create_debate(
        self, debate_id: str, topic: str, format_id: str, config: dict[str, Any], summary: dict[str, Any],
        actor: str | None = None,
    ) -> DebateEvent: ...

    async def append(
        self, debate_id: str, kind: EventKind, data: dict[str, Any], idem_key: str | None = None,
        summary: dict[str, Any] | None = None, at: datetime | None = None, expected_seq: int | None = None,
    ) -> DebateEvent | None: ...

    async def events(self, debate_id: str) -> list[DebateEvent]: ...

    async def events_after(self, debate_id: str, seq: int) -> list[DebateEvent]: ...

    async def last_change(self) -> tuple[int, str]: ...

    async def find_id(self, prefix: str) -> str | None: ...

    async def list_debates(
        self, query: str = "", statuses: list[str] | None = None, offset: int = 0, limit: int = 20,
        order: str = "newest", model: str | None = None, tag: str | None = None,
    ) -> tuple[list[DebateRow], int]: ...

    async def models_and_tags(self) -> tuple[list[str], list[str]]: ...

    async def series_ids(self, series: str) -> list[str]: ...

    async def ids_with_status(self, statuses: list[str]) -> list[str]: ...

    async def get_row(self, debate_id: str) -> DebateRow | None: ...

    async def participants(self, debate_ids: list[str]) -> dict[str, list[dict[str, Any]]]: ...

    async def delete_debate(self, debate_id: str) -> bool: ...

    async def committed_spend(self, created_by: str, since: datetime, terminal: Iterable[str]) -> float: ...


async def open_store(target: str | Path, **kwargs: Any) -> EventStore:
    """The store `target` names: a `postgresql://…` URL opens `PostgresStore`, anything else is the
    path of a SQLite file (`Store`, the embedded default). `kwargs` go to the SQLite store's `open`."""
    if is_postgres_url(target):
        # late: asyncpg and the PostgreSQL store load only where ROSTRUM_DB names a PostgreSQL server
        from webapp.store.postgres import PostgresStore

        return await PostgresStore.open(str(target))
    return await Store.open(target, **kwargs)
