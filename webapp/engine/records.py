"""The fold's derived records: each transition the debate made, and each thing a person did.

`DebateState` appends a `TransitionRecord` per TRANSITION event and an `ActionRecord` per command a
person sent or action they took (`state.transitions`, `state.actions`); pages, the terminal, the
exports and the webhooks read their fields. They are frozen: the fold replaces, never edits, and a
fork shares them with the state it was forked from. `to_data()` is the JSON edge (exports, the wire),
the same objects the fold kept as dicts before it was typed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from webapp.engine.machine import Event, State
from webapp.engine.params import TransitionParams


@dataclass(frozen=True, slots=True)
class TransitionRecord:
    """One move of the machine as the log has it: `from_` → `to` on `event`, when, by whom (a person,
    `cli`, `share-link`, or the system), with the parameters it was sent with."""

    event: Event
    from_: State
    to: State
    at: datetime
    actor: str
    params: TransitionParams

    def to_data(self) -> dict[str, Any]:
        """As JSON: the keys the exports and the wire have always used (`from`, `to`, `event`, …)."""
        return {"from": self.from_.value, "to": self.to.value, "event": self.event.value,
                "at": self.at.isoformat(), "params": self.params.to_data(), "actor": self.actor}


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """Something a person did, by name: a command (`pause`, `stop`, `retry`, … the transition's event in
    lower case) or another action the log records (`share_link_created`, …). `params` is what it
    carried, as stored: the transition's parameters, or the action's free-form detail."""

    action: str
    actor: str
    at: datetime
    params: dict[str, Any]

    def to_data(self) -> dict[str, Any]:
        """As JSON (exports): `action`, `actor`, `at` (ISO 8601), `params`."""
        return {"action": self.action, "actor": self.actor, "at": self.at.isoformat(), "params": dict(self.params)}
