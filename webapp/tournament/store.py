"""Tournaments in the store: their own table (the plan and where it stands) and, read from the debates
table, the debates played for their slots."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from webapp.models import utcnow
from webapp.store import DebateRow
from webapp.store.protocol import EventStore
from webapp.store.repository import ROW_SELECT, debate_row
from webapp.tournament.plan import Tournament

TournamentStatus = Literal["planned", "running", "stopped", "completed"]


class TournamentRow(BaseModel):
    """One tournament as stored: its plan, its status and why it stopped (if it did)."""

    tournament: Tournament
    status: TournamentStatus = "planned"
    stop_reason: str | None = None
    updated_at: datetime
    owner: str | None = None
    lease_until: datetime | None = None

    @property
    def id(self) -> str:
        return self.tournament.id

    def claimed(self) -> bool:
        """Some process holds the claim to play it (this one included) and has not let it lapse."""
        return bool(self.owner and self.lease_until and self.lease_until > utcnow() and not owner_gone(self.owner))


class SlotDebate(BaseModel):
    """The debate played for one slot, with its winner's participant id once it has a verdict."""

    slot: str
    row: DebateRow
    winner: str | None = None
    has_verdict: bool = False


SELECT = "spec, status, stop_reason, updated_at, owner, lease_until"


class _Sql:
    """The queries whose text differs between the stores (reading the config and verdict JSON)."""

    def __init__(self, text: Any, number: Any, boolean: Any, greatest: str, newest: str) -> None:
        slot, tournament = text("config", "tournament_slot"), text("config", "tournament")
        self.debates = f"SELECT {slot}, {ROW_SELECT} FROM debates WHERE {tournament} = ?"
        # The last verdict of each debate (a debate has at most one final verdict event).
        self.verdicts = (f"SELECT debate_id, {text('data', 'verdict', 'winner')}, "
                         f"{boolean(('data', 'verdict', 'available'))} FROM events "
                         "WHERE kind = 'verdict' AND debate_id IN ({marks}) ORDER BY seq")
        limit = number("config", "budget", "cost_limit")
        self.committed = (f"SELECT coalesce(sum(CASE WHEN status IN ({{marks}}) THEN cost_usd "
                          f"ELSE {greatest}(cost_usd, coalesce({limit}, cost_usd)) END), 0) "
                          f"FROM debates WHERE {tournament} = ?")
        self.newest = newest


_SQL = {
    "sqlite": _Sql(
        text=lambda column, *path: f"json_extract({column}, '$.{'.'.join(path)}')",
        number=lambda column, *path: f"json_extract({column}, '$.{'.'.join(path)}')",
        boolean=lambda p: f"coalesce(json_extract({p[0]}, '$.{'.'.join(p[1:])}'), 1)",
        greatest="max", newest="created_at DESC, rowid DESC"),
    # `->>` on the config matches the `debates_tournament_slot` expression index; PostgreSQL's tournaments
    # table has no insertion number, so ties of the creation time (to the microsecond) go by id.
    "postgresql": _Sql(
        text=lambda column, *path: (f"({column}::jsonb ->> '{path[0]}')" if len(path) == 1
                                    else f"({column}::jsonb #>> '{{{','.join(path)}}}')"),
        number=lambda column, *path: f"({column}::jsonb #>> '{{{','.join(path)}}}')::double precision",
        boolean=lambda p: (f"coalesce(({p[0]}::jsonb #> '{{{','.join(p[1:])}}}') NOT IN "
                           "('false'::jsonb, '0'::jsonb), true)"),
        greatest="greatest", newest="created_at DESC, id DESC"),
}
LEASE_S = 30.0  # how long a claim holds without being renewed (a player renews it every third of this)


WORKER_MARK = "worker"  # the last part of the owner name of a tournament played by a debate worker


def owner_name(worker: bool = False) -> str:
    """Who plays a tournament: this host and process, and a token (two players in one process differ);
    marked when a debate worker plays it, so that only workers take over from a worker that died."""
    name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    return f"{name}:{WORKER_MARK}" if worker else name


def played_by_worker(owner: str) -> bool:
    """Whether `owner` (see `owner_name`) is a debate worker."""
    return owner.rsplit(":", 1)[-1] == WORKER_MARK


def owner_gone(owner: str) -> bool:
    """True when `owner` was a process of this host that no longer exists (killed, say): its claim
    need not be waited out. A process elsewhere cannot be asked: its lease must run out."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, as another user's process
        return False
    return False


class TournamentBusy(RuntimeError):
    """Another process is playing this tournament."""

    def __init__(self, tournament_id: str, owner: str) -> None:
        host, _, rest = owner.partition(":")
        super().__init__(f"tournament {tournament_id} is being played by process {rest.partition(':')[0]} on "
                         f"{host}; stop it there, or wait for its claim to lapse ({LEASE_S:g} s after it stops)")
        self.owner = owner


class TournamentStore:
    """Reads and writes tournaments on the debates' store."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.sql = _SQL[store.dialect]

    async def create(self, tournament: Tournament) -> Tournament:
        """Store a new tournament (given a fresh id); returns it as stored."""
        tournament = tournament.model_copy(update={"id": uuid.uuid4().hex[:12], "created_at": utcnow()})
        now = utcnow().isoformat()
        async with self.store.transaction() as db:
            await db.execute(
                "INSERT INTO tournaments (id, name, spec, status, created_by, created_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?)",
                (tournament.id, tournament.name, tournament.model_dump_json(), "planned", tournament.created_by,
                 tournament.created_at.isoformat(), now),
            )
        return tournament

    async def get(self, tournament_id: str) -> TournamentRow | None:
        row = await self.store.fetchone(
            f"SELECT {SELECT} FROM tournaments WHERE id = ?", (tournament_id,))
        return self._row(row) if row else None

    async def all(self, limit: int = 100) -> list[TournamentRow]:
        rows = await self.store.fetchall(
            f"SELECT {SELECT} FROM tournaments ORDER BY {self.sql.newest} LIMIT ?", (limit,))
        return [self._row(r) for r in rows]

    async def with_status(self, status: TournamentStatus) -> list[str]:
        rows = await self.store.fetchall("SELECT id FROM tournaments WHERE status = ? ORDER BY created_at", (status,))
        return [r[0] for r in rows]

    async def set_status(self, tournament_id: str, status: TournamentStatus, reason: str | None = None) -> None:
        async with self.store.transaction() as db:
            await db.execute("UPDATE tournaments SET status = ?, stop_reason = ?, updated_at = ? WHERE id = ?",
                             (status, reason, utcnow().isoformat(), tournament_id))

    async def set_budget(self, tournament_id: str, budget_usd: float | None) -> Tournament:
        """Change the total budget (to continue a tournament that ran out)."""
        row = await self.get(tournament_id)
        if row is None:
            raise KeyError(tournament_id)
        tournament = row.tournament.model_copy(update={"budget_usd": budget_usd})
        tournament = Tournament.model_validate(tournament.model_dump())
        async with self.store.transaction() as db:
            await db.execute("UPDATE tournaments SET spec = ?, updated_at = ? WHERE id = ?",
                             (tournament.model_dump_json(), utcnow().isoformat(), tournament_id))
        return tournament

    async def debates(self, tournament_id: str) -> dict[str, SlotDebate]:
        """Slot key → the debate played for it (uses the unique slot index)."""
        rows = await self.store.fetchall(self.sql.debates, (tournament_id,))
        out: dict[str, SlotDebate] = {}
        ids: list[str] = []
        for r in rows:
            row = debate_row(r[1:])
            out[str(r[0])] = SlotDebate(slot=str(r[0]), row=row)
            ids.append(row.id)
        if ids:
            verdicts = await self.store.fetchall(self.sql.verdicts.replace("{marks}", ",".join("?" * len(ids))), ids)
            by_id = {debate.row.id: debate for debate in out.values()}
            for debate_id, winner, available in verdicts:
                debate = by_id[debate_id]
                debate.winner = winner
                debate.has_verdict = bool(available)
        return out

    async def committed(self, tournament_id: str, terminal: Iterable[str]) -> float:
        """What the tournament's debates have spent, or may still spend: an ended debate counts what it
        spent; one still going, its own hard limit (its share of the budget), or its spend if higher."""
        statuses = list(terminal)
        marks = ",".join("?" * len(statuses))
        row = await self.store.fetchone(self.sql.committed.replace("{marks}", marks or "NULL"),
                                        (*statuses, tournament_id))
        return float(row[0]) if row else 0.0

    async def claim(self, tournament_id: str, owner: str, lease: float = LEASE_S) -> None:
        """Become the one process playing the tournament for `lease` seconds (renewed by `renew`);
        raises `TournamentBusy` while another (alive, or within its lease) is."""
        now = utcnow()
        found = await self.store.fetchone("SELECT owner, lease_until FROM tournaments WHERE id = ?", (tournament_id,))
        if found is None:
            raise KeyError(tournament_id)
        holder, until = found
        if (holder and holder != owner and until and datetime.fromisoformat(until) > now
                and not owner_gone(holder)):
            raise TournamentBusy(tournament_id, holder)
        # Compare and swap: taken only if nobody claimed it since it was read (works on either store).
        async with self.store.transaction() as db:
            done = await db.execute(
                "UPDATE tournaments SET owner = ?, lease_until = ? WHERE id = ? AND coalesce(owner, '') = ?",
                (owner, (now + timedelta(seconds=lease)).isoformat(), tournament_id, holder or ""))
        if done.rowcount == 0:
            raise TournamentBusy(tournament_id, holder or "another process")

    async def renew(self, tournament_id: str, owner: str, lease: float = LEASE_S) -> None:
        until = (utcnow() + timedelta(seconds=lease)).isoformat()
        async with self.store.transaction() as db:
            await db.execute("UPDATE tournaments SET lease_until = ? WHERE id = ? AND owner = ?",
                             (until, tournament_id, owner))

    async def release(self, tournament_id: str, owner: str) -> None:
        async with self.store.transaction() as db:
            await db.execute("UPDATE tournaments SET owner = NULL, lease_until = NULL WHERE id = ? AND owner = ?",
                             (tournament_id, owner))

    # --- tournaments played by debate workers (ROSTRUM_WORKERS=external) ---------------------------

    async def request_play(self, tournament_id: str) -> bool:
        """Ask the debate workers to play (or continue) a tournament: its status becomes `running`, which
        is the durable request every worker reads (see `for_workers`). False when it already was."""
        async with self.store.transaction() as db:
            done = await db.execute(
                "UPDATE tournaments SET status = 'running', stop_reason = NULL, updated_at = ? "
                "WHERE id = ? AND status <> 'running'", (utcnow().isoformat(), tournament_id))
        if done.rowcount == 0 and await self.get(tournament_id) is None:
            raise KeyError(tournament_id)
        return done.rowcount > 0

    async def request_stop(self, tournament_id: str, reason: str) -> bool:
        """Stop a tournament that workers play: no further debate starts (the worker playing it reads
        the status); those running finish on their workers. False when it was not running."""
        async with self.store.transaction() as db:
            done = await db.execute(
                "UPDATE tournaments SET status = 'stopped', stop_reason = ?, updated_at = ? "
                "WHERE id = ? AND status = 'running'", (reason, utcnow().isoformat(), tournament_id))
        return done.rowcount > 0

    async def for_workers(self) -> list[str]:
        """Running tournaments a debate worker may take: nobody plays them (asked for by a web process,
        or given up by a process that stopped cleanly), or the worker playing them died or stopped
        renewing its claim. One claimed by another kind of process (the CLI) is left to it."""
        rows = await self.store.fetchall(
            "SELECT id, owner, lease_until FROM tournaments WHERE status = 'running' ORDER BY created_at")
        now = utcnow()
        return [str(r[0]) for r in rows
                if not r[1] or (played_by_worker(str(r[1])) and (not r[2] or datetime.fromisoformat(r[2]) <= now
                                                                 or owner_gone(str(r[1]))))]

    @staticmethod
    def _row(r: tuple[Any, ...]) -> TournamentRow:
        return TournamentRow(tournament=Tournament.model_validate(json.loads(r[0])), status=r[1], stop_reason=r[2],
                             updated_at=datetime.fromisoformat(r[3]), owner=r[4],
                             lease_until=datetime.fromisoformat(r[5]) if r[5] else None)
