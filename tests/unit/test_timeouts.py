"""Timeouts by kind of provider: a local server (which may load its model and generate on a CPU)
gets far more time than a hosted API unless the debate sets a timeout itself; configs stored with
explicit timeouts keep them."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import HOSTED_TIMEOUTS, LOCAL_TIMEOUTS, DebateConfig, JudgeConfig, JudgeSpec, Participant, Timeouts
from webapp.providers.demo import OneProvider
from webapp.settings import Settings


def test_defaults_depend_on_the_kind_of_server() -> None:
    timeouts = Timeouts()
    assert timeouts.for_server(local=False).model_dump() == HOSTED_TIMEOUTS
    assert timeouts.for_server(local=True).model_dump() == LOCAL_TIMEOUTS
    assert LOCAL_TIMEOUTS["first_token"] >= 300 and LOCAL_TIMEOUTS["turn"] >= 900
    assert HOSTED_TIMEOUTS == {"connect": 10.0, "first_token": 60.0, "turn": 120.0}


def test_a_timeout_given_applies_to_every_kind() -> None:
    timeouts = Timeouts(turn=30)
    assert timeouts.for_server(local=True).turn == 30 and timeouts.for_server(local=False).turn == 30
    assert timeouts.for_server(local=True).first_token == LOCAL_TIMEOUTS["first_token"]


def test_empty_timeouts_are_stored_as_empty_and_read_back_as_empty() -> None:
    config = DebateConfig(topic="Tabs or spaces?", timeouts=Timeouts(first_token=45))
    stored = config.model_dump(mode="json")
    assert stored["timeouts"] == {"connect": None, "first_token": 45.0, "turn": None}
    loaded = DebateConfig.model_validate(stored).timeouts
    assert loaded.for_server(local=True).model_dump() == {**LOCAL_TIMEOUTS, "first_token": 45.0}


def test_a_config_stored_with_explicit_timeouts_still_loads_and_keeps_them() -> None:
    stored = {"topic": "Tabs or spaces?", "timeouts": {"connect": 10.0, "first_token": 60.0, "turn": 120.0}}
    loaded = DebateConfig.model_validate(stored).timeouts
    assert loaded.for_server(local=True).model_dump() == HOSTED_TIMEOUTS  # as it ran before


def test_limits_are_still_checked() -> None:
    with pytest.raises(ValueError, match="900"):
        Timeouts(first_token=1000)


async def test_each_call_runs_under_its_providers_timeouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake-openai-key-0000")
    source = OneProvider()  # every call goes to one recording demo model; the specs say what kind it was for
    db = tmp_path / "db.sqlite3"
    engine = await Engine.open(db, settings=Settings(_env_file=None, db=db), providers=source)
    try:
        session = await engine.start(DebateConfig(
            topic="Tabs or spaces?", format="round-limited", rounds=1,
            participants=[Participant(name="Ann", position="pro", provider="compatible", model="llama3.2",
                                      base_url="http://127.0.0.1:11434/v1"),
                          Participant(name="Bob", position="con", provider="openai", model="gpt-4o-mini")],
            judge=JudgeConfig(judges=[JudgeSpec(provider="compatible", preset="ollama", model="qwen2.5")]),
            timeouts=Timeouts(connect=5),
        ))
        assert await session.join() is State.COMPLETED
    finally:
        await engine.close()
    first_token = {(r.purpose, r.context.get("speaker")): (r.first_token_timeout, r.connect_timeout)
                   for r in source.provider.received}
    assert first_token[("turn", "ann")] == (LOCAL_TIMEOUTS["first_token"], 5)
    assert first_token[("turn", "bob")] == (HOSTED_TIMEOUTS["first_token"], 5)
    assert first_token[("verdict", None)] == (LOCAL_TIMEOUTS["first_token"], 5)
