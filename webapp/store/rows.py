"""The listing projection's row (`DebateRow`) and the column lists both stores read and write it with."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from webapp.models import DebateEvent, EventKind, utcnow
from webapp.store.sql import like_escaped


class StaleWrite(RuntimeError):
    """Another process appended to this debate's log since this one last read it."""

    @classmethod
    def at(cls, debate_id: str, seq: int, expected_seq: int) -> StaleWrite:
        """The refusal of an append that expected `expected_seq` where the log's next number is `seq`."""
        return cls(f"debate {debate_id} was changed by another process (its log is at event {seq - 1}, "
                   f"this process expected {expected_seq - 1}); reload it")


class DebateRow(BaseModel):
    """One debate as the dashboard lists it."""

    id: str
    topic: str
    format: str
    status: str
    phase: str | None = None
    round: int = 0
    total_rounds: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    interrupted: bool = False
    turn_count: int = 0
    participants: list[dict[str, Any]] = []
    created_by: str = ""
    created_at: datetime
    updated_at: datetime
    tags: list[str] = []  # the config's topic tags: filled by `list_debates` (not a column of its own)
    tournament: str | None = None  # the config's tournament id, likewise (the dashboard groups by it)


ROW_COLUMNS = tuple(name for name in DebateRow.model_fields if name not in ("tags", "tournament"))
ROW_SELECT = ", ".join(ROW_COLUMNS)
SUMMARY_COLUMNS = (
    "status", "phase", "round", "total_rounds", "cost_usd", "turn_count", "unpriced", "interrupted"
)
# The orders a listing can be sorted in (SQL, from this fixed table only). "status": those that need a
# person first (failed, waiting), then running, paused, created, stopped, completed; newest first within.
_STATUS_RANK = ("CASE status WHEN 'error' THEN 0 WHEN 'awaiting_acknowledgement' THEN 1 "
                "WHEN 'awaiting_clarification' THEN 1 WHEN 'awaiting_turn' THEN 1 "
                "WHEN 'paused' THEN 3 WHEN 'idle' THEN 4 "
                "WHEN 'stopped' THEN 5 WHEN 'completed' THEN 6 ELSE 2 END")
LIST_ORDERS: dict[str, str] = {
    "newest": "created_at DESC, rowid DESC",
    "oldest": "created_at ASC, rowid ASC",
    "cost": "cost_usd DESC, created_at DESC, rowid DESC",
    "status": f"{_STATUS_RANK}, created_at DESC, rowid DESC",
}
INSERT_EVENT = "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)"
INSERT_DEBATE = ("INSERT INTO debates (id, topic, topic_search, format, config, status, total_rounds,"
                 " participants, created_at, updated_at, last_seq, created_by) VALUES (?,?,?,?,?,?,?,?,?,?,1,?)")


@dataclass(frozen=True)
class NewDebate:
    """What `create_debate` writes (the same on both stores): the listing row (`INSERT_DEBATE`'s values)
    and the CREATED event (`INSERT_EVENT`'s values, and as returned)."""

    event: DebateEvent
    debate_values: tuple[Any, ...]
    event_values: tuple[Any, ...]


def new_debate(debate_id: str, topic: str, format_id: str, config: dict[str, Any], summary: dict[str, Any],
               actor: str | None) -> NewDebate:
    """A debate about to be created; `actor` (who created it) is kept in the event and in the listing
    (per-person spending)."""
    now = utcnow()
    data: dict[str, Any] = {"config": config}
    if actor:
        data["actor"] = actor
    return NewDebate(
        event=DebateEvent(debate_id=debate_id, seq=1, kind=EventKind.CREATED, at=now, data=data),
        debate_values=(debate_id, topic, topic.lower(), format_id, json.dumps(config),
                       str(summary.get("status", "idle")), int(summary.get("total_rounds", 0)),
                       json.dumps(summary.get("participants", [])), now.isoformat(), now.isoformat(), actor or ""),
        event_values=(debate_id, 1, EventKind.CREATED.value, now.isoformat(), json.dumps(data), "created"),
    )


def listing(summary: dict[str, Any] | None) -> dict[str, Any]:
    """The listing columns (of `SUMMARY_COLUMNS`) an append sets."""
    return {column: summary[column] for column in SUMMARY_COLUMNS if summary and column in summary}


def debate_row(r: tuple[Any, ...]) -> DebateRow:
    """A listing row from the `ROW_SELECT` columns of `debates` (either store's)."""
    values = dict(zip(ROW_COLUMNS, r, strict=True))
    values["participants"] = json.loads(values["participants"])
    return DebateRow.model_validate(values)


def tagged_row(r: tuple[Any, ...]) -> DebateRow:
    """A listing row from the `ROW_SELECT` columns followed by the config's tags (JSON text, or NULL)
    and its tournament's id (or NULL)."""
    row = debate_row(r[:-2])
    try:
        tags = json.loads(r[-2]) if r[-2] else []
    except ValueError:
        tags = []
    if isinstance(tags, list):
        row.tags = [str(t) for t in tags if t is not None]
    row.tournament = str(r[-1]) if r[-1] else None
    return row


def token_actor_pattern(person: str) -> str:
    """A `LIKE … ESCAPE '\\'` pattern for what `person` does with an API token (`ada (token …f3a9)`,
    `webapp.access.roles.Principal.actor`): their debates count towards their daily limit too."""
    return f"{like_escaped(person)} (token %"
