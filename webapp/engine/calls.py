"""Provider calls for a debate session: streaming with time limits, bounded automatic retries, live
chunks for spectators, and the cost of every call — also of an attempt that was cut off, timed out
or cancelled, which a paid API bills all the same: it is counted from the usage the provider
reported, or estimated from the text received, and recorded (a `call_cost` note) as such.

Each call's output allowance is sized to the money left first (see spending.py), and its time
limits are those of its provider's kind (local servers get far more time than hosted APIs).

A mixin of `DebateSession` (see runner.py), kept apart so each module holds one concern.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from webapp.engine import budget as money
from webapp.engine.events import CallCostNote, CallRecord, Payload, RetryNote, error_info
from webapp.engine.limits import EndpointLimiter, endpoint_key, limit_for
from webapp.engine.schedule import TurnSlot
from webapp.engine.stream import LiveChunk, LiveTurn, LiveTurnAborted, LiveTurnStarted
from webapp.models import JudgeSpec, Participant, Timeouts, Usage, utcnow
from webapp.providers.base import (
    Completion,
    ErrorKind,
    Provider,
    ProviderError,
    ProviderRequest,
    TextDelta,
    estimate_request_tokens,
    estimate_tokens,
)

if TYPE_CHECKING:
    from webapp.engine.state import DebateState
    from webapp.engine.stream import Broadcaster
    from webapp.models import DebateEvent
    from webapp.settings import Settings

AUTO_RETRIES = 3  # retryable failures of one call retried automatically before the debate errors
TIMEOUT_RETRIES = 1  # a timed-out call is retried exactly once
# Failures after which the request is known to have reached the model, so its input was billed even
# when no text came back (a rate limit or an HTTP error before the stream costs nothing).
BILLED_REASONS = frozenset({"timeout", "cut_stream"})
EMPTY_RETRIES = 1  # an empty reply to a turn is asked for again once
EMPTY_TWICE = "the model returned an empty reply twice"


class ProviderSource(Protocol):
    """Gives the provider for a participant or judge (reusing connections)."""

    def get(self, spec: Participant | JudgeSpec) -> Provider: ...


TaskFactory = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


@dataclass
class CallResult:
    """A finished provider call."""

    text: str
    usage: Usage
    finish_reason: str | None
    attempt: int
    started_at: Any
    finished_at: Any
    first_token_s: float | None
    cost_usd: float | None
    cost_source: str
    model_label: str
    max_tokens: int = 0  # the output allowance the request was sent with


@dataclass
class Received:
    """What one attempt got before it ended, well or not."""

    parts: list[str] = field(default_factory=list)
    first_token_s: float | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)


class ProviderCalls:
    """Making provider calls on behalf of a debate session."""

    if TYPE_CHECKING:  # provided by DebateSession
        state: DebateState
        providers: ProviderSource
        settings: Settings
        backoff_base: float
        rng: random.Random
        limiter: EndpointLimiter
        broadcaster: Broadcaster
        live: dict[str, LiveTurn]

        @property
        def id(self) -> str: ...

        async def _commit(self, payload: Payload, idem_key: str | None = None) -> DebateEvent | None: ...

        def _budget_fit(self, spec: Participant | JudgeSpec,
                        request: ProviderRequest) -> tuple[ProviderRequest, float]: ...

        def _budget_hold(self, key: int, usd: float) -> None: ...

        def _budget_release(self, key: int) -> None: ...

        def _count_spending(self, usd: float | None) -> None: ...

        def _budget_note_cap(self, request: ProviderRequest, tokens: int) -> None: ...


    async def _call(self, spec: Participant | JudgeSpec, request: ProviderRequest,
                    slot: TurnSlot | None = None) -> CallResult:
        """One call with bounded automatic retries; raises ProviderError when they are exhausted, and
        `BudgetExceeded` when not even a minimal answer fits in the money left (checked before every
        attempt: a failed attempt may have spent some).

        Each attempt first takes a slot of its endpoint (see limits.py), queueing while the server is
        busy with as many calls as it takes; the retry waits are spent without one. A turn's reply
        that is empty (only whitespace) is asked for once more, then fails the turn."""
        retries = timeouts = empties = 0
        attempt = 0
        limits = self._timeouts_for(spec)
        request = request.model_copy(update={"connect_timeout": limits.connect,
                                             "first_token_timeout": limits.first_token})
        what = slot.key if slot else request.purpose
        endpoint, allowed = endpoint_key(spec), limit_for(spec, self.state.config)
        while True:
            attempt += 1
            received = Received()
            try:
                async with self.limiter.slot(endpoint, allowed, self._on_queued(slot, attempt)):
                    try:
                        fitted, worst = self._budget_fit(spec, request)
                    except Exception as exc:  # no money left for it (`BudgetExceeded`): not waiting any more
                        if slot is not None:
                            self._abort_live(slot.key, str(exc))
                        raise
                    if slot is not None and fitted.max_tokens < request.max_tokens:
                        self._budget_note_cap(request, fitted.max_tokens)
                    request = fitted
                    hold = id(received)
                    self._budget_hold(hold, worst)  # while in flight, its worst case is not money left
                    try:
                        result = await self._call_once(spec, request, slot, attempt, limits, received)
                    finally:
                        self._budget_release(hold)
            except ProviderError as exc:
                if slot is not None:
                    self._abort_live(slot.key, str(exc))
                await self._record_cut_off(spec, request, received, what, exc.reason, exc)
                if not exc.retryable:
                    raise
                if exc.reason == "timeout":
                    if timeouts >= TIMEOUT_RETRIES:
                        raise
                    timeouts += 1
                else:
                    if retries >= AUTO_RETRIES:
                        raise
                    retries += 1
                delay = wait_before_retry(exc, self.backoff_base, retries + timeouts,
                                          self.settings.retry_after_cap, self.rng)
                await self._commit(RetryNote(turn=what, attempt=attempt, error=error_info(exc),
                                             wait_s=round(delay, 3)))
                await asyncio.sleep(delay)
                continue
            except asyncio.CancelledError:  # paused, stopped, or a sibling in a parallel phase failed
                with contextlib.suppress(Exception):
                    await self._record_cut_off(spec, request, received, what, "cancelled")
                raise
            self._count_spending(result.cost_usd)
            if slot is not None and not result.text.strip():
                empties += 1
                await self._record_empty(spec, request, result, what, attempt, empties)
                continue
            return result

    def _on_queued(self, slot: TurnSlot | None, attempt: int) -> Callable[[], None] | None:
        """What to do when an attempt at a turn must wait for its endpoint: the speaker shows as
        waiting for the server (a live turn marked `queued`, replaced when the attempt starts)."""
        if slot is None:
            return None

        def queued() -> None:
            self.live[slot.key] = LiveTurn(slot.key, slot.speaker, slot.phase, slot.round, slot.act, attempt,
                                           queued=True)
            self.broadcaster.emit(LiveTurnStarted(self.id, slot.key, slot.speaker, slot.phase, slot.round,
                                                  slot.act, attempt, queued=True))

        return queued

    async def _record_empty(self, spec: Participant | JudgeSpec, request: ProviderRequest, result: CallResult,
                            what: str, attempt: int, empties: int) -> None:
        """A turn's reply was empty: its cost is recorded (it was paid for), and it is asked for again
        once; the second empty reply fails the turn."""
        entry = self._cost_record(spec, request, result.usage, result.cost_usd, result.cost_source)
        entry = entry.model_copy(update={"cut_off": "empty_reply"})
        await self._commit(CallCostNote(turn=what, purpose=request.purpose, reason="empty_reply", calls=[entry]))
        if empties >= EMPTY_RETRIES + 1:
            self._abort_live(what, EMPTY_TWICE)
            raise ProviderError(ErrorKind.RETRYABLE, spec.provider, EMPTY_TWICE, reason="empty_reply")
        error = ProviderError(ErrorKind.RETRYABLE, spec.provider, "the model returned an empty reply",
                              reason="empty_reply")
        self._abort_live(what, error.message)
        await self._commit(RetryNote(turn=what, attempt=attempt, error=error_info(error), wait_s=0))

    def _timeouts_for(self, spec: Participant | JudgeSpec) -> Timeouts:
        """The debate's timeouts as they apply to this provider's kind (local servers: generous)."""
        return self.state.config.timeouts.for_server(money.is_local_server(spec))

    @staticmethod
    def _cost_record(spec: Participant | JudgeSpec, request: ProviderRequest, usage: Usage, usd: float | None,
                     source: str) -> CallRecord:
        """A call's entry for the ledger (the `calls` of an event)."""
        return CallRecord(model=f"{spec.provider}:{spec.model}", usage=usage, cost_usd=usd, cost_source=source,
                          purpose=request.purpose, participant=getattr(spec, "id", "judge") or "judge")

    async def _record_cut_off(self, spec: Participant | JudgeSpec, request: ProviderRequest, received: Received,
                              what: str, reason: str, error: ProviderError | None = None) -> None:
        """Count and record what an attempt that ended without its answer was billed: the usage the
        provider reported with the failure, or an estimate from the text received (the input too, once
        the request is known to have reached the model). Nothing when nothing was billed."""
        reported = error.extra.get("usage") if error is not None else None
        if isinstance(reported, Usage):
            usage = reported
        elif isinstance(reported, dict):
            usage = Usage.model_validate(reported)
        elif received.parts or reason in BILLED_REASONS:
            usage = Usage(input_tokens=estimate_request_tokens(request),
                          output_tokens=estimate_tokens(received.text), estimated=True)
        else:
            return
        cost = money.cost_of(spec, usage, self.settings)
        self._count_spending(cost.usd)
        record = self._cost_record(spec, request, usage, cost.usd, cost.source).model_copy(update={"cut_off": reason})
        await self._commit(CallCostNote(turn=what, purpose=request.purpose, reason=reason, calls=[record]))

    async def _call_once(self, spec: Participant | JudgeSpec, request: ProviderRequest, slot: TurnSlot | None,
                         attempt: int, limits: Timeouts, received: Received) -> CallResult:
        provider = self.providers.get(spec)
        started, t0 = utcnow(), time.monotonic()
        completion: Completion | None = None
        if slot is not None:
            self.live[slot.key] = LiveTurn(slot.key, slot.speaker, slot.phase, slot.round, slot.act, attempt)
            self.broadcaster.emit(LiveTurnStarted(self.id, slot.key, slot.speaker, slot.phase, slot.round,
                                                  slot.act, attempt))
        turn_limit = first_limit = None
        try:
            async with asyncio.timeout(limits.turn) as turn_limit:
                stream = provider.stream(request)
                try:
                    async with asyncio.timeout(limits.first_token) as first_limit:
                        async for item in stream:
                            if isinstance(item, TextDelta):
                                if received.first_token_s is None:
                                    received.first_token_s = time.monotonic() - t0
                                    first_limit.reschedule(None)
                                received.parts.append(item.text)
                                if slot is not None and slot.key in self.live:
                                    self.live[slot.key].parts.append(item.text)
                                    self.broadcaster.emit(LiveChunk(self.id, slot.key, slot.speaker, item.text))
                            elif isinstance(item, Completion):
                                completion = item
                finally:
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        with contextlib.suppress(Exception):
                            await aclose()
        except TimeoutError:
            raise ProviderError(ErrorKind.RETRYABLE, spec.provider,
                                _timeout_message(limits, turn_limit, first_limit, received), reason="timeout") from None
        if completion is None:
            raise ProviderError(ErrorKind.RETRYABLE, spec.provider,
                                "the stream ended without its final event (cut stream)", reason="cut_stream")
        cost = money.cost_of(spec, completion.usage, self.settings)
        return CallResult(
            text=received.text, usage=completion.usage, finish_reason=completion.finish_reason,
            attempt=attempt, started_at=started, finished_at=utcnow(), first_token_s=received.first_token_s,
            cost_usd=cost.usd, cost_source=cost.source, model_label=f"{spec.provider}:{spec.model}",
            max_tokens=request.max_tokens,
        )

    async def _aux_call(self, spec: Participant | JudgeSpec, request: ProviderRequest,
                        commit_cost: bool = False) -> tuple[str, CallRecord]:
        """A non-turn call (judge, summary, question): returns its text and a cost record. With
        `commit_cost`, the cost is committed at once (a `call_cost` note) — for calls made side by side,
        whose event would otherwise be lost with the others when one fails — and the caller must not
        store the record again.

        Capped to the money left; raises `BudgetExceeded` when not even a minimal answer fits."""
        result = await self._call(spec, request)
        entry = self._cost_record(spec, request, result.usage, result.cost_usd, result.cost_source)
        if commit_cost:
            what = str(request.context.get("turn_key") or request.purpose)
            await self._commit(CallCostNote(turn=what, purpose=request.purpose, reason="completed", calls=[entry]))
        return result.text, entry

    def _abort_live(self, key: str, reason: str) -> None:
        # A turn whose commit is in the log stays live until the commit returns (turns.py); a pause or stop
        # heard in between (a listener of that very commit) must not call it cut off.
        if self.live.pop(key, None) is not None and key not in self.state.turn_keys:
            self.broadcaster.emit(LiveTurnAborted(self.id, key, reason))


def _timeout_message(limits: Timeouts, turn_limit: asyncio.Timeout | None, first_limit: asyncio.Timeout | None,
                     received: Received) -> str:
    """Which time limit fired, and its value: the turn's, or the first token's."""
    if turn_limit is not None and turn_limit.expired():
        got = (f"; the first token came after {received.first_token_s:.1f} s"
               if received.first_token_s is not None else "; no token had come")
        return f"timed out: the turn took longer than the turn timeout of {limits.turn:g} s{got}"
    if first_limit is not None and first_limit.expired():
        return f"timed out: no first token within the first-token timeout of {limits.first_token:g} s"
    return "timed out"


def wait_before_retry(exc: ProviderError, backoff_base: float, retry_number: int, cap: float,
                      rng: random.Random) -> float:
    """How long to wait before retry number `retry_number` (1, 2, …): full jitter, a uniformly random
    wait up to the exponential backoff, so calls that failed together do not retry together. A
    `Retry-After` from the server is waited for at least ("retry now", 0, adds no floor); `cap` bounds
    every wait, the server's included."""
    backoff = min(cap, backoff_base * 2 ** (retry_number - 1))
    floor = min(cap, exc.retry_after) if exc.retry_after else 0.0
    return floor + rng.uniform(0, max(0.0, min(backoff, cap - floor)))
