"""The stored verdicts as the leaderboard, the head-to-head records and judge health read them, on
either store.

`verdict_digests` (migration 010_verdict_digests) holds a digest of each debate's last verdict, kept by
a trigger; `results` joins it to the listing rows in ONE query. Judge health reads the verdict events
themselves (through the `events_verdicts` index) and a marker that moves whenever they change.
"""

from __future__ import annotations

from typing import NamedTuple

from webapp.models import EventKind
from webapp.store.sql import SqlRunner

COMPLETED = "completed"  # the status of a debate that ran to its end (`webapp.engine.machine.State`)

VERDICTS_SQL = (
    "SELECT e.debate_id, e.seq, e.data, d.participants FROM events e JOIN debates d ON d.id = e.debate_id "
    f"WHERE e.kind = '{EventKind.VERDICT.value}'"
)
# Moves when a verdict is stored (a later time) or a debate with one is deleted (fewer verdicts).
MARKER_SQL = (f"SELECT count(*), coalesce(max(rowid), 0), coalesce(max(at), '') FROM events "
              f"WHERE kind = '{EventKind.VERDICT.value}'")
# Moves when a person gives or changes a verdict, or one goes with its debate.
PEOPLE_MARKER_SQL = "SELECT count(*), coalesce(max(at), '') FROM human_verdicts"


class ResultRow(NamedTuple):
    """A completed debate with its last verdict's digest (JSON text); the JSON columns as stored."""

    debate_id: str
    topic: str
    created_at: str
    format: str
    participants: str | None
    cost_usd: float | None
    tags: str | None  # JSON text of a list, or NULL
    series: str | None
    evaluation: str | None
    digest: str


class VerdictEvent(NamedTuple):
    """One verdict event, with its debate's participants (JSON text)."""

    debate_id: str
    seq: int
    data: str
    participants: str | None


class VerdictTable:
    """The stored verdicts of one store (`EventStore.verdicts`)."""

    def __init__(self, db: SqlRunner) -> None:
        self.db = db
        d = db.dialect
        self._results = (
            f"SELECT d.id, d.topic, d.created_at, d.format, d.participants, d.cost_usd, {d.tags('d.config')}, "
            f"{d.text('d.config', 'series')}, {d.text('d.config', 'evaluation')}, v.digest "
            f"FROM verdict_digests v JOIN debates d ON d.id = v.debate_id WHERE d.status = '{COMPLETED}'")

    async def results(self) -> list[ResultRow]:
        """Each completed debate with its last verdict's digest, in no particular order."""
        return [ResultRow(*r) for r in await self.db.fetchall(self._results)]

    async def rebuild_digests(self) -> int:
        """Make `verdict_digests` again from the stored verdict events; returns how many debates it holds."""
        async with self.db.transaction() as tx:
            await tx.execute("DELETE FROM verdict_digests")
            await tx.execute(self.db.dialect.digest_backfill)
        row = await self.db.fetchone("SELECT count(*) FROM verdict_digests")
        return int(row[0]) if row else 0

    async def events(self) -> list[VerdictEvent]:
        """Every verdict event of every debate (a debate judged again has several)."""
        return [VerdictEvent(*r) for r in await self.db.fetchall(VERDICTS_SQL)]

    async def marker(self) -> tuple[object, ...]:
        """A value that changes whenever a verdict (a judge's or a person's) is stored, changed or deleted."""
        judged = await self.db.fetchone(MARKER_SQL) or ()
        people = await self.db.fetchone(PEOPLE_MARKER_SQL) or ()
        return (*judged, *people)
