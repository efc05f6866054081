"""A debate driven by another process on the same database (the CLI, say) can be watched in the web
app: the debate page and the dashboard pick up what that process writes to the log."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui.testing import User

from tests.doubles import mid_second_turn
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider
from webapp.ui.live import pace


async def test_a_debate_run_elsewhere_is_followed_on_its_page_and_the_dashboard(
    user: User, app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pace, "FOLLOW_INTERVAL", 0.05)
    held = mid_second_turn()
    await user.open("/")  # the web app is up (its engine opened the database)
    other = await Engine.open(app_env, providers=OneProvider(held))
    try:
        session = await other.start(DebateConfig(topic="Should exams be open-book?", format="oxford", rounds=1))
        await held.reached.wait()
        await user.should_see("Should exams be open-book?", retries=40)  # the dashboard noticed it
        await user.open(f"/debate/{session.id}")
        await user.should_see(marker="status-running")
        held.gate.set()
        assert await session.join() is State.COMPLETED
        await user.should_see(marker="status-completed", retries=60)  # followed from the log
        await user.should_see("Winner:", retries=20)
    finally:
        await other.close()


async def test_a_tab_shows_it_when_another_process_takes_the_debate_over(
    user: User, app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This process runs the debate and a tab watches it; another process finds it "running" without
    # a runner of its own and marks it interrupted. The tab must not keep saying "running".
    from tests.ui.helpers import demo_speed, start_demo

    monkeypatch.setattr(pace, "FOLLOW_INTERVAL", 0.05)
    await user.open("/")
    await demo_speed(monkeypatch, 5)  # a turn takes far longer than the test
    session = await start_demo("Should exams be open-book?")
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="status-running")
    other = await Engine.open(app_env, providers=OneProvider())
    try:
        assert await other.recover_interrupted() == [session.id]
        await user.should_see(marker="status-interrupted", retries=40)
        assert not session.running, "this process stopped driving a debate it no longer owns"
        assert session.view().interrupted
    finally:
        await other.close()
