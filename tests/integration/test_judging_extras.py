"""Judging details: preparation notes are never judged; STOP during judging keeps the judge's work."""

from __future__ import annotations

from pathlib import Path

from tests.doubles import HeldDemo
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider, RecordingDemoProvider


async def test_preparation_notes_are_not_shown_to_the_judge(tmp_path: Path) -> None:
    provider = RecordingDemoProvider("demo-instant", speed=0)
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider))
    try:
        session = await engine.start(DebateConfig(topic="Is tea better than coffee?", format="classic",
                                                  questions=1, show_preparation=True))
        assert await session.join() is State.COMPLETED
        prep = [t for t in session.state.turns if t.act == "prepare"]
        assert prep and all(t.visible for t in prep)  # shown to the audience…
        [verdict_request] = [r for r in provider.received if r.purpose == "verdict"]
        prompt = verdict_request.messages[0].content
        assert "Preparation" not in prompt and prep[0].text[:60] not in prompt  # …but never judged
    finally:
        await engine.close()


async def test_stop_with_verdict_during_judging_lets_the_judge_finish_once(tmp_path: Path) -> None:
    provider = HeldDemo(lambda r: r.purpose == "verdict")
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider))
    try:
        session = await engine.start(DebateConfig(topic="Should homework be banned?", format="structured"))
        await provider.reached.wait()
        await session.stop(verdict=True)
        provider.gate.set()
        assert await session.join() is State.STOPPED
        assert session.state.verdict is not None and session.state.verdict.available
        assert [r.purpose for r in provider.received].count("verdict") == 1  # not cancelled and asked again
    finally:
        await engine.close()
