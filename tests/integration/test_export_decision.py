"""Exports and `show --json` carry the panel's one rule (who won a split panel: nobody) and personas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webapp import export
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.panel import SPLIT_RULE
from webapp.engine.state import DebateState
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider

PANEL = {"judges": [{"provider": "demo", "model": "demo"}, {"provider": "demo", "model": "demo-instant"}]}


@pytest.fixture
async def engine(tmp_path: Path):
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(), backoff_base=0.01)
    yield engine
    await engine.close()


async def panel_debate(engine: Engine) -> DebateState:
    config = DebateConfig.model_validate({
        "topic": "Should juries be abolished?", "format": "round-limited", "rounds": 1, "judge": PANEL,
        "participants": [{"name": "Ada", "position": "pro", "model": "demo", "persona": "A calm retired judge."},
                         {"name": "Bo", "position": "con", "model": "demo-instant"}]})
    session = await engine.start(config)
    assert await session.join() is State.COMPLETED
    return session.state


def split_verdict(state: DebateState) -> None:
    """The judges split 1–1, and the verdict was stored when the mean score broke such a split."""
    verdict = state.verdict
    assert verdict is not None and len(verdict.rulings) == 2
    rulings = [r.model_copy(update={"winner": w, "flipped": None}) for r, w in zip(verdict.rulings, ("ada", "bo"),
                                                                                  strict=True)]
    state.verdict = verdict.model_copy(update={"rulings": rulings, "winner": "bo", "undecided_judges": []})


async def test_a_split_panel_has_no_winner_in_every_export(engine: Engine) -> None:
    state = await panel_debate(engine)
    split_verdict(state)
    data = json.loads(export.to_json(state))
    assert data["verdict"]["winner"] is None
    assert data["verdict"]["decision"] == {"winner": None, "decided_by": "split", "judges": 2, "split": "1–1",
                                           "words": "judges split 1–1: no winner", "rule": SPLIT_RULE}
    markdown = export.to_markdown(state)
    assert "**Winner:** no winner (judges split 1–1: no winner)" in markdown and "**Winner:** Bo" not in markdown
    text = export.to_text(state)
    assert "Winner: no winner (judges split 1–1: no winner)" in text and SPLIT_RULE in text


async def test_a_majority_names_its_winner_and_how(engine: Engine) -> None:
    state = await panel_debate(engine)
    verdict = state.verdict
    assert verdict is not None
    rulings = [r.model_copy(update={"winner": "bo", "flipped": None}) for r in verdict.rulings]
    state.verdict = verdict.model_copy(update={"rulings": rulings, "winner": "bo", "undecided_judges": []})
    data = json.loads(export.to_json(state))
    assert (data["verdict"]["winner"], data["verdict"]["decision"]["decided_by"]) == ("bo", "unanimous")
    assert "**Winner:** Bo (judges agree 2–0)" in export.to_markdown(state)


async def test_personas_are_in_show_json_and_every_export(engine: Engine) -> None:
    state = await panel_debate(engine)
    data = json.loads(export.to_json(state))
    assert [(p["name"], p["persona"]) for p in data["participants"]] == [("Ada", "A calm retired judge."), ("Bo", "")]
    assert "- **Persona of Ada:** A calm retired judge." in export.to_markdown(state)
    assert "  Persona: A calm retired judge." in export.to_text(state)
