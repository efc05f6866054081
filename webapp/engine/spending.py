"""Spending checks for a debate session.

Warn-at is a spending threshold: the (one) cost warning is given when the money actually spent
reaches it, checked before each step and after it. The hard limit is never crossed and never stops
a debate while money remains: before each call its output allowance (`max_tokens`) is capped to
what the money left can pay for at the model's prices, after its estimated input; a call is refused
(and the debate stopped) only when not even a minimal answer fits. A capped turn carries a note.

While a verdict is still to come and it can be paid for, its estimated cost stays reserved: turns
and the judge's other calls are capped to what is left beside it, so the verdict always fits.

A mixin of `DebateSession` (see runner.py), kept apart so each module holds one concern.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from webapp.engine import budget as money
from webapp.engine.events import CostLimit, CostWarning, Payload
from webapp.engine.machine import Event, State
from webapp.models import JudgeSpec, Participant, Usage
from webapp.providers.base import ProviderRequest, estimate_request_tokens
from webapp.wording import counted

if TYPE_CHECKING:
    from webapp.engine.state import DebateState
    from webapp.models import DebateEvent
    from webapp.settings import Settings

MIN_ANSWER_TOKENS = 64  # a call is refused only when not even this much of an answer can be paid for
# Calls whose answer is useless when cut short: they must fit whole (a verdict in JSON, per round or final).
WHOLE_ANSWER_PURPOSES = frozenset({"verdict"})
# The judge reads every turn again: each output token of a turn also grows the verdict's input. The
# verdict estimate counts ~4 characters a token; a token can be longer, hence the margin.
JUDGE_READ_MARGIN = 1.5
TURN_OVERHEAD_TOKENS = 12  # what the verdict estimate adds per turn besides its text

Spec = Participant | JudgeSpec


class DraftRefused(ValueError):
    """A human seat's "Draft with a model" call that the debate's hard limit leaves no room for."""


class BudgetExceeded(Exception):
    """A call was not made because even a minimal answer could cross the debate's cost limit."""

    def __init__(self, what: str, estimate: float, remaining: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.estimate = estimate
        self.remaining = remaining


@dataclass
class Purse:
    """What this session's calls have spent and hold, beyond what the log already says.

    A call's cost reaches the ledger only when the event carrying it is committed (a turn after its
    on-topic check, a verdict after the whole panel): until then it is counted here, so no call is
    sized against money that is in fact gone. Calls in flight hold their worst case."""

    state: Any = None  # the DebateState the count started from (a reload starts it again)
    baseline: float = 0.0  # the ledger's total then
    spent: float = 0.0  # the actual cost of every call finished since, committed or not
    holds: dict[int, float] = field(default_factory=dict)  # in-flight calls' worst cases


class SpendingGuard:
    """Budget checks on behalf of a debate session."""

    if TYPE_CHECKING:  # provided by DebateSession
        state: DebateState
        settings: Settings

        async def _commit(self, payload: Payload, idem_key: str | None = None) -> DebateEvent | None: ...

        async def _transition(self, event: Event, **params: Any) -> DebateEvent | None: ...

    # --- money spent and left ----------------------------------------------------------------

    def _budget_purse(self) -> Purse:
        purse: Purse | None = self.__dict__.get("_spending_purse")
        if purse is None:
            purse = self.__dict__["_spending_purse"] = Purse()
        if purse.state is not self.state:  # a new or reloaded state: the log is the truth again
            purse.state, purse.baseline, purse.spent = self.state, self.state.ledger.total_usd, 0.0
        return purse

    def _money_spent(self) -> float:
        """Money spent: the ledger, plus what finished calls cost before their event was committed."""
        purse = self._budget_purse()
        return max(self.state.ledger.total_usd, purse.baseline + purse.spent)

    def _count_spending(self, usd: float | None) -> None:
        """A call finished (or was cut off) costing `usd` (None: unpriced)."""
        self._budget_purse().spent += usd or 0.0

    def _money_left(self) -> float | None:
        """Money left under the hard limit, less what calls in flight may still take (None: no limit)."""
        limit = self.state.config.budget.cost_limit
        if limit is None:
            return None
        return limit - self._money_spent() - sum(self._budget_purse().holds.values())

    def _budget_hold(self, key: int, usd: float) -> None:
        self._budget_purse().holds[key] = usd

    def _budget_release(self, key: int) -> None:
        self._budget_purse().holds.pop(key, None)

    # --- the verdict's reserve ---------------------------------------------------------------

    def _verdict_pending(self) -> bool:
        state = self.state
        return (state.config.judge.enabled and state.verdict is None
                and state.status not in (State.JUDGING, State.STOPPED, State.COMPLETED))

    def _verdict_reserve(self, remaining: float) -> float:
        """Money kept for the verdict: its estimate, while a verdict is to come and fits at all (a
        verdict that cannot be paid for anyway is not saved for at the debate's expense)."""
        if not self._verdict_pending():
            return 0.0
        estimate = self._judge_estimate()
        return estimate if estimate <= remaining else 0.0

    def _judge_read_price(self) -> float:
        """What the verdict's estimate grows by for each token of a turn (every judge reads it)."""
        total = 0.0
        for spec in self.state.config.judge.judges:
            usd = money.cost_of(spec, Usage(input_tokens=1_000_000), self.settings).usd
            total += (usd or 0.0) / 1_000_000
        return total * JUDGE_READ_MARGIN

    def _judge_estimate(self) -> float:
        """What the verdict could cost: every judge reading the whole transcript (unpriced: 0)."""
        state = self.state
        transcript_tokens = sum(len(t.text) // 4 + TURN_OVERHEAD_TOKENS for t in state.turns) + 400
        return sum(money.estimate_call(spec, transcript_tokens, spec.max_tokens, self.settings).usd or 0.0
                   for spec in state.config.judge.judges)

    # --- sizing calls ------------------------------------------------------------------------

    def _budget_reserve(self, request: ProviderRequest, remaining: float) -> float:
        """What must stay unspent beside this call: the verdict's reserve, except for the verdict."""
        final_verdict = request.purpose in WHOLE_ANSWER_PURPOSES and self.state.status is State.JUDGING
        return 0.0 if final_verdict else self._verdict_reserve(remaining)

    def _budget_room(self, request: ProviderRequest) -> tuple[float, float] | None:
        """(the money this call may take, what each of its output tokens costs on top of its price),
        or None without a hard limit."""
        remaining = self._money_left()
        if remaining is None:
            return None
        reserve = self._budget_reserve(request, remaining)
        room, extra = remaining - reserve, 0.0
        if reserve and request.purpose == "turn":  # this turn will be read by the judge too
            extra = self._judge_read_price()
            room -= extra * TURN_OVERHEAD_TOKENS
        return room, extra

    def _budget_size(self, spec: Spec, request: ProviderRequest, room: float, extra: float) -> tuple[int, float]:
        """(the output allowance that fits in `room`, its worst-case cost); raises `BudgetExceeded`
        when not even a minimal answer fits, or a whole-answer call does not fit whole."""
        input_tokens = estimate_request_tokens(request)
        if request.purpose in WHOLE_ANSWER_PURPOSES:
            worst = money.estimate_call(spec, input_tokens, request.max_tokens, self.settings).usd
            if worst is not None and worst > room:
                raise BudgetExceeded(self._budget_refusal(request, worst), worst, room)
            return request.max_tokens, worst or 0.0
        tokens = money.affordable_tokens(spec, input_tokens, request.max_tokens, room, self.settings, extra)
        if tokens is None:  # unpriced: nothing to size it by
            return request.max_tokens, 0.0
        minimal = min(MIN_ANSWER_TOKENS, request.max_tokens)
        if tokens < minimal:
            worst = (money.estimate_call(spec, input_tokens, minimal, self.settings).usd or 0.0) + extra * minimal
            raise BudgetExceeded(self._budget_refusal(request, worst, minimal), worst, room)
        worst = (money.estimate_call(spec, input_tokens, tokens, self.settings).usd or 0.0) + extra * tokens
        return tokens, worst

    def _budget_refusal(self, request: ProviderRequest, worst: float, minimal: int | None = None) -> str:
        """Why a call is not made: "the next turn could not fit in the remaining $X (…)"."""
        limit = self.state.config.budget.cost_limit or 0.0
        remaining = max(0.0, limit - self._money_spent())
        what = "next turn" if request.purpose == "turn" else f"{request.purpose} call"
        answer = f"even a {minimal}-token answer" if minimal else "it"
        text = (f"the {what} could not fit in the remaining ${remaining:.4f} ({answer} could cost "
                f"${worst:.4f}, which would cross the ${limit:.4f} limit")
        reserve = self._budget_reserve(request, self._money_left() or 0.0)
        if reserve:
            text += f"; ${reserve:.4f} is kept for the verdict"
        in_flight = sum(self._budget_purse().holds.values())
        if in_flight:
            text += f"; ${in_flight:.4f} is held by calls under way"
        return text + ")"

    def _budget_fit(self, spec: Spec, request: ProviderRequest) -> tuple[ProviderRequest, float]:
        """The request with its output allowance capped to what the money left can pay for, and its
        worst-case cost (to hold while it is in flight). Raises `BudgetExceeded`."""
        sizing = self._budget_room(request)
        if sizing is None:
            return request, 0.0
        room, extra = sizing
        tokens, worst = self._budget_size(spec, request, room, extra)
        if tokens < request.max_tokens:
            request = request.model_copy(update={"max_tokens": tokens})
        return request, worst

    def _budget_plan(self, calls: list[tuple[Spec, ProviderRequest]]) -> list[int]:
        """Output allowances for calls made together (a parallel phase): the money left is shared,
        each call taking what it needs up to an equal share of what the others leave."""
        sizing = self._budget_room(calls[0][1])
        if sizing is None:
            return [request.max_tokens for _, request in calls]
        room, extra = sizing
        allowances = [request.max_tokens for _, request in calls]
        order = sorted(range(len(calls)), key=lambda i: self._budget_worst(*calls[i], extra))
        for position, index in enumerate(order):
            spec, request = calls[index]
            share = room / (len(order) - position)
            tokens, worst = self._budget_size(spec, request, share, extra)
            allowances[index] = tokens
            room -= worst
        return allowances

    def _budget_worst(self, spec: Spec, request: ProviderRequest, extra: float) -> float:
        usd = money.estimate_call(spec, estimate_request_tokens(request), request.max_tokens, self.settings).usd
        return (usd or 0.0) + extra * request.max_tokens

    # --- a human seat's draft ------------------------------------------------------------------

    def _draft_fit(self, spec: Spec, request: ProviderRequest) -> tuple[ProviderRequest, float, str | None]:
        """"Draft with a model" under the same hard limit as any call: the request with its output
        allowance capped to the money left (the verdict's reserve kept), its worst case (to hold while
        it is in flight) and a sentence when it was capped. Raises `DraftRefused` when not even a short
        answer fits: the debate is not stopped for it, the person can still write the turn."""
        try:
            fitted, worst = self._budget_fit(spec, request.model_copy(update={"purpose": "draft"}))
        except BudgetExceeded as exc:
            raise DraftRefused(f"budget: {exc.what}") from None
        if fitted.max_tokens >= request.max_tokens:
            return request, worst, None
        limit = self.state.config.budget.cost_limit or 0.0
        note = (f"The draft was capped at {counted(fitted.max_tokens, 'token')} (of {request.max_tokens}) to fit "
                f"the money left under the ${limit:.4f} limit.")
        return request.model_copy(update={"max_tokens": fitted.max_tokens}), worst, note

    def _draft_warning(self) -> str | None:
        """After a draft's cost is counted: the warning once spending has reached warn-at. The debate's
        own warning (and its wait for an OK) comes at its next model call, as for any spending."""
        warn_at = self.state.config.budget.warn_at
        spent = self._money_spent()
        if not money.warn_due(spent, warn_at):
            return None
        text = f"Spending has reached ${spent:.4f}, at or above the ${warn_at or 0.0:.4f} warning threshold"
        if self.state.cost_warned:
            return text + "."
        return text + "; the debate will wait for an OK before its next model call."

    # --- before and after each step ----------------------------------------------------------

    async def _budget_allows(self, calls: list[tuple[Spec, ProviderRequest]]) -> bool:
        """Before a step: give the cost warning if spending has reached warn-at; size the step's calls
        to the money left, capping (with a note) what does not fit whole, or stop the debate when not
        even a minimal answer fits. The requests are changed in place."""
        if await self._check_warning():
            return False
        try:
            allowances = self._budget_plan(calls)
        except BudgetExceeded as exc:
            await self._stop_for_budget(exc.what, exc.estimate)
            return False
        for (_, request), tokens in zip(calls, allowances, strict=True):
            if tokens < request.max_tokens:
                self._budget_note_cap(request, tokens)
                request.max_tokens = tokens
        return True

    def _budget_note_cap(self, request: ProviderRequest, tokens: int) -> None:
        """Say on the turn that its answer was capped by the budget (the runner keeps the request's
        "compression" notes with the turn; a copy of the request shares them)."""
        limit = self.state.config.budget.cost_limit or 0.0
        note = (f"capped at {counted(tokens, 'token')} (of {request.max_tokens}) to fit the money left under the "
                f"${limit:.4f} limit")
        notes = request.context.get("compression")
        if isinstance(notes, list):
            notes.append(note)
        else:
            request.context["compression"] = [note]

    async def _stop_for_budget(self, what: str, estimate: float) -> None:
        budget = self.state.config.budget
        spent = self._money_spent()
        limit = budget.cost_limit or 0.0
        judge_fits = spent + self._judge_estimate() <= limit
        await self._commit(CostLimit(message=f"stopped: {what}", spent_usd=spent, estimate_usd=estimate,
                                     limit_usd=limit, remaining_usd=max(0.0, limit - spent), judge_runs=judge_fits))
        if self.state.machine.can(Event.STOP):
            await self._transition(Event.STOP, verdict=judge_fits and self.state.status is not State.JUDGING,
                                   reason="cost limit")

    async def _check_warning(self) -> bool:
        """Give the (one) cost warning once the money spent has reached warn-at; True when the debate
        now waits for it to be acknowledged."""
        budget = self.state.config.budget
        spent = self.state.ledger.total_usd
        if self.state.cost_warned or not money.warn_due(spent, budget.warn_at):
            return False
        await self._commit(CostWarning(
            spent_usd=spent, warn_at=budget.warn_at,
            message=f"spending reached ${spent:.4f}, at or above the ${budget.warn_at:.4f} warning threshold",
        ), idem_key="cost_warning")
        if self.state.machine.can(Event.COST_WARNING):
            await self._transition(Event.COST_WARNING)
        return self.state.status is State.AWAITING_ACK
