"""A debate driven by another process on the same database (the CLI, say) can be watched in the web
app: the debate page and the dashboard pick up what that process writes to the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nicegui.testing import User

from webapp import live
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.base import ProviderRequest, StreamItem
from webapp.providers.demo import DemoProvider


class HeldSecondTurn(DemoProvider):
    """The other process's model: it stops in the middle of the second turn until released."""

    def __init__(self) -> None:
        super().__init__("demo-instant", speed=0)
        self.streaming = asyncio.Event()
        self.gate = asyncio.Event()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        count = 0
        async for item in super().stream(request):
            yield item
            count += 1
            if request.context.get("turn_number") == 2 and count == 3 and not self.gate.is_set():
                self.streaming.set()
                await self.gate.wait()


class Source:
    def __init__(self, provider: DemoProvider) -> None:
        self.provider = provider

    def get(self, spec: object) -> DemoProvider:
        return self.provider


async def test_a_debate_run_elsewhere_is_followed_on_its_page_and_the_dashboard(
    user: User, app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "FOLLOW_INTERVAL", 0.05)
    held = HeldSecondTurn()
    await user.open("/")  # the web app is up (its engine opened the database)
    other = await Engine.open(app_env, providers=Source(held))
    try:
        session = await other.start(DebateConfig(topic="Should exams be open-book?", format="oxford", rounds=1))
        await held.streaming.wait()
        await user.should_see("Should exams be open-book?", retries=40)  # the dashboard noticed it
        await user.open(f"/debate/{session.id}")
        await user.should_see(marker="status-running")
        held.gate.set()
        assert await session.join() is State.COMPLETED
        await user.should_see(marker="status-completed", retries=60)  # followed from the log
        await user.should_see("Winner:", retries=20)
    finally:
        await other.close()
