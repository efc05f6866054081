"""Judging: the verdict at the end, per-round scores, and the round decisions of judge-driven formats.

Whatever a judge decided is committed once and never recomputed: a verdict already in the log is not
asked for (nor paid for) again after an interruption, and a round's decision or scores are read back.

A mixin of `DebateSession` (see runner.py).
"""

from __future__ import annotations

from webapp.engine import termination
from webapp.engine.events import CallRecord, RoundDecisionPayload, VerdictPayload
from webapp.engine.judge import judge_debate
from webapp.engine.machine import Event
from webapp.engine.session_parts import SessionParts
from webapp.models import JudgeSpec, Verdict
from webapp.providers.base import ProviderRequest


class Judging(SessionParts):
    """The judge's work in a debate (a mixin of `DebateSession`)."""

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
        if any(s.round == round_no for s in self.state.round_scores):
            return
        scores = await termination.score_round(self._aux_call, self.state, round_no)
        await self._commit(scores, idem_key=f"round_scores/{round_no}")

    async def _decide_round(self, round_no: int) -> RoundDecisionPayload:
        decision = await termination.decide(self._aux_call, self.state, round_no)
        await self._commit(decision, idem_key=f"decision/{round_no}")
        return self.state.round_decisions[round_no]

    async def _judge(self) -> None:
        state = self.state
        config = state.config
        if state.verdict is not None:  # committed before an interruption: never ask (and pay) again
            await self._transition(Event.VERDICT_READY)
            return
        calls: list[CallRecord] = []

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
        now = self.state  # a stop may have arrived while the judge worked
        verdict.ended_because = now.ended_because or (None if now.stopping else "all rounds completed")
        await self._commit(VerdictPayload(verdict=verdict, calls=calls), idem_key="verdict")
        await self._transition(Event.VERDICT_READY)
