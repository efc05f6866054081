"""Drives one debate: the machine, the providers, the store and the live stream.

The loop looks at the machine's state, does the next piece of work (a turn, a round decision, the
verdict), commits what happened, and goes round again; it returns when the debate waits for a
person or has ended. Every event is committed (one transaction) *before* it is applied to the
live view and broadcast. Commands (pause, stop, …) cancel in-flight work first, so no tokens keep
being billed after a user stopped; the cut turn is discarded and redone later, never half-kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from webapp.engine import termination
from webapp.engine.calls import ProviderCalls, ProviderSource, TaskFactory
from webapp.engine.context import build_history, turns_to_summarise
from webapp.engine.discipline import (
    rejection_note,
    shorter_request,
    truncate_to_words,
    truncation_note,
    word_count,
)
from webapp.engine.formats import Phase
from webapp.engine.judge import judge_debate
from webapp.engine.machine import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    WAITING_STATES,
    Event,
    Position,
    State,
    TransitionNotAllowed,
)
from webapp.engine.prompts import effective_word_limit, turn_request
from webapp.engine.schedule import (
    Step,
    TurnSlot,
    phase_steps,
    post_phases,
    pre_phases,
    provider_problem,
    round_phases,
)
from webapp.engine.spending import BudgetExceeded, SpendingGuard
from webapp.engine.state import DebateState
from webapp.engine.stream import (
    Broadcaster,
    Listener,
    LiveEvent,
    LiveTurn,
)
from webapp.models import DebateEvent, EventKind, JudgeSpec, Participant, Turn, Verdict, utcnow
from webapp.providers.base import (
    ErrorKind,
    ProviderError,
    ProviderRequest,
)
from webapp.settings import Settings
from webapp.store import StaleWrite, Store

log = logging.getLogger(__name__)

class DebateSession(ProviderCalls, SpendingGuard):
    """One debate in this process: its state, its runner task, its subscribers.

    Provider calls (retries, timeouts, live chunks) and spending checks live in the two mixins."""

    def __init__(
        self,
        state: DebateState,
        store: Store,
        providers: ProviderSource,
        settings: Settings,
        task_factory: TaskFactory | None = None,
        backoff_base: float = 0.5,
        on_event: Callable[[DebateSession, DebateEvent], None] | None = None,
    ) -> None:
        self.state = state
        self.store = store
        self.providers = providers
        self.settings = settings
        self.backoff_base = backoff_base
        self._task_factory = task_factory or asyncio.create_task
        self._on_event = on_event
        self.broadcaster = Broadcaster()
        self.live: dict[str, LiveTurn] = {}
        self.deleted = False  # set when an admin deleted the debate: pages watching it say so
        self._task: asyncio.Task[None] | None = None
        self._commit_lock = asyncio.Lock()
        self._command_lock = asyncio.Lock()

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add a listener; returns the function that removes it. Call right after reading `state`."""
        return self.broadcaster.subscribe(listener)

    # --- commands --------------------------------------------------------------------------

    def ensure_running(self) -> None:
        """Start the runner task if there is work to do and none is running."""
        if self.running:
            return
        if self.state.status in ACTIVE_STATES or self.state.status is State.IDLE:
            self._task = self._task_factory(self._run())

    async def join(self) -> State:
        """Wait until the runner stops (the debate ended or waits for a person)."""
        while self._task is not None and not self._task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)
        return self.state.status

    # Every command takes the `actor` who asked for it (a username, `cli`, `system`, `share-link`):
    # it is recorded with the transition, so the log says who paused, stopped or answered.

    async def pause(self, interrupted: bool = False, actor: str | None = None) -> None:
        async with self._command_lock:
            self._require(Event.PAUSE)
            await self._halt()
            await self._transition(Event.PAUSE, actor=actor, interrupted=interrupted,
                                   position=self.state.machine.context.position.model_dump())

    async def resume(self, actor: str | None = None) -> None:
        async with self._command_lock:
            await self._transition(Event.RESUME, actor=actor)
            self.ensure_running()

    async def stop(self, verdict: bool = True, reason: str = "stopped by user", actor: str | None = None) -> None:
        async with self._command_lock:
            self._require(Event.STOP)
            # Stopping with a verdict while the judge is already at work: let it finish rather than
            # cancel and pay for the same judging twice.
            if not (verdict and self.state.status is State.JUDGING):
                await self._halt()
            await self._transition(Event.STOP, actor=actor, verdict=verdict, reason=reason,
                                   position=self.state.machine.context.position.model_dump())
            self.ensure_running()

    async def retry(self, actor: str | None = None) -> None:
        async with self._command_lock:
            await self._transition(Event.RETRY, actor=actor)
            self.ensure_running()

    async def acknowledge_warning(self, actor: str | None = None) -> None:
        async with self._command_lock:
            await self._transition(Event.ACKNOWLEDGE_WARNING, actor=actor)
            self.ensure_running()

    async def record_action(self, action: str, actor: str, detail: dict[str, Any] | None = None) -> None:
        """Note in the log something a person did that is not a transition (a share link created or
        revoked), so the debate's own history says who did it."""
        data: dict[str, Any] = {"action": action, "actor": actor}
        if detail:
            data["detail"] = detail
        await self._commit(EventKind.ACTION, data)

    async def answer_clarification(self, answers: dict[str, list[str]], actor: str | None = None) -> None:
        """Record the user's answers (per participant, in question order; '' = unanswered)."""
        async with self._command_lock:
            self._require(Event.CLARIFICATION_ANSWERED)
            iteration = len(self.state.clarifications)
            clean = {pid: [str(a).strip()[:2000] for a in items] for pid, items in answers.items()}
            answer: dict[str, Any] = {"iteration": iteration, "answers": clean}
            if actor:
                answer["actor"] = actor
            await self._commit(EventKind.CLARIFICATION_ANSWER, answer, idem_key=f"answer/{iteration}")
            await self._transition(Event.CLARIFICATION_ANSWERED, actor=actor)
            self.ensure_running()

    async def catch_up(self) -> int:
        """Fold in and broadcast events another process appended to this debate's log (a debate run
        by the CLI, say, watched from the web app); returns how many. Nothing to do while this
        process runs the debate itself."""
        if self.running:
            return 0
        async with self._commit_lock:
            newer = await self.store.events_after(self.id, self.state.last_seq)
            try:
                for event in newer:
                    self.state.apply(event)
            except TransitionNotAllowed:  # cannot happen with a sound log; rebuild rather than guess
                await self._reload()
        for event in newer:
            self._publish(event)
        return len(newer)

    async def shutdown(self) -> None:
        """Stop working without recording anything (a process exit is like a crash)."""
        await self._halt()

    def _require(self, event: Event) -> None:
        self.state.machine.require(event)

    async def _halt(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for key in list(self.live):
            self._abort_live(key, "cancelled")

    # --- committing ------------------------------------------------------------------------

    async def _commit(self, kind: EventKind, data: dict[str, Any], idem_key: str | None = None,
                      transition: tuple[Event, dict[str, Any]] | None = None,
                      actor: str | None = None) -> DebateEvent | None:
        """Persist, then apply and broadcast, one event. Shielded: a cancelled caller cannot leave
        the in-memory state and the log disagreeing."""
        inner = asyncio.ensure_future(self._commit_inner(kind, data, idem_key, transition, actor))
        return await asyncio.shield(inner)

    async def _commit_inner(self, kind: EventKind, data: dict[str, Any], idem_key: str | None,
                            transition: tuple[Event, dict[str, Any]] | None,
                            actor: str | None = None) -> DebateEvent | None:
        async with self._commit_lock:
            state = self.state
            at = utcnow()
            if kind is EventKind.TURN and idem_key in state.turn_keys:
                return None
            if transition is not None:
                event, params = transition
                source, target = state.machine.send(event, at=at, **params)  # raises, changing nothing
                data = {"event": event.value, "from": source.value, "to": target.value, "params": params}
                if actor:  # transitions the runner makes by itself are the system's (the default)
                    data["actor"] = actor
            record = DebateEvent(debate_id=state.id, seq=state.last_seq + 1, kind=kind, at=at, data=data)
            try:
                state.apply(record, sent=transition is not None)
                stored = await self.store.append(state.id, kind, data, idem_key=idem_key,
                                                 summary=state.summary(), at=at, expected_seq=record.seq)
            except BaseException:  # nothing half-applied survives: rebuild the view from the log
                await self._reload()
                raise
            if stored is None:  # already in the log (a replay): the log wins
                await self._reload()
                return None
        self._publish(record)
        return record

    def _publish(self, event: DebateEvent) -> None:
        """Tell subscribers about an event that is already in the log."""
        self.broadcaster.emit(LiveEvent(self.id, event))
        if self._on_event is not None:
            self._on_event(self, event)

    async def _reload(self) -> None:
        self.state = DebateState.from_events(await self.store.events(self.state.id))

    async def _transition(self, event: Event, actor: str | None = None, **params: Any) -> DebateEvent | None:
        return await self._commit(EventKind.TRANSITION, {}, transition=(event, params), actor=actor)

    # --- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                status = self.state.status
                if status in TERMINAL_STATES or status in WAITING_STATES:
                    return
                if status is State.IDLE:  # started on behalf of whoever created it
                    await self._transition(Event.START, actor=self.state.created_by or None)
                elif status is State.INITIALIZING:
                    await self._initialize()
                elif status is State.CLARIFYING:
                    await self._clarify()
                elif status in (State.PREPARATION, State.DEBATING):
                    await self._advance()
                elif status is State.JUDGING:
                    await self._judge()
        except asyncio.CancelledError:
            raise
        except BudgetExceeded as exc:
            await self._stop_for_budget(exc.what, exc.estimate)
        except StaleWrite as exc:
            # Another process now drives this debate (e.g. a web app that restarted and marked it
            # interrupted): stop here and leave the log as it wrote it; our view was reloaded.
            log.warning("%s", exc)
        except ProviderError as exc:
            await self._fail(exc)
        except Exception as exc:
            log.exception("debate %s failed", self.id)
            await self._fail(ProviderError(ErrorKind.FATAL, "rostrum", f"internal error: {exc}", reason="internal"))

    async def _fail(self, exc: ProviderError) -> None:
        for key in list(self.live):
            self._abort_live(key, str(exc))
        if not self.state.machine.can(Event.ERROR):
            return
        await self._commit(EventKind.ERROR, {**exc.to_dict(), "state": self.state.status.value,
                                             "position": self.state.machine.context.position.model_dump()})
        await self._transition(Event.ERROR, error=exc.to_dict(),
                               position=self.state.machine.context.position.model_dump())

    async def _initialize(self) -> None:
        problem = provider_problem(self.state.config)
        if problem is not None:
            field, message = problem
            raise ProviderError(ErrorKind.FATAL, "rostrum", f"{field}: {message}", reason="config")
        first = self.state.format.phases[0]
        await self._transition(Event.INIT_COMPLETE, position=Position(phase=first.id, round=1).model_dump())

    # --- clarification ---------------------------------------------------------------------

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
            await self._commit(EventKind.NOTE, {"type": "clarification_done", "iteration": asked + 1,
                                                "calls": calls})
            await self._transition(Event.CLARIFICATION_COMPLETE)
            return
        await self._commit(EventKind.CLARIFICATION_QUESTIONS,
                           {"iteration": asked + 1, "questions": questions, "calls": calls},
                           idem_key=f"questions/{asked + 1}")
        await self._transition(Event.QUESTIONS_READY)

    # --- turns -----------------------------------------------------------------------------

    def _phase_groups(self) -> list[tuple[Phase, int]]:
        """(phase, round) groups of the plan known so far, in order."""
        state, fmt = self.state, self.state.format
        groups = [(p, 1) for p in pre_phases(fmt)]
        stop_after = state.total_rounds
        for round_no, decision in sorted(state.round_decisions.items()):
            if decision.get("stop"):
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
        state = self.state
        block = {p.id for p in round_phases(state.format)}
        for phase, round_no in self._phase_groups():
            if self._first_unfinished(phase, round_no) is not None:
                return
            if (phase.id, round_no) not in state.phase_marks:
                if state.status is State.PREPARATION and any(s.act != "prepare" for s in phase.speakers):
                    continue
                await self._transition(Event.PHASE_COMPLETE, phase=phase.id, round=round_no,
                                       position=state.machine.context.position.model_dump())
            last_of_block = phase.id in block and phase.id == round_phases(state.format)[-1].id
            if last_of_block and round_no not in state.round_marks:
                await self._transition(Event.ROUND_COMPLETE, round=round_no,
                                       position=state.machine.context.position.model_dump())
            if self.state.status is not State.DEBATING and self.state.status is not State.PREPARATION:
                return

    async def _next_step(self) -> Step | None:
        state, fmt = self.state, self.state.format
        for phase in pre_phases(fmt):
            if step := self._first_unfinished(phase, 1):
                return step
        kind = fmt.termination.kind
        for round_no in range(1, state.total_rounds + 1):
            for phase in round_phases(fmt):
                if step := self._first_unfinished(phase, round_no):
                    return step
            decision: dict[str, Any] = {}
            if kind != "fixed":  # judge-driven formats get a decision at the cap too (it records why they ended)
                decision = state.round_decisions.get(round_no) or await self._decide_round(round_no)
            if round_phases(fmt):
                last = bool(decision.get("stop")) or round_no == state.total_rounds
                await self._after_round(round_no, last)
            if decision.get("stop"):
                break
        for phase in post_phases(fmt):
            if step := self._first_unfinished(phase, 1):
                return step
        return None

    async def _after_round(self, round_no: int, last: bool) -> None:
        """Per-round judging when the debate asks for it (stored, never recomputed).

        "mid" scores the middle round of the planned rounds; a debate that ends before its middle
        (judge-driven formats) is scored at its last round instead, so it still gets a mid score."""
        config = self.state.config
        if not config.judge.enabled or config.judge.frequency == "end":
            return
        middle = max(1, (self.state.total_rounds + 1) // 2)
        if config.judge.frequency == "mid" and not (round_no == middle or (last and round_no < middle)):
            return
        if any(int(s.get("round", -1)) == round_no for s in self.state.round_scores):
            return
        scores, calls = await termination.score_round(self._aux_call, self.state, round_no)
        await self._commit(EventKind.ROUND_SCORES, {"round": round_no, **scores, "calls": calls},
                           idem_key=f"round_scores/{round_no}")

    async def _decide_round(self, round_no: int) -> dict[str, Any]:
        decision, calls = await termination.decide(self._aux_call, self.state, round_no)
        await self._commit(EventKind.ROUND_DECISION, {**decision, "round": round_no, "calls": calls},
                           idem_key=f"decision/{round_no}")
        return self.state.round_decisions[round_no]

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
                                       position=self.state.machine.context.position.model_dump())
            return
        if self.state.status is State.PREPARATION and all(t.act != "prepare" for t in step.turns):
            await self._transition(Event.PHASE_COMPLETE, phase=step.phase, round=step.round)
            return
        await self._run_step(step)

    async def _run_step(self, step: Step) -> None:
        todo = [t for t in step.turns if t.key not in self.state.turn_keys]
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
        await self._commit(EventKind.SUMMARY, {**needed.event_data(), "text": text.strip(), "calls": [record]},
                           idem_key=f"summary/{needed.key}")

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
        phase = state.format.phase(slot.phase)
        limit = effective_word_limit(phase, state.config)
        if limit and word_count(text) > limit:
            if state.config.word_limit_action == "reject":
                notes.append(rejection_note(word_count(text), limit))
                second = await self._call(participant, shorter_request(request, text, limit), slot=slot)
                result.usage = result.usage + second.usage
                result.cost_usd = None if None in (result.cost_usd, second.cost_usd) else (
                    result.cost_usd + second.cost_usd)
                text = second.text.strip()
                notes.append(f"the shorter answer has {word_count(text)} words")
            if word_count(text) > limit:
                notes.append(truncation_note(word_count(text), limit))
                text = truncate_to_words(text, limit)
        flag, topic_calls = await termination.check_on_topic(self._aux_call, state, participant, text)
        if flag:
            notes.append(flag)
        if topic_calls:  # the judge's on-topic check costs money too
            await self._commit(EventKind.NOTE, {"type": "on_topic", "turn": slot.key, "round": slot.round,
                                                "flag": flag, "calls": topic_calls})
        turn = Turn(
            key=slot.key, phase=slot.phase, round=slot.round, speaker=slot.speaker, act=slot.act,
            index=slot.index, text=text, usage=result.usage, cost_usd=result.cost_usd,
            model=participant.model, provider=participant.provider, attempt=result.attempt,
            started_at=result.started_at, finished_at=result.finished_at,
            first_token_s=result.first_token_s, finish_reason=result.finish_reason, notes=notes,
            visible=slot.visible,
        )
        self.live.pop(slot.key, None)
        await self._commit(EventKind.TURN, {"turn": turn.model_dump(mode="json"), "cost_source": result.cost_source},
                           idem_key=slot.key)
        await self._transition(Event.TURN_COMPLETE, position=Position(
            phase=slot.phase, round=slot.round, speaker=slot.speaker, turn=slot.index).model_dump())

    # --- judging ---------------------------------------------------------------------------

    async def _judge(self) -> None:
        state = self.state
        config = state.config
        calls: list[dict[str, Any]] = []

        async def call(spec: JudgeSpec, request: ProviderRequest) -> str:
            text, record = await self._aux_call(spec, request)
            calls.append(record)
            return text

        # Preparation notes, even when shown to the audience, are not arguments to be judged.
        visible = [t for t in state.turns if t.visible and t.act != "prepare"]
        budget = config.budget
        judge_estimate = self._judge_estimate()
        if budget.cost_limit is not None and state.ledger.total_usd + judge_estimate > budget.cost_limit:
            verdict = Verdict(available=False, reasoning="Verdict unavailable: the judge's estimated cost "
                              f"(${judge_estimate:.4f}) does not fit under the cost limit.")
        elif not visible:
            verdict = Verdict(available=False, reasoning="Verdict unavailable: no turns to judge.")
        else:
            verdict = await judge_debate(call, config, state.format, visible)
            synthesis = await termination.synthesize(self._aux_call, state)
            if synthesis is not None:
                verdict.synthesis, record = synthesis
                calls.append(record)
        verdict.ended_because = state.ended_because or (
            None if state.machine.context.stopping else "all rounds completed")
        await self._commit(EventKind.VERDICT, {"verdict": verdict.model_dump(mode="json"), "calls": calls},
                           idem_key="verdict")
        await self._transition(Event.VERDICT_READY)

