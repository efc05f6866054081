"""The `tournaments` table and the debates played for their slots, on either store.

The plan itself (`webapp.tournament.plan.Tournament`) is a layer above the store: here it is its JSON
text (`spec`), which `webapp.tournament.store` reads and writes. Claims (who plays a tournament, until
when) are compare-and-swap updates, so of two processes exactly one gets a tournament.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel

from webapp.store.rows import ROW_SELECT, DebateRow, debate_row
from webapp.store.sql import SqlRunner, marks

_COLUMNS = ("spec", "status", "stop_reason", "updated_at", "owner", "lease_until")
_SELECT = ", ".join(_COLUMNS)


class TournamentState(BaseModel):
    """Where a tournament stands, who plays it and until when."""

    status: str
    stop_reason: str | None = None
    updated_at: datetime
    owner: str | None = None
    lease_until: datetime | None = None


class TournamentRecord(TournamentState):
    """One row of `tournaments`: its state and the plan as JSON text."""

    spec: str


class TournamentClaim(BaseModel):
    """Who plays a tournament, and until when (both None when nobody does)."""

    id: str
    owner: str | None = None
    lease_until: datetime | None = None


class SlotRow(BaseModel):
    """A debate played for a slot, with its last verdict's winner and availability (if it has one)."""

    slot: str
    row: DebateRow
    winner: str | None = None
    has_verdict: bool = False


def _record(values: tuple[object, ...]) -> TournamentRecord:
    return TournamentRecord.model_validate(dict(zip(_COLUMNS, values, strict=True)))


class TournamentTable:
    """Tournament rows of one store (`EventStore.tournaments`)."""

    def __init__(self, db: SqlRunner) -> None:
        self.db = db
        d = db.dialect
        slot, tournament = d.text("config", "tournament_slot"), d.text("config", "tournament")
        self._slots = f"SELECT {slot}, {ROW_SELECT} FROM debates WHERE {tournament} = ?"
        # Every verdict of the debates, in order: the last one of each wins.
        self._verdicts = (f"SELECT debate_id, {d.text('data', 'verdict', 'winner')}, "
                          f"{d.flag('data', 'verdict', 'available')} FROM events "
                          "WHERE kind = 'verdict' AND debate_id IN ({marks}) ORDER BY seq")
        limit = d.number("config", "budget", "cost_limit")
        self._committed = (f"SELECT coalesce(sum(CASE WHEN status IN ({{marks}}) THEN cost_usd "
                           f"ELSE {d.greatest}(cost_usd, coalesce({limit}, cost_usd)) END), 0) "
                           f"FROM debates WHERE {tournament} = ?")

    async def insert(self, tournament_id: str, name: str, spec: str, created_by: str, created_at: datetime,
                     at: datetime) -> None:
        async with self.db.transaction() as tx:
            await tx.execute(
                "INSERT INTO tournaments (id, name, spec, status, created_by, created_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?)",
                (tournament_id, name, spec, "planned", created_by, created_at.isoformat(), at.isoformat()))

    async def get(self, tournament_id: str) -> TournamentRecord | None:
        row = await self.db.fetchone(f"SELECT {_SELECT} FROM tournaments WHERE id = ?", (tournament_id,))
        return _record(row) if row else None

    async def newest(self, limit: int) -> list[TournamentRecord]:
        rows = await self.db.fetchall(
            f"SELECT {_SELECT} FROM tournaments ORDER BY {self.db.dialect.tournaments_newest} LIMIT ?", (limit,))
        return [_record(r) for r in rows]

    async def ids_with_status(self, status: str) -> list[str]:
        rows = await self.db.fetchall("SELECT id FROM tournaments WHERE status = ? ORDER BY created_at", (status,))
        return [str(r[0]) for r in rows]

    async def set_status(self, tournament_id: str, status: str, reason: str | None, at: datetime) -> None:
        async with self.db.transaction() as tx:
            await tx.execute("UPDATE tournaments SET status = ?, stop_reason = ?, updated_at = ? WHERE id = ?",
                             (status, reason, at.isoformat(), tournament_id))

    async def set_spec(self, tournament_id: str, spec: str, at: datetime) -> None:
        async with self.db.transaction() as tx:
            await tx.execute("UPDATE tournaments SET spec = ?, updated_at = ? WHERE id = ?",
                             (spec, at.isoformat(), tournament_id))

    async def slots(self, tournament_id: str) -> list[SlotRow]:
        """The debates played for the tournament's slots (uses the unique slot index), with their verdicts."""
        out = [SlotRow(slot=str(r[0]), row=debate_row(r[1:]))
               for r in await self.db.fetchall(self._slots, (tournament_id,))]
        if out:
            by_id = {slot.row.id: slot for slot in out}
            ids = list(by_id)
            for debate_id, winner, available in await self.db.fetchall(
                    self._verdicts.replace("{marks}", marks(ids)), ids):
                slot = by_id[debate_id]
                slot.winner = winner
                slot.has_verdict = bool(available)
        return out

    async def committed(self, tournament_id: str, terminal: Iterable[str]) -> float:
        """What the tournament's debates have spent, or may still spend: an ended debate (its status in
        `terminal`) counts what it spent; one still going, its own hard limit, or its spend if higher."""
        statuses = list(terminal)
        row = await self.db.fetchone(self._committed.replace("{marks}", marks(statuses)), (*statuses, tournament_id))
        return float(row[0]) if row else 0.0

    async def claim_of(self, tournament_id: str) -> TournamentClaim | None:
        row = await self.db.fetchone("SELECT id, owner, lease_until FROM tournaments WHERE id = ?", (tournament_id,))
        return TournamentClaim(id=row[0], owner=row[1], lease_until=row[2]) if row else None

    async def swap_claim(self, tournament_id: str, holder: str | None, owner: str, until: datetime) -> bool:
        """Claim the tournament for `owner` until `until` only if `holder` (None: nobody) still has it."""
        async with self.db.transaction() as tx:
            done = await tx.execute(
                "UPDATE tournaments SET owner = ?, lease_until = ? WHERE id = ? AND coalesce(owner, '') = ?",
                (owner, until.isoformat(), tournament_id, holder or ""))
        return done.rowcount > 0

    async def renew_claim(self, tournament_id: str, owner: str, until: datetime) -> None:
        async with self.db.transaction() as tx:
            await tx.execute("UPDATE tournaments SET lease_until = ? WHERE id = ? AND owner = ?",
                             (until.isoformat(), tournament_id, owner))

    async def release_claim(self, tournament_id: str, owner: str) -> None:
        async with self.db.transaction() as tx:
            await tx.execute("UPDATE tournaments SET owner = NULL, lease_until = NULL WHERE id = ? AND owner = ?",
                             (tournament_id, owner))

    async def start_running(self, tournament_id: str, at: datetime) -> bool:
        """Mark it `running` (clearing its stop reason); False when it already was (or does not exist)."""
        async with self.db.transaction() as tx:
            done = await tx.execute(
                "UPDATE tournaments SET status = 'running', stop_reason = NULL, updated_at = ? "
                "WHERE id = ? AND status <> 'running'", (at.isoformat(), tournament_id))
        return done.rowcount > 0

    async def stop_running(self, tournament_id: str, reason: str, at: datetime) -> bool:
        """Mark a running tournament `stopped`, with why; False when it was not running."""
        async with self.db.transaction() as tx:
            done = await tx.execute(
                "UPDATE tournaments SET status = 'stopped', stop_reason = ?, updated_at = ? "
                "WHERE id = ? AND status = 'running'", (reason, at.isoformat(), tournament_id))
        return done.rowcount > 0

    async def running_claims(self) -> list[TournamentClaim]:
        """The running tournaments, oldest first, with who plays each."""
        rows = await self.db.fetchall(
            "SELECT id, owner, lease_until FROM tournaments WHERE status = 'running' ORDER BY created_at")
        return [TournamentClaim(id=r[0], owner=r[1], lease_until=r[2]) for r in rows]
