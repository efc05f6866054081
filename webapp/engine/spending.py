"""Spending checks for a debate session: every call's estimated cost is checked before it is made
against the hard limit (stop: cost limit) and warn-at (the one cost warning); actual spending is
checked again after each step.

A mixin of `DebateSession` (see runner.py), kept apart so each module holds one concern.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from webapp.engine import budget as money
from webapp.engine.machine import Event, State
from webapp.models import EventKind, JudgeSpec, Participant
from webapp.providers.base import ProviderRequest, estimate_request_tokens

if TYPE_CHECKING:
    from webapp.engine.state import DebateState
    from webapp.models import DebateEvent
    from webapp.settings import Settings


class BudgetExceeded(Exception):
    """A call was not made because it could cross the debate's cost limit."""

    def __init__(self, what: str, estimate: float) -> None:
        super().__init__(what)
        self.what = what
        self.estimate = estimate


class SpendingGuard:
    """Budget checks on behalf of a debate session."""

    if TYPE_CHECKING:  # provided by DebateSession
        state: DebateState
        settings: Settings

        async def _commit(self, kind: EventKind, data: dict[str, Any], idem_key: str | None = None,
                          transition: Any = None) -> DebateEvent | None: ...

        async def _transition(self, event: Event, **params: Any) -> DebateEvent | None: ...


    def _estimate(self, calls: list[tuple[Participant | JudgeSpec, ProviderRequest]]) -> float:
        """The most the next call(s) can cost: estimated input plus the full output allowance."""
        total = 0.0
        for spec, request in calls:
            cost = money.estimate_call(spec, estimate_request_tokens(request), request.max_tokens, self.settings)
            total += cost.usd or 0.0
        return total

    async def _budget_allows(self, calls: list[tuple[Participant | JudgeSpec, ProviderRequest]]) -> bool:
        """Check the estimate of the next call(s) before making them: stop the debate if it could cross
        the hard limit; raise the (one) cost warning if it could cross warn-at."""
        budget = self.state.config.budget
        estimate = self._estimate(calls)
        spent = self.state.ledger.total_usd
        standing = money.check_budget(spent, estimate, self._warn_at(), budget.cost_limit)
        if standing == "limit":
            await self._stop_for_budget(f"the next call could cost up to ${estimate:.4f}", estimate)
            return False
        if standing == "warn":
            await self._warn(spent, f"spending is ${spent:.4f} and the next call could bring it to "
                                    f"${spent + estimate:.4f}, past the ${budget.warn_at:.4f} warning threshold")
            return self.state.status is not State.AWAITING_ACK
        return True

    async def _stop_for_budget(self, what: str, estimate: float) -> None:
        budget = self.state.config.budget
        spent = self.state.ledger.total_usd
        limit = budget.cost_limit or 0.0
        judge_fits = spent + self._judge_estimate() <= limit
        await self._commit(EventKind.WARNING, {
            "type": "cost_limit",
            "message": f"{what}; with ${spent:.4f} spent that would cross the ${limit:.4f} limit, "
                       "so it was not made",
            "spent_usd": spent, "estimate_usd": estimate, "limit_usd": limit, "judge_runs": judge_fits,
        })
        if self.state.machine.can(Event.STOP):
            await self._transition(Event.STOP, verdict=judge_fits and self.state.status is not State.JUDGING,
                                   reason="cost limit")

    def _judge_estimate(self) -> float:
        """What the verdict could cost: every judge reading the whole transcript (unpriced: 0)."""
        state = self.state
        transcript_tokens = sum(len(t.text) // 4 + 12 for t in state.turns) + 400
        return sum(money.estimate_call(spec, transcript_tokens, spec.max_tokens, self.settings).usd or 0.0
                   for spec in state.config.judge.judges)

    def _ensure_affordable(self, spec: Participant | JudgeSpec, request: ProviderRequest) -> None:
        """Raise `BudgetExceeded` rather than let a call that could cross the cost limit be made."""
        limit = self.state.config.budget.cost_limit
        if limit is None:
            return
        estimate = self._estimate([(spec, request)])
        if self.state.ledger.total_usd + estimate > limit:
            raise BudgetExceeded(f"the {request.purpose} call could cost up to ${estimate:.4f}", estimate)

    async def _check_warning(self) -> None:
        """After a step: the actual spending crossed warn-at (once per debate)."""
        budget = self.state.config.budget
        spent = self.state.ledger.total_usd
        if money.check_budget(spent, 0.0, self._warn_at(), None) != "warn":
            return
        await self._warn(spent, f"spending reached ${spent:.4f}, at or above the ${budget.warn_at:.4f} "
                                "warning threshold")

    def _warn_at(self) -> float | None:
        """The warning threshold, until the (one) warning has been given."""
        return None if self.state.cost_warned else self.state.config.budget.warn_at

    async def _warn(self, spent: float, message: str) -> None:
        await self._commit(EventKind.WARNING, {
            "type": "cost_warning", "message": message, "spent_usd": spent,
            "warn_at": self.state.config.budget.warn_at,
        }, idem_key="cost_warning")
        if self.state.machine.can(Event.COST_WARNING):
            await self._transition(Event.COST_WARNING)
