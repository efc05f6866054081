"""What the Redis bus writes and reads: one compact JSON body per live message, and the turns in flight
on each side of it.

A body's `t` says what it is: `s` a turn started (its speaker, phase, round, act, attempt, queued), `c`
a chunk of its text at character offset `o`, `a` an attempt aborted, `e` an event committed (its `s`eq
and the turn it finished, if any), `x` a status change. `k` is the turn's key. The bus stamps each body
with its publisher's instance id `i` and counter `n` (`RedisBus._entry`).

Writing, `Outgoing` keeps the turns this process streams, so that after losing Redis it can announce each
afresh with its text so far (`snapshot`). Reading, `DebateWatch` is one debate's subscription in this
process: its handlers, the last counter applied per publisher (so a message read from the stream and
again from the channel counts once), and the turns in flight rebuilt from what it heard.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from webapp.bus.protocol import BusHandler, Changed, RemoteItem
from webapp.engine.events import TurnPayload
from webapp.engine.stream import (
    LiveChunk,
    LiveEvent,
    LiveMessage,
    LiveStatus,
    LiveTurn,
    LiveTurnAborted,
    LiveTurnStarted,
)

log = logging.getLogger("webapp.bus.redis_bus")  # the bus's one logger, whichever of its modules speaks

Body = dict[str, Any]


def started(turn: LiveTurn) -> Body:
    return {"t": "s", "k": turn.key, "sp": turn.speaker, "ph": turn.phase, "r": turn.round, "a": turn.act,
            "at": turn.attempt, "q": turn.queued}


class Outgoing:
    """The turns this process is streaming, per debate, as the bus encodes their messages."""

    def __init__(self) -> None:
        self.turns: dict[str, dict[str, LiveTurn]] = {}  # debate -> key -> the turn we are streaming

    def encode(self, message: LiveMessage) -> Body | None:
        """The wire form of `message` (None: nothing to send); also keeps track of the turns streamed."""
        turns = self.turns.setdefault(message.debate_id, {})
        if isinstance(message, LiveTurnStarted):
            turns[message.key] = LiveTurn(message.key, message.speaker, message.phase, message.round,
                                          message.act, message.attempt, queued=message.queued)
            return started(turns[message.key])
        if isinstance(message, LiveChunk):
            turn = turns.get(message.key)
            if turn is None:  # began before this bus existed: nobody could make sense of it
                return None
            offset = len(turn.text)
            turn.parts.append(message.text)
            return {"t": "c", "k": message.key, "sp": message.speaker, "x": message.text, "o": offset}
        if isinstance(message, LiveTurnAborted):
            turns.pop(message.key, None)
            if not turns:
                self.turns.pop(message.debate_id, None)
            return {"t": "a", "k": message.key, "why": message.reason}
        if isinstance(message, LiveEvent):
            payload = message.event.payload
            key = payload.turn.key if isinstance(payload, TurnPayload) else None
            if key is not None:
                turns.pop(key, None)
            if not turns:
                self.turns.pop(message.debate_id, None)
            return {"t": "e", "s": message.event.seq, "k": key}
        if isinstance(message, LiveStatus):
            return {"t": "x", "ch": message.change}
        return None

    def snapshot(self) -> list[tuple[str, Body]]:
        """Each turn this process streams, announced afresh with its text so far (bodies not yet stamped)."""
        out: list[tuple[str, Body]] = []
        for debate_id, turns in self.turns.items():
            for turn in turns.values():
                out.append((debate_id, started(turn)))
                if turn.text:
                    out.append((debate_id, {"t": "c", "k": turn.key, "sp": turn.speaker, "x": turn.text, "o": 0}))
        return out


@dataclass
class DebateWatch:
    """One debate's subscription in this process: its handlers and what its stream says is in flight."""

    handlers: list[BusHandler] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # publisher instance -> last counter applied
    live: dict[str, LiveTurn] = field(default_factory=dict)

    def hand(self, item: RemoteItem) -> None:
        for handler in list(self.handlers):
            try:
                handler(item)
            except Exception:  # one broken watcher must not starve the others
                log.exception("live bus handler failed")

    def rebuild(self, debate_id: str, own: str, messages: list[str]) -> list[RemoteItem]:
        """Fold a debate's whole stream (`messages`, oldest first) into the turns in flight; returns what
        to hand the watchers afresh: each turn started, its text so far, a `Changed` signal (read the
        log), then one `Changed` per named change this watch had not applied yet (comments, votes…).

        Those named changes are not in the log: a signal read here and again from the channel counts
        once (the counters), so unless it is handed on from here its watchers would never hear of it —
        a comment stored while a page subscribed reached nobody."""
        self.live.clear()
        changes: dict[str, Changed] = {}
        for data in messages:
            item = self.apply(debate_id, own, data, replaying=True)
            if isinstance(item, Changed) and item.change:
                changes[item.change] = item
        items: list[RemoteItem] = []
        for turn in self.live.values():
            items.append(LiveTurnStarted(debate_id, turn.key, turn.speaker, turn.phase, turn.round, turn.act,
                                         turn.attempt, turn.queued))
            if turn.text:
                items.append(LiveChunk(debate_id, turn.key, turn.speaker, turn.text))
        items.append(Changed(debate_id))
        items.extend(changes.values())
        return items

    def apply(self, debate_id: str, own: str, data: str, *, replaying: bool) -> RemoteItem | None:
        """Fold one message into this watch (`own`: this process's instance id, whose messages its local
        watchers heard from the session already); returns what to hand the watchers (None: nothing new)."""
        try:
            body = json.loads(data)
            instance, counter, kind = str(body["i"]), int(body["n"]), body["t"]
        except (ValueError, KeyError, TypeError):
            log.warning("live bus: ignoring a malformed message on debate %s", debate_id)
            return None
        if instance == own:  # our own runner: local watchers heard it from the session
            return None
        fresh = counter > self.seen.get(instance, 0)
        if replaying:  # the turns in flight are rebuilt from every message; only news is handed on
            self.seen[instance] = max(counter, self.seen.get(instance, 0))
        elif not fresh:
            return None  # already applied (read from the stream when subscribing)
        else:
            self.seen[instance] = counter
        key = str(body.get("k") or "")
        if kind == "s":
            turn = LiveTurn(key, str(body["sp"]), str(body["ph"]), int(body["r"]), str(body["a"]),
                            int(body["at"]), queued=bool(body.get("q")))
            self.live[key] = turn
            return LiveTurnStarted(debate_id, key, turn.speaker, turn.phase, turn.round, turn.act, turn.attempt,
                                   turn.queued)
        if kind == "c":
            live = self.live.get(key)
            if live is None or int(body["o"]) != len(live.text):  # a gap: wait for the next announcement
                return None
            live.parts.append(str(body["x"]))
            return LiveChunk(debate_id, key, str(body["sp"]), str(body["x"]))
        if kind == "a":
            self.live.pop(key, None)
            return LiveTurnAborted(debate_id, key, str(body.get("why") or ""))
        if kind == "e":
            if key:
                self.live.pop(key, None)
            return Changed(debate_id, seq=int(body["s"]), turn=key or None)
        if kind == "x":
            return Changed(debate_id, change=str(body.get("ch") or "")) if fresh else None
        return None
