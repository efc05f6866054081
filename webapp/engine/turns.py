"""Turn-taking: which turn is next, asking the models for it, and the markers between phases and rounds.

The plan is the format's schedule (`schedule.py`) against the turns already in the log: the first
unfinished step is taken next, so a restarted debate continues exactly where its log stopped and a
finished turn is never requested again. A step's turns by models are asked for side by side; a human
seat's turn is waited for (seat.py). Clarification questions come before the first phase.

A mixin of `DebateSession` (see runner.py).
"""

from __future__ import annotations

import asyncio

from webapp.engine import termination
from webapp.engine.context import build_history, turns_to_summarise
from webapp.engine.discipline import rejection_note, shorter_request, truncate, word_count
from webapp.engine.events import (
    ClarificationDoneNote,
    ClarificationQuestionsPayload,
    OnTopicNote,
    TurnPayload,
)
from webapp.engine.formats import Phase
from webapp.engine.machine import Event, Position, State
from webapp.engine.params import SeatTurn
from webapp.engine.prompts import effective_word_limit, turn_request
from webapp.engine.schedule import Step, TurnSlot, phase_steps, post_phases, pre_phases, round_phases
from webapp.engine.session_parts import SessionParts
from webapp.models import Participant, Turn
from webapp.providers.base import ProviderRequest
from webapp.wording import counted

# Finish reasons saying the reply hit its output allowance (OpenAI and compatible; Anthropic).
CUT_AT_LIMIT = frozenset({"length", "max_tokens"})


class TurnTaking(SessionParts):
    """Taking a debate's turns in the order of its format (a mixin of `DebateSession`)."""

    async def _clarify(self) -> None:
        state = self.state
        config = state.config
        asked = len(state.clarifications)
        answered = len(state.answers)
        if asked > answered:  # questions out, answers not in: wait for the person
            await self._transition(Event.QUESTIONS_READY)
            return
        if asked >= config.clarification_iterations or config.clarification_questions == 0:
            await self._transition(Event.CLARIFICATION_COMPLETE)
            return
        questions, calls = await termination.ask_clarifications(self._aux_call, state, asked + 1)
        if not any(questions.values()):
            await self._commit(ClarificationDoneNote(iteration=asked + 1, calls=calls))
            await self._transition(Event.CLARIFICATION_COMPLETE)
            return
        await self._commit(ClarificationQuestionsPayload(iteration=asked + 1, questions=questions, calls=calls),
                           idem_key=f"questions/{asked + 1}")
        await self._transition(Event.QUESTIONS_READY)

    def _phase_groups(self) -> list[tuple[Phase, int]]:
        """(phase, round) groups of the plan known so far, in order."""
        state, fmt = self.state, self.state.format
        groups = [(p, 1) for p in pre_phases(fmt)]
        stop_after = state.total_rounds
        for round_no, decision in sorted(state.round_decisions.items()):
            if decision.stop:
                stop_after = min(stop_after, round_no)
                break
        for round_no in range(1, stop_after + 1):
            groups += [(p, round_no) for p in round_phases(fmt)]
        groups += [(p, 1) for p in post_phases(fmt)]
        return groups

    def _steps(self, phase: Phase, round_no: int) -> list[Step]:
        return phase_steps(self.state.format, phase, round_no, self.state.config)

    def _first_unfinished(self, phase: Phase, round_no: int) -> Step | None:
        for step in self._steps(phase, round_no):
            if any(t.key not in self.state.turn_keys for t in step.turns):
                return step
        return None

    async def _close_markers(self) -> None:
        """Send PHASE_COMPLETE / ROUND_COMPLETE for groups finished but not yet marked (crash-safe)."""
        fmt = self.state.format
        block = {p.id for p in round_phases(fmt)}
        for phase, round_no in self._phase_groups():
            if self._first_unfinished(phase, round_no) is not None:
                return
            # `self.state` is read afresh after every commit: each one swaps in a new state.
            if (phase.id, round_no) not in self.state.phase_marks:
                if self.state.status is State.PREPARATION and any(s.act != "prepare" for s in phase.speakers):
                    continue
                await self._transition(Event.PHASE_COMPLETE, phase=phase.id, round=round_no,
                                       position=self.state.machine.context.position.model_copy())
            last_of_block = phase.id in block and phase.id == round_phases(fmt)[-1].id
            if last_of_block and round_no not in self.state.round_marks:
                await self._transition(Event.ROUND_COMPLETE, round=round_no,
                                       position=self.state.machine.context.position.model_copy())
            if self.state.status is not State.DEBATING and self.state.status is not State.PREPARATION:
                return

    async def _next_step(self) -> Step | None:
        fmt, total = self.state.format, self.state.total_rounds
        for phase in pre_phases(fmt):
            if step := self._first_unfinished(phase, 1):
                return step
        kind = fmt.termination.kind
        for round_no in range(1, total + 1):
            for phase in round_phases(fmt):
                if step := self._first_unfinished(phase, round_no):
                    return step
            stop = False
            if kind != "fixed":  # judge-driven formats get a decision at the cap too (it records why they ended)
                decision = self.state.round_decisions.get(round_no) or await self._decide_round(round_no)
                stop = decision.stop
            if round_phases(fmt):
                await self._after_round(round_no, stop or round_no == total)
            if stop:
                break
        for phase in post_phases(fmt):
            if step := self._first_unfinished(phase, 1):
                return step
        return None

    async def _advance(self) -> None:
        await self._close_markers()
        if self.state.status not in (State.PREPARATION, State.DEBATING):
            return
        step = await self._next_step()
        if step is None:
            await self._close_markers()
            if self.state.status is State.PREPARATION:
                await self._transition(Event.PHASE_COMPLETE)
            if self.state.status is State.DEBATING:
                await self._transition(Event.ALL_ROUNDS_COMPLETE,
                                       position=self.state.machine.context.position.model_copy())
            return
        if self.state.status is State.PREPARATION and all(t.act != "prepare" for t in step.turns):
            await self._transition(Event.PHASE_COMPLETE, phase=step.phase, round=step.round)
            return
        await self._run_step(step)

    async def _run_step(self, step: Step) -> None:
        todo = [t for t in step.turns if t.key not in self.state.turn_keys]
        people = [t for t in todo if self.state.config.participant(t.speaker).is_human]
        todo = [t for t in todo if t not in people]  # the models of a step speak first, then the people
        if not todo and people:
            slot = people[0]
            if self.state.status is State.PREPARATION:  # a person prepares on their own: nothing to wait for
                seat = SeatTurn(key=slot.key, phase=slot.phase, round=slot.round, speaker=slot.speaker,
                                act=slot.act, index=slot.index, visible=False)
                await self._commit_seat_turn(seat, "(prepared on their own)", ["a person prepares off the record"])
                await self._transition(Event.TURN_COMPLETE, position=self._seat_position(seat))
                return
            await self._await_seat(slot)
            return
        for slot in todo:
            await self._prepare_summary(self.state.config.participant(slot.speaker), slot)
        requests = [(slot, self._request_for(slot, offset)) for offset, slot in enumerate(todo)]
        if not await self._budget_allows([(self.state.config.participant(s.speaker), r) for s, r in requests]):
            return
        if len(requests) == 1:
            await self._take_turn(*requests[0])
        else:
            async with asyncio.TaskGroup() as group:
                for slot, request in requests:
                    group.create_task(self._take_turn(slot, request))
        await self._check_warning()

    async def _prepare_summary(self, participant: Participant, slot: TurnSlot | None = None) -> None:
        """Write (once) the summary a `summarize` debate needs before this participant speaks."""
        needed = turns_to_summarise(self.state, participant, slot)
        if needed is None:
            return
        text, record = await termination.summarise(self._aux_call, self.state, needed.turns)
        await self._commit(needed.payload(text.strip(), record), idem_key=f"summary/{needed.key}")

    def _request_for(self, slot: TurnSlot, offset: int) -> ProviderRequest:
        state = self.state
        participant = state.config.participant(slot.speaker)
        history, notes = build_history(state, participant, slot)
        request = turn_request(
            slot=slot,
            participant=participant,
            config=state.config,
            fmt=state.format,
            history=history,
            turn_number=len(state.turns) + 1 + offset,
            round_total=state.total_rounds,
            extra_context={"compression": notes, **termination.turn_context(state, participant, slot)},
        )
        return request

    async def _take_turn(self, slot: TurnSlot, request: ProviderRequest) -> None:
        state = self.state
        participant = state.config.participant(slot.speaker)
        self.state.machine.note_position(
            Position(phase=slot.phase, round=slot.round, speaker=slot.speaker, turn=slot.index))
        result = await self._call(participant, request, slot=slot)
        text, notes = result.text.strip(), list(request.context.get("compression") or [])
        kept = result  # the call whose words the turn keeps
        phase = state.format.phase(slot.phase)
        limit = effective_word_limit(phase, state.config)
        if limit and word_count(text) > limit:
            if state.config.word_limit_action == "reject":
                notes.append(rejection_note(word_count(text), limit))
                second = await self._call(participant, shorter_request(request, text, limit), slot=slot)
                result.usage = result.usage + second.usage
                first_usd, second_usd = result.cost_usd, second.cost_usd
                result.cost_usd = None if first_usd is None or second_usd is None else first_usd + second_usd
                text, kept = second.text.strip(), second
                notes.append(f"the shorter answer has {counted(word_count(text), 'word')}")
            text, note = truncate(text, limit)
            if note is not None:
                notes.append(note)
        if kept.finish_reason in CUT_AT_LIMIT:  # the reply ran into its output allowance
            notes.append(f"cut at the {kept.max_tokens}-token limit")
        flag, topic_calls = await termination.check_on_topic(self._aux_call, state, participant, text)
        if flag:
            notes.append(flag)
        if topic_calls:  # the judge's on-topic check costs money too
            await self._commit(OnTopicNote(turn=slot.key, round=slot.round, flag=flag, calls=topic_calls))
        turn = Turn(
            key=slot.key, phase=slot.phase, round=slot.round, speaker=slot.speaker, act=slot.act,
            index=slot.index, text=text, usage=result.usage, cost_usd=result.cost_usd,
            model=participant.model, provider=participant.provider, attempt=result.attempt,
            started_at=result.started_at, finished_at=result.finished_at,
            first_token_s=result.first_token_s, finish_reason=result.finish_reason, notes=notes,
            visible=slot.visible,
        )
        # The turn stays among the live ones until its commit is in the log: a stream (re)joining while the
        # commit is being written finds it either live or committed, never neither (which an API client was
        # told meant "cut off while you were away", and its text then came only whole at the commit).
        await self._commit(TurnPayload(turn=turn, cost_source=result.cost_source), idem_key=slot.key)
        self.live.pop(slot.key, None)
        await self._transition(Event.TURN_COMPLETE, position=Position(
            phase=slot.phase, round=slot.round, speaker=slot.speaker, turn=slot.index))
