"""What one debate's channel holds between two flushes, and what the browsers were told of its turns.

The engine (or the bus) hands a `DebateChannel` each message synchronously; the channel puts it here
(`add`), which must stay cheap. Consecutive chunks of a turn grow one entry with the character offset
where it starts, so a flush carries one `ChunkDelta` per turn. `take` turns what was collected into the
batch the pages are handed and the compact wire items (`wire.py`) sent once to the debate's room;
`resync_items` is what a (re)connecting page is sent instead. Nothing here awaits or touches a socket:
the channel does that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webapp.engine.api import RetryNote, TurnPayload
from webapp.engine.public import (
    DebateSession,
    LiveChunk,
    LiveEvent,
    LiveMessage,
    LiveStatus,
    LiveTurn,
    LiveTurnAborted,
    LiveTurnStarted,
)
from webapp.models import Turn
from webapp.ui.live import wire

MAX_CUT_TURNS = 100  # cut attempts remembered per watched debate, for pages opened later


@dataclass(frozen=True)
class ChunkDelta:
    """Coalesced streamed text of one attempt at one turn, starting at character `offset`."""

    key: str
    speaker: str
    attempt: int | None
    offset: int
    text: str


@dataclass(frozen=True)
class Aborted:
    """An attempt was cut off (`attempt` is None when the channel joined after it started)."""

    key: str
    attempt: int | None
    reason: str


@dataclass(slots=True)
class _Growing:
    """A `ChunkDelta` still collecting chunks until the next flush."""

    key: str
    speaker: str
    attempt: int | None
    offset: int
    parts: list[str]

    def delta(self) -> ChunkDelta:
        return ChunkDelta(self.key, self.speaker, self.attempt, self.offset, "".join(self.parts))


@dataclass(frozen=True)
class _Committed:
    """A turn was committed; `streamed` is the text its last attempt streamed here (None: none did)."""

    turn: Turn
    streamed: str | None


# `LiveStatus`: the session changed in a way the log does not show yet (storage unavailable or back):
# a page re-reads the session's read model.
FlushItem = ChunkDelta | LiveTurnStarted | Aborted | LiveEvent | LiveStatus
Batch = list[FlushItem]
Items = list[list[Any]]  # wire items (`wire.py`)


class FlushBuffer:
    """The messages of one debate since the last flush, and per turn what was streamed and announced."""

    def __init__(self, session: DebateSession, live_turns: Mapping[str, LiveTurn]) -> None:
        self.session = session
        self.pending: list[FlushItem | _Growing | _Committed] = []
        self._open_chunk: dict[str, _Growing] = {}  # key -> its buffered chunk entry still growing
        self._lengths: dict[str, int] = {}  # key -> characters streamed so far in the current attempt
        self._attempts: dict[str, int] = {}
        self._streamed: dict[str, list[str]] = {}  # key -> text of the current attempt, to compare at commit
        # key -> who started speaking where (a cut attempt's turn is named by it)
        self._starts: dict[str, LiveTurnStarted | LiveTurn] = {}
        # Attempts cut off (a pause, a stop, an error) with the text they had streamed, which is never
        # stored: a page opened later shows them as the pages watching then did (`wire.snapshot_turns`).
        self.cut_turns: dict[str, wire.CutTurn] = {}
        self._hidden: set[str] = set()  # keys of private turns (preparation): never sent to browsers
        self._kids: dict[str, int] = {}
        self._announced: set[str] = set()  # keys whose start (speaker, group, act) browsers were sent
        # The start of each turn this channel streamed and has not seen committed or cut. Neither the
        # session's live turns nor the bus's still hold a turn whose stream has ended while its commit is
        # on its way (being written, or not yet read from the log by this process), so a page joining
        # then learns of it only from here; without it, the commit (sent without the text this channel
        # streamed) left that page a finished turn with no text.
        self._started: dict[str, LiveTurnStarted | LiveTurn] = {}
        self._last_status: dict[str, Any] | None = None
        # Joining mid-turn (streamed here, or elsewhere as far as the bus has seen): offsets continue
        # from what exists.
        for key, live in live_turns.items():
            self._lengths[key] = len(live.text)
            self._attempts[key] = live.attempt
            self._streamed[key] = [live.text]
            self._starts[key] = live
            self._announced.add(key)  # every page built from now on has it in its snapshot
            self._started[key] = live
            if not wire.phase_visible(session.state, live.phase):
                self._hidden.add(key)

    def kid(self, key: str) -> int:
        """A small id for a turn key, so each streamed item names its turn in a few bytes."""
        kid = self._kids.get(key)
        if kid is None:
            kid = self._kids[key] = len(self._kids) + 1
        return kid

    # --- in: from the engine or the bus (synchronous, must be cheap) ------------------------------

    def add(self, message: LiveMessage) -> None:
        if isinstance(message, LiveChunk | LiveTurnStarted | LiveTurnAborted) and \
                message.key in self.session.state.turn_keys:
            # Stale: the finished turn supersedes its stream. A debate run by another process reaches
            # this channel on two paths, its stream over the bus and its commits from the log (read on a
            # bus signal, or by the periodic follow), and the log can win: the commit was read while the
            # runner's last chunks were still on their way. Taken, such a chunk restarted the turn's
            # offsets at 0 after its commit (pages ignore it; the API's event stream sent it on).
            return
        if isinstance(message, LiveChunk):
            offset = self._lengths.get(message.key, 0)
            self._lengths[message.key] = offset + len(message.text)
            self._streamed.setdefault(message.key, []).append(message.text)
            growing = self._open_chunk.get(message.key)
            if growing is not None:
                growing.parts.append(message.text)
            else:
                growing = _Growing(message.key, message.speaker, self._attempts.get(message.key), offset,
                                   [message.text])
                self._open_chunk[message.key] = growing
                self.pending.append(growing)
        elif isinstance(message, LiveTurnStarted):
            self._started[message.key] = message
            self._lengths[message.key] = 0
            self._attempts[message.key] = message.attempt
            self._streamed[message.key] = []
            self._starts[message.key] = message
            self._open_chunk.pop(message.key, None)
            self.pending.append(message)
        elif isinstance(message, LiveTurnAborted):
            self._started.pop(message.key, None)
            self._lengths.pop(message.key, None)
            text = "".join(self._streamed.pop(message.key, []))
            self._open_chunk.pop(message.key, None)
            attempt = self._attempts.pop(message.key, None)
            self._remember_cut(message.key, text, message.reason, attempt)
            self.pending.append(Aborted(message.key, attempt, message.reason))
        elif isinstance(message, LiveEvent):
            payload = message.event.payload
            if isinstance(payload, TurnPayload):  # the finished turn supersedes its stream
                key = payload.turn.key
                self._started.pop(key, None)
                self._open_chunk.pop(key, None)
                self._lengths.pop(key, None)
                self._attempts.pop(key, None)
                parts = self._streamed.pop(key, None)
                self.pending.append(_Committed(payload.turn, None if parts is None else "".join(parts)))
            self.pending.append(message)
        elif isinstance(message, LiveStatus):
            self.pending.append(message)

    def _remember_cut(self, key: str, text: str, reason: str, attempt: int | None) -> None:
        """Keep a cut attempt's text for pages opened later (a few per debate: pauses, stops, errors)."""
        started = self._starts.get(key)
        if not text or started is None or (len(self.cut_turns) >= MAX_CUT_TURNS and key not in self.cut_turns):
            return
        cut = self.cut_turns.setdefault(key, wire.CutTurn(started))
        cut.cuts.append({"text": text, "reason": reason, "attempt": attempt})

    # --- out: one flush, or a resync -----------------------------------------------------------

    def take(self) -> tuple[Batch, Items]:
        """Everything collected since the last call: the batch for the pages and the room's wire items."""
        raw, self.pending = self.pending, []
        self._open_chunk.clear()
        batch: Batch = []
        items: Items = []
        state = self.session.state
        for item in raw:
            if isinstance(item, _Growing):
                delta = item.delta()
                batch.append(delta)
                if delta.key not in self._hidden:
                    items.append([wire.TEXT, self.kid(delta.key), delta.offset, delta.text])
            elif isinstance(item, _Committed):
                if item.turn.visible:
                    info = wire.committed_info(state, item.turn, item.streamed)
                    if item.turn.key in self._announced:  # browsers know who spoke where: just the end
                        info = {k: v for k, v in info.items() if k in ("key", "meta", "notes", "text", "n")}
                    items.append([wire.COMMITTED, self.kid(item.turn.key), info])
                self._hidden.discard(item.turn.key)
                self._announced.discard(item.turn.key)
            else:
                batch.append(item)
                items.extend(self._items(item))
        if batch:
            status = wire.status(self.session)
            last = self._last_status or {}
            changed = {key: value for key, value in status.items() if last.get(key, ...) != value}
            if changed:  # only what changed: the browser merges it into what it has
                self._last_status = status
                items.append([wire.STATUS, changed])
        return batch, items

    def _items(self, item: FlushItem) -> Items:
        state = self.session.state
        if isinstance(item, LiveTurnStarted):
            info = wire.started_info(state, item)
            if info is None:
                self._hidden.add(item.key)
                return []
            self._announced.add(item.key)
            return [[wire.STARTED, self.kid(item.key), item.attempt, info]]
        if isinstance(item, Aborted):
            if item.key in self._hidden:
                return []
            return [[wire.CUT, self.kid(item.key), item.reason]]
        if isinstance(item, LiveEvent) and isinstance(item.event.payload, RetryNote):
            note = item.event.payload
            if note.turn in self._kids and note.turn not in self._hidden:
                return [[wire.NOTE, self._kids[note.turn], wire.retry_text(note)]]
        return []

    def resync_items(self, live_turns: Mapping[str, LiveTurn], since_turns: int) -> Items:
        """What a (re)connecting page needs: turns committed after its snapshot (`since_turns` finished
        turns), every visible turn in flight (`live_turns`) from offset 0, and the status."""
        state = self.session.state
        items: Items = []
        for n, turn in enumerate(state.turns[since_turns:], start=since_turns):
            if turn.visible:
                items.append([wire.COMMITTED, self.kid(turn.key), wire.committed_info(state, turn, None, n)])
        for key, live in live_turns.items():
            info = wire.started_info(state, live)
            if info is None or key in state.turn_keys:
                continue
            items.append([wire.STARTED, self.kid(key), live.attempt, info])
            items.append([wire.TEXT, self.kid(key), 0, live.text])
        for key, start in self._started.items():  # streamed, its commit on its way: the text streamed here
            info = wire.started_info(state, start)
            if info is None or key in state.turn_keys or key in live_turns:
                continue
            items.append([wire.STARTED, self.kid(key), start.attempt, info])
            items.append([wire.TEXT, self.kid(key), 0, "".join(self._streamed.get(key, []))])
        items.append([wire.STATUS, wire.status(self.session)])
        return items
