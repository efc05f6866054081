"""Provider calls for a debate session: streaming with time limits, bounded automatic retries, live
chunks for spectators, and the cost of every call.

A mixin of `DebateSession` (see runner.py), kept apart so each module holds one concern.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from webapp.engine import budget as money
from webapp.engine.schedule import TurnSlot
from webapp.engine.stream import LiveChunk, LiveTurn, LiveTurnAborted, LiveTurnStarted
from webapp.models import EventKind, JudgeSpec, Participant, Usage, utcnow
from webapp.providers.base import (
    Completion,
    ErrorKind,
    Provider,
    ProviderError,
    ProviderRequest,
    TextDelta,
)

if TYPE_CHECKING:
    from webapp.engine.state import DebateState
    from webapp.engine.stream import Broadcaster
    from webapp.models import DebateEvent
    from webapp.settings import Settings

AUTO_RETRIES = 3  # retryable failures of one call retried automatically before the debate errors
TIMEOUT_RETRIES = 1  # a timed-out call is retried exactly once


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


class ProviderCalls:
    """Making provider calls on behalf of a debate session."""

    if TYPE_CHECKING:  # provided by DebateSession
        state: DebateState
        providers: ProviderSource
        settings: Settings
        backoff_base: float
        broadcaster: Broadcaster
        live: dict[str, LiveTurn]
        id: str

        async def _commit(self, kind: EventKind, data: dict[str, Any], idem_key: str | None = None,
                          transition: Any = None) -> DebateEvent | None: ...

        def _ensure_affordable(self, spec: Participant | JudgeSpec, request: ProviderRequest) -> None: ...


    async def _call(self, spec: Participant | JudgeSpec, request: ProviderRequest,
                    slot: TurnSlot | None = None) -> CallResult:
        """One call with bounded automatic retries; raises ProviderError when they are exhausted."""
        retries = timeouts = 0
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._call_once(spec, request, slot, attempt)
            except ProviderError as exc:
                if slot is not None:
                    self._abort_live(slot.key, str(exc))
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
                delay = min(_wait_before_retry(exc, self.backoff_base, retries + timeouts),
                            self.settings.retry_after_cap)
                await self._commit(EventKind.NOTE, {
                    "type": "retry", "turn": slot.key if slot else request.purpose, "attempt": attempt,
                    "error": exc.to_dict(), "wait_s": round(delay, 3),
                })
                await asyncio.sleep(delay)

    async def _call_once(self, spec: Participant | JudgeSpec, request: ProviderRequest, slot: TurnSlot | None,
                         attempt: int) -> CallResult:
        provider = self.providers.get(spec)
        timeouts = self.state.config.timeouts
        started, t0 = utcnow(), time.monotonic()
        parts: list[str] = []
        completion: Completion | None = None
        first_token_s: float | None = None
        if slot is not None:
            self.live[slot.key] = LiveTurn(slot.key, slot.speaker, slot.phase, slot.round, slot.act, attempt)
            self.broadcaster.emit(LiveTurnStarted(self.id, slot.key, slot.speaker, slot.phase, slot.round,
                                                  slot.act, attempt))
        try:
            async with asyncio.timeout(timeouts.turn):
                stream = provider.stream(request)
                try:
                    async with asyncio.timeout(timeouts.first_token) as first:
                        async for item in stream:
                            if isinstance(item, TextDelta):
                                if first_token_s is None:
                                    first_token_s = time.monotonic() - t0
                                    first.reschedule(None)
                                parts.append(item.text)
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
            which = "first token" if first_token_s is None else "turn"
            limit = timeouts.first_token if first_token_s is None else timeouts.turn
            raise ProviderError(ErrorKind.RETRYABLE, spec.provider,
                                f"timed out waiting for the {which} after {limit:g} s", reason="timeout") from None
        if completion is None:
            raise ProviderError(ErrorKind.RETRYABLE, spec.provider,
                                "the stream ended without its final event (cut stream)", reason="cut_stream")
        cost = money.cost_of(spec, completion.usage, self.settings)
        return CallResult(
            text="".join(parts), usage=completion.usage, finish_reason=completion.finish_reason,
            attempt=attempt, started_at=started, finished_at=utcnow(), first_token_s=first_token_s,
            cost_usd=cost.usd, cost_source=cost.source, model_label=f"{spec.provider}:{spec.model}",
        )

    async def _aux_call(self, spec: Participant | JudgeSpec, request: ProviderRequest) -> tuple[str, dict[str, Any]]:
        """A non-turn call (judge, summary, question): returns its text and a cost record.

        Raises `BudgetExceeded` instead of making a call that could cross the cost limit."""
        self._ensure_affordable(spec, request)
        result = await self._call(spec, request)
        record = {
            "model": result.model_label, "usage": result.usage.model_dump(), "cost_usd": result.cost_usd,
            "cost_source": result.cost_source, "purpose": request.purpose,
            "participant": getattr(spec, "id", "judge") or "judge",
        }
        return result.text, record

    def _abort_live(self, key: str, reason: str) -> None:
        if self.live.pop(key, None) is not None:
            self.broadcaster.emit(LiveTurnAborted(self.id, key, reason))


def _wait_before_retry(exc: ProviderError, backoff_base: float, retry_number: int) -> float:
    """Exponential backoff, unless the server said when: "retry now" (0) is honoured as such,
    a later time is waited for at least (the caller caps it)."""
    backoff = backoff_base * 2 ** (retry_number - 1)
    if exc.retry_after is None:
        return backoff
    return 0.0 if exc.retry_after == 0 else max(backoff, exc.retry_after)

