"""What both stores do with the same SQL, written once: `SqlStore`, the base class of the SQLite store
(`webapp.store.repository.Store`) and the PostgreSQL store (`webapp.store.postgres.PostgresStore`).

The log's reads, the change marker, id prefixes, the listing page and its filters, series, statuses,
spending, and the tables beside the log that the layers above reach through the protocol's domain
objects (`tournaments`, `leases`, `jobs`, `verdicts`). A store class gives its `Dialect` and the four
ways to run SQL (`SqlRunner`); how each writes the log (group commit, row locks) stays its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from functools import cached_property
from typing import Any, ClassVar

from webapp.models import DebateEvent, EventKind
from webapp.store.dialect import Dialect
from webapp.store.leases import JobTable, LeaseTable
from webapp.store.rows import LIST_ORDERS, ROW_SELECT, DebateRow, debate_row, tagged_row, token_actor_pattern
from webapp.store.sql import Where, WriteTransaction, like_escaped, marks
from webapp.store.tournaments import TournamentTable
from webapp.store.verdicts import VerdictTable

# Moves when a debate is created or deleted, in any process (`models_and_tags` keeps its answer till then).
_OPTIONS_MARKER = "SELECT count(*), coalesce(max(rowid), 0), coalesce(max(created_at), '') FROM debates"


class SqlStore:
    """The SQL both stores share; a subclass sets `dialect` and runs the statements."""

    dialect: ClassVar[Dialect]
    _options: tuple[tuple[Any, ...], tuple[list[str], list[str]]] | None = None  # `models_and_tags`

    def transaction(self) -> AbstractAsyncContextManager[WriteTransaction]:
        raise NotImplementedError

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    # --- the tables beside the log, as the layers above see them --------------------------------

    @cached_property
    def tournaments(self) -> TournamentTable:
        return TournamentTable(self)

    @cached_property
    def leases(self) -> LeaseTable:
        return LeaseTable(self)

    @cached_property
    def jobs(self) -> JobTable:
        return JobTable(self)

    @cached_property
    def verdicts(self) -> VerdictTable:
        return VerdictTable(self)

    # --- the log -----------------------------------------------------------------------------

    async def events(self, debate_id: str) -> list[DebateEvent]:
        """A debate's whole log, in order."""
        return await self.events_after(debate_id, 0)

    async def events_after(self, debate_id: str, seq: int) -> list[DebateEvent]:
        """Events appended after `seq` (by this or another process), in order."""
        rows = await self.fetchall(
            "SELECT seq, kind, at, data FROM events WHERE debate_id = ? AND seq > ? ORDER BY seq", (debate_id, seq)
        )
        return [
            DebateEvent(debate_id=debate_id, seq=r[0], kind=EventKind(r[1]), at=datetime.fromisoformat(r[2]),
                        data=json.loads(r[3]))
            for r in rows
        ]

    async def last_change(self) -> tuple[int, str]:
        """A cheap marker that moves whenever any debate is created or appended to, in any process."""
        row = await self.fetchone("SELECT count(*), coalesce(max(updated_at), '') FROM debates")
        assert row is not None
        return int(row[0]), str(row[1])

    # --- the listing -------------------------------------------------------------------------

    async def find_id(self, prefix: str) -> str | None:
        """A debate id from a full id or a unique prefix of one."""
        rows = await self.fetchall(
            "SELECT id FROM debates WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 2",
            (prefix, like_escaped(prefix) + "%"))
        ids = {r[0] for r in rows}
        if prefix in ids:
            return prefix
        return str(rows[0][0]) if len(rows) == 1 else None

    async def list_debates(
        self, query: str = "", statuses: list[str] | None = None, offset: int = 0, limit: int = 20,
        order: str = "newest", model: str | None = None, tag: str | None = None,
    ) -> tuple[list[DebateRow], int]:
        """A page of debates in `order` (one of `LIST_ORDERS`: newest first by default), and how many
        match in all. `query`: the topic or a tag contains it; `model` ("provider:model"): one of the
        participants uses it; `tag`: the debate carries that topic tag."""
        if order not in LIST_ORDERS:
            raise ValueError(f"order: one of {', '.join(LIST_ORDERS)}, not {order!r}")
        d = self.dialect
        where = Where()
        if query.strip():
            pattern = f"%{like_escaped(query.strip().lower())}%"
            where.add(f"(topic_search LIKE ? ESCAPE '\\' OR {d.search_tags})", pattern, pattern)
        if statuses:
            where.add(f"status IN ({marks(statuses)})", *statuses)
        if model:
            where.add(d.has_model, model)
        if tag:
            where.add(d.has_tag, tag.strip().lower())
        total = await self.fetchone(f"SELECT count(*) FROM debates WHERE {where.clause}", where.params)
        rows = await self.fetchall(
            f"SELECT {ROW_SELECT}, {d.tags('config')}, {d.tournament('config')} FROM debates WHERE {where.clause} "
            f"ORDER BY {LIST_ORDERS[order]} LIMIT ? OFFSET ?",
            (*where.params, limit, offset),
        )
        return [tagged_row(r) for r in rows], int(total[0]) if total else 0

    async def models_and_tags(self) -> tuple[list[str], list[str]]:
        """Every participant model ("provider:model") and every topic tag of the stored debates (the
        dashboard's filters offer them). Scanning every debate's JSON takes a while with thousands of
        them, so the answer is kept until a debate is created or deleted (in any process)."""
        marker = tuple(await self.fetchone(_OPTIONS_MARKER) or ())
        if self._options is not None and self._options[0] == marker:
            return self._options[1]
        models = await self.fetchall(self.dialect.all_models)
        tags = await self.fetchall(self.dialect.all_tags)
        options = [str(r[0]) for r in models if r[0]], [str(r[0]) for r in tags if r[0]]
        self._options = (marker, options)
        return options

    async def series_ids(self, series: str) -> list[str]:
        """The debates of a series, oldest first: its first debate (whose id names the series) and every
        debate whose config names it (`DebateConfig.series`; uses the `debates_series` index)."""
        rows = await self.fetchall(
            f"SELECT id FROM debates WHERE id = ? OR {self.dialect.text('config', 'series')} = ? "
            "ORDER BY created_at, rowid", (series, series))
        return [r[0] for r in rows]

    async def ids_with_status(self, statuses: list[str]) -> list[str]:
        rows = await self.fetchall(
            f"SELECT id FROM debates WHERE status IN ({marks(statuses)}) ORDER BY created_at", statuses)
        return [r[0] for r in rows]

    async def get_row(self, debate_id: str) -> DebateRow | None:
        row = await self.fetchone(f"SELECT {ROW_SELECT} FROM debates WHERE id = ?", (debate_id,))
        return debate_row(row) if row else None

    async def participants(self, debate_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """debate id -> its participants as listed (for the debates of `debate_ids` that exist)."""
        if not debate_ids:
            return {}
        rows = await self.fetchall(f"SELECT id, participants FROM debates WHERE id IN ({marks(debate_ids)})",
                                   debate_ids)
        return {str(i): list(json.loads(c or "[]")) for i, c in rows}

    async def committed_spend(self, created_by: str, since: datetime, terminal: Iterable[str]) -> float:
        """What debates `created_by` created since `since` have spent, or may still spend: a debate that
        has ended counts what it spent; one that has not, its hard limit (or its spend, if higher). Debates
        the person created with an API token (`ada (token …f3a9)`) are theirs too."""
        statuses = list(terminal)
        d = self.dialect
        row = await self.fetchone(
            f"SELECT coalesce(sum(CASE WHEN status IN ({marks(statuses)}) THEN cost_usd ELSE {d.greatest}(cost_usd, "
            f"coalesce({d.number('config', 'budget', 'cost_limit')}, cost_usd)) END), 0) FROM debates "
            "WHERE (created_by = ? OR created_by LIKE ? ESCAPE '\\') AND created_at >= ?",
            (*statuses, created_by, token_actor_pattern(created_by), since.isoformat()),
        )
        return float(row[0]) if row else 0.0
