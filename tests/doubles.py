"""Test doubles shared by several test modules (the provider source itself ships in
`webapp.providers.demo.OneProvider`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from webapp.providers.base import ProviderRequest, StreamItem
from webapp.providers.demo import RecordingDemoProvider


class HeldDemo(RecordingDemoProvider):
    """An instant demo model that stops at `gate` for the first request matching `when`, after
    streaming `after` items (0: before anything), and sets `reached` when it gets there — so a test
    can act while a model is, say, mid-turn or judging."""

    def __init__(self, when: Callable[[ProviderRequest], bool], after: int = 0) -> None:
        super().__init__("demo-instant", speed=0, failures={})
        self.when = when
        self.after = after
        self.reached = asyncio.Event()
        self.gate = asyncio.Event()

    async def _hold(self, request: ProviderRequest, streamed: int) -> None:
        if streamed == self.after and not self.gate.is_set() and self.when(request):
            self.reached.set()
            await self.gate.wait()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        await self._hold(request, 0)
        streamed = 0
        async for item in super().stream(request):
            yield item
            streamed += 1
            await self._hold(request, streamed)


def mid_second_turn() -> HeldDemo:
    """Held three words into the debate's second turn."""
    return HeldDemo(lambda r: r.context.get("turn_number") == 2, after=3)
