"""Tournaments in the store: their own table (the plan and where it stands) and, read from the debates
table, the debates played for their slots. The SQL is the store's (`webapp.store.tournaments`, reached
as `EventStore.tournaments`); this module adds the plan's model, the claims' rules and the owner names."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Literal

from webapp.models import utcnow
from webapp.store.protocol import EventStore
from webapp.store.tournaments import SlotRow, TournamentRecord, TournamentState
from webapp.tournament.plan import Tournament

TournamentStatus = Literal["planned", "running", "stopped", "completed"]


class TournamentRow(TournamentState):
    """One tournament as stored: its plan, its status and why it stopped (if it did)."""

    tournament: Tournament
    status: TournamentStatus = "planned"

    @property
    def id(self) -> str:
        return self.tournament.id

    def claimed(self) -> bool:
        """Some process holds the claim to play it (this one included) and has not let it lapse."""
        return bool(self.owner and self.lease_until and self.lease_until > utcnow() and not owner_gone(self.owner))


SlotDebate = SlotRow  # the debate played for one slot, with its winner's participant id once it has a verdict


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
        self.table = store.tournaments

    async def create(self, tournament: Tournament) -> Tournament:
        """Store a new tournament (given a fresh id); returns it as stored."""
        tournament = tournament.model_copy(update={"id": uuid.uuid4().hex[:12], "created_at": utcnow()})
        await self.table.insert(tournament.id, tournament.name, tournament.model_dump_json(), tournament.created_by,
                                tournament.created_at, utcnow())
        return tournament

    async def get(self, tournament_id: str) -> TournamentRow | None:
        record = await self.table.get(tournament_id)
        return self._row(record) if record else None

    async def all(self, limit: int = 100) -> list[TournamentRow]:
        return [self._row(r) for r in await self.table.newest(limit)]

    async def with_status(self, status: TournamentStatus) -> list[str]:
        return await self.table.ids_with_status(status)

    async def set_status(self, tournament_id: str, status: TournamentStatus, reason: str | None = None) -> None:
        await self.table.set_status(tournament_id, status, reason, utcnow())

    async def set_budget(self, tournament_id: str, budget_usd: float | None) -> Tournament:
        """Change the total budget (to continue a tournament that ran out)."""
        row = await self.get(tournament_id)
        if row is None:
            raise KeyError(tournament_id)
        tournament = row.tournament.model_copy(update={"budget_usd": budget_usd})
        tournament = Tournament.model_validate(tournament.model_dump())
        await self.table.set_spec(tournament_id, tournament.model_dump_json(), utcnow())
        return tournament

    async def debates(self, tournament_id: str) -> dict[str, SlotDebate]:
        """Slot key → the debate played for it (uses the unique slot index)."""
        return {s.slot: s for s in await self.table.slots(tournament_id)}

    async def committed(self, tournament_id: str, terminal: Iterable[str]) -> float:
        """What the tournament's debates have spent, or may still spend: an ended debate counts what it
        spent; one still going, its own hard limit (its share of the budget), or its spend if higher."""
        return await self.table.committed(tournament_id, terminal)

    async def claim(self, tournament_id: str, owner: str, lease: float = LEASE_S) -> None:
        """Become the one process playing the tournament for `lease` seconds (renewed by `renew`);
        raises `TournamentBusy` while another (alive, or within its lease) is."""
        now = utcnow()
        found = await self.table.claim_of(tournament_id)
        if found is None:
            raise KeyError(tournament_id)
        holder, until = found.owner, found.lease_until
        if holder and holder != owner and until and until > now and not owner_gone(holder):
            raise TournamentBusy(tournament_id, holder)
        # Compare and swap: taken only if nobody claimed it since it was read.
        if not await self.table.swap_claim(tournament_id, holder, owner, now + timedelta(seconds=lease)):
            raise TournamentBusy(tournament_id, holder or "another process")

    async def renew(self, tournament_id: str, owner: str, lease: float = LEASE_S) -> None:
        await self.table.renew_claim(tournament_id, owner, utcnow() + timedelta(seconds=lease))

    async def release(self, tournament_id: str, owner: str) -> None:
        await self.table.release_claim(tournament_id, owner)

    # --- tournaments played by debate workers (ROSTRUM_WORKERS=external) ---------------------------

    async def request_play(self, tournament_id: str) -> bool:
        """Ask the debate workers to play (or continue) a tournament: its status becomes `running`, which
        is the durable request every worker reads (see `for_workers`). False when it already was."""
        started = await self.table.start_running(tournament_id, utcnow())
        if not started and await self.get(tournament_id) is None:
            raise KeyError(tournament_id)
        return started

    async def request_stop(self, tournament_id: str, reason: str) -> bool:
        """Stop a tournament that workers play: no further debate starts (the worker playing it reads
        the status); those running finish on their workers. False when it was not running."""
        return await self.table.stop_running(tournament_id, reason, utcnow())

    async def for_workers(self) -> list[str]:
        """Running tournaments a debate worker may take: nobody plays them (asked for by a web process,
        or given up by a process that stopped cleanly), or the worker playing them died or stopped
        renewing its claim. One claimed by another kind of process (the CLI) is left to it."""
        now = utcnow()
        return [c.id for c in await self.table.running_claims()
                if not c.owner or (played_by_worker(c.owner) and (not c.lease_until or c.lease_until <= now
                                                                  or owner_gone(c.owner)))]

    @staticmethod
    def _row(r: TournamentRecord) -> TournamentRow:
        return TournamentRow.model_validate(
            {"tournament": Tournament.model_validate(json.loads(r.spec)), **r.model_dump(exclude={"spec"})})
