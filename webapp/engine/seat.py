"""A human seat: the turn a person owes, its clock, its holder, a draft by one of the debate's models.

The wait is a state of the machine (`awaiting_turn`, entered with TURN_DUE carrying the `SeatTurn`), so
it survives restarts and worker takeovers; the person's turn enters as the SEND_TURN command and is
committed like a model's. A timer skips the turn when its time runs out.

A mixin of `DebateSession` (see runner.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from webapp.engine import budget as money
from webapp.engine.api import Command, CommandResult, SeatDraft
from webapp.engine.discipline import truncate, word_count
from webapp.engine.events import CallCostNote, TurnPayload
from webapp.engine.machine import Event, Position, State, TransitionNotAllowed
from webapp.engine.params import SeatTurn
from webapp.engine.prompts import effective_word_limit
from webapp.engine.schedule import TurnSlot
from webapp.engine.session_parts import SessionParts
from webapp.engine.state import SYSTEM_ACTOR
from webapp.models import JudgeSpec, Participant, Turn, utcnow
from webapp.providers.base import Completion, TextDelta
from webapp.store import StaleWrite


class Seats(SessionParts):
    """A debate's human seats (a mixin of `DebateSession`)."""

    def seat_holder(self, speaker: str | None = None) -> str | None:
        """Who holds a human seat (the one waited for by default): the user named in its config, else
        whoever sent its first turn ("whoever takes it first"); None while anyone may take it."""
        speaker = speaker or (self.state.seat.speaker if self.state.seat is not None else None)
        if not speaker:
            return None
        participant = self.state.config.participant(speaker)
        if participant.seat:
            return participant.seat
        for turn in self.state.turns:
            if turn.speaker == participant.id and turn.by:
                return turn.by
        return None

    def may_take_seat(self, actor: str | None) -> bool:
        """Whether `actor` may write the turn waited for now."""
        holder = self.seat_holder()
        return self.state.status is State.AWAITING_TURN and (holder is None or holder == actor)

    async def _send_turn(self, text: str, assisted_by: str | None, actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.SEND_TURN)
            seat = self._awaited_seat()
            holder = self.seat_holder()
            if holder is not None and holder != actor:
                name = self.state.config.participant(seat.speaker).name
                raise TransitionNotAllowed(self.state.status, Event.TURN_SENT,
                                           f"the seat of {name} is {holder}'s to fill")
            text, notes = text.strip(), []
            if not text:
                raise ValueError("text: the turn is empty")
            if seat.word_limit and word_count(text) > seat.word_limit:
                text, note = truncate(text, seat.word_limit)
                if note is not None:
                    notes.append(note)
            if assisted_by:
                notes.append(f"drafted with {assisted_by}, edited and sent by a person")
            await self._commit_seat_turn(seat, text, notes, by=actor, assisted_by=assisted_by)
            await self._transition(Event.TURN_SENT, actor=actor, position=self._seat_position(seat))
            self.ensure_running()
        return CommandResult(Command.SEND_TURN, Event.TURN_SENT, "Turn sent; the debate continues.")

    def _awaited_seat(self) -> SeatTurn:
        """The human seat's turn the debate waits for (refused when it waits for none)."""
        seat = self.state.seat
        if seat is None:
            raise TransitionNotAllowed(self.state.status, Event.TURN_SENT, "no turn is awaited")
        return seat

    @staticmethod
    def _seat_position(seat: SeatTurn) -> Position:
        return Position(phase=seat.phase, round=seat.round, speaker=seat.speaker, turn=seat.index)

    async def _commit_seat_turn(self, seat: SeatTurn, text: str, notes: list[str], *, by: str | None = None,
                                assisted_by: str | None = None, skipped: bool = False) -> None:
        participant = self.state.config.participant(seat.speaker)
        now = utcnow()
        turn = Turn(key=seat.key, phase=seat.phase, round=seat.round, speaker=seat.speaker, act=seat.act,
                    index=seat.index, text=text, cost_usd=0.0, model=participant.model, provider=participant.provider,
                    started_at=self.state.awaiting_since or now, finished_at=now, notes=notes, visible=seat.visible,
                    by=by if by and by != SYSTEM_ACTOR else None, assisted_by=assisted_by, skipped=skipped)
        await self._commit(TurnPayload(turn=turn, cost_source="person"), idem_key=seat.key)

    def _watch_seat(self) -> None:
        """Keep a timer running exactly while the debate waits for a human seat's turn with a time limit."""
        timer = self._seat_timer
        deadline = self.state.seat_deadline
        if deadline is None or self.deleted or not self.seat_clock:
            if timer is not None and timer is not asyncio.current_task():
                timer.cancel()
            self._seat_timer = None
            return
        if timer is not None and not timer.done():
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # built outside a loop (a test folding a log): nobody to time it out here
            return
        self._seat_timer = self._task_factory(self._expire_seat())

    async def _expire_seat(self) -> None:
        """Skip the human seat's turn when its time runs out (another process may have done it first)."""
        while (deadline := self.state.seat_deadline) is not None:
            wait = (deadline - utcnow()).total_seconds()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            async with self._command_lock:
                if self.state.seat_deadline is None or self.state.seat_deadline > utcnow():
                    continue
                seat = self._awaited_seat()
                name = self.state.config.participant(seat.speaker).name
                minutes = seat.time_limit_s / 60
                limit = f"{minutes:g} minute{'s' if minutes != 1 else ''}" if seat.time_limit_s >= 60 \
                    else f"{seat.time_limit_s} seconds"
                note = f"skipped: {name} did not send this turn within {limit}"
                try:
                    # The text names nobody: judges read it as anonymised as any other turn.
                    await self._commit_seat_turn(seat, "(No turn: the time ran out.)", [note], skipped=True)
                    await self._transition(Event.TURN_TIMEOUT, position=self._seat_position(seat))
                except (StaleWrite, TransitionNotAllowed):  # another process wrote first (a turn, a pause):
                    continue  # its log wins (it was read again); look at the wait as it now is
                self.ensure_running()
            return

    def draft_models(self) -> list[str]:
        """The models a human seat may draft its turn with: this debate's own (its debaters' and judges'),
        as `provider:model` labels; their endpoints and keys were checked when it was created."""
        labels: list[str] = []
        specs: list[Participant | JudgeSpec] = [*self.state.config.participants, *self.state.config.judge.judges]
        for spec in specs:
            label = f"{spec.provider}:{spec.model}"
            if spec.provider != "human" and label not in labels:
                labels.append(label)
        return labels

    async def draft_seat_turn(self, model: str, actor: str | None, on_text: Callable[[str], None]) -> SeatDraft:
        """Have `model` (one of `draft_models`) draft the human seat's turn waited for, streamed to
        `on_text` (the text so far). Nothing is sent: the person edits and sends it. The call obeys the
        debate's money rules like any other: sized to the hard limit (refused with `DraftRefused` when
        nothing fits), held while in flight, its cost recorded in the ledger under the drafting model,
        and the draft says when spending has reached warn-at."""
        if not self.may_take_seat(actor):
            raise TransitionNotAllowed(self.state.status, Event.TURN_SENT, "this seat is not yours to draft for"
                                       if self.state.status is State.AWAITING_TURN else "no turn is awaited")
        seat = self._awaited_seat()
        specs: list[Participant | JudgeSpec] = [*self.state.config.participants, *self.state.config.judge.judges]
        chosen = next((s for s in specs if f"{s.provider}:{s.model}" == model and s.provider != "human"), None)
        if chosen is None:
            raise ValueError(f"model: {model!r} is not one of this debate's models ({', '.join(self.draft_models())})")
        person = self.state.config.participant(seat.speaker)
        drafter = person.model_copy(update={
            "provider": chosen.provider, "model": chosen.model, "base_url": chosen.base_url,
            "preset": chosen.preset, "api_key_env": chosen.api_key_env, "seat": None})
        slot = TurnSlot(key=seat.key, phase=seat.phase, round=seat.round, speaker=seat.speaker, act=seat.act,
                        index=seat.index, visible=seat.visible)
        request = self._request_for(slot, 0).model_copy(update={"model": chosen.model, "purpose": "turn"})
        request, worst, capped = self._draft_fit(drafter, request)
        hold = id(request)
        self._budget_hold(hold, worst)  # a turn sized meanwhile leaves this draft's worst case alone
        limits = self._timeouts_for(drafter)
        parts: list[str] = []
        completion: Completion | None = None
        try:
            async with asyncio.timeout(limits.turn):
                stream = self.providers.get(drafter).stream(request)
                try:
                    async for item in stream:
                        if isinstance(item, TextDelta):
                            parts.append(item.text)
                            on_text("".join(parts))
                        elif isinstance(item, Completion):
                            completion = item
                finally:
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        await aclose()
            if completion is not None:  # what the draft cost goes in the ledger like any other call
                cost = money.cost_of(drafter, completion.usage, self.settings)
                self._count_spending(cost.usd)
                record = self._cost_record(drafter, request, completion.usage, cost.usd, cost.source)
                record.purpose = "draft"
                await self._commit(CallCostNote(turn=seat.key, purpose="draft", reason="completed", calls=[record]))
        finally:
            self._budget_release(hold)
        warning = " ".join(w for w in (capped, self._draft_warning()) if w) or None
        return SeatDraft(text="".join(parts).strip(), model=model, warning=warning)

    async def _await_seat(self, slot: TurnSlot) -> None:
        """A human seat is to speak: record what is owed and wait (the runner ends; the person or the
        timer continues the debate)."""
        state = self.state
        limit = effective_word_limit(state.format.phase(slot.phase), state.config)
        seat = SeatTurn(key=slot.key, phase=slot.phase, round=slot.round, speaker=slot.speaker, act=slot.act,
                        index=slot.index, visible=slot.visible, word_limit=limit or None,
                        time_limit_s=state.config.human_turn_seconds)
        await self._transition(Event.TURN_DUE, position=self._seat_position(seat), seat=seat)
