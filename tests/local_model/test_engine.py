"""The engine against a real small local model (llama-cpp-python serving Gemma 3 270M under `make bench-local`):
the server lists what it serves, a short debate with the debaters and the judge on it ends with a verdict
parsed from the schema-constrained reply, and a convergence rating between rounds is usable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.local_model.conftest import LocalModel
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant
from webapp.providers.probe import check_server
from webapp.settings import Settings

pytestmark = pytest.mark.local_model


def _config(lm: LocalModel, fmt: str, rounds: int) -> DebateConfig:
    def debater(name: str, position: str) -> Participant:
        return Participant(name=name, position=position, provider="compatible", base_url=lm.url, model=lm.model,
                           max_tokens=40)

    return DebateConfig(topic="Should cities ban cars from their centres?", format=fmt, rounds=rounds,
                        participants=[debater("Ada", "pro"), debater("Bo", "con")],
                        judge=JudgeConfig(judges=[JudgeSpec(provider="compatible", base_url=lm.url, model=lm.model)]),
                        word_limit=30, clarification=False)


async def _run(tmp_path: Path, config: DebateConfig) -> tuple[State, DebateState]:
    db = tmp_path / "local.sqlite3"
    engine = await Engine.open(db, settings=Settings(db=db))
    try:
        session = await engine.start(config)
        status = await session.join()
        return status, session.state
    finally:
        await engine.close()


async def test_the_server_lists_the_models_it_serves(local_model: LocalModel) -> None:
    result = await check_server(local_model.url)
    assert result.answers and not result.problem
    assert {local_model.model, local_model.model2} <= set(result.models)


async def test_a_debate_on_the_local_model_ends_with_a_verdict_parsed_from_the_schema(
        local_model: LocalModel, tmp_path: Path) -> None:
    status, state = await _run(tmp_path, _config(local_model, "oxford", 1))
    assert status is State.COMPLETED
    assert len(state.turns) == 4 and all(t.text.strip() for t in state.turns)
    verdict = state.verdict
    assert verdict is not None and verdict.available, verdict
    [ruling] = verdict.rulings
    assert ruling.error is None
    # llama-cpp-python refuses json_schema with a 500; the schema travels inside json_object instead.
    assert ruling.output_mode == "json_object+schema"
    assert set(ruling.scores) == {p.id for p in state.config.participants}


async def test_a_convergence_rating_between_rounds_is_usable(local_model: LocalModel, tmp_path: Path) -> None:
    status, state = await _run(tmp_path, _config(local_model, "convergence", 2))
    assert status is State.COMPLETED
    first = state.round_decisions[1]
    assert "no usable" not in first.reason, first
    assert first.agreement is not None and 0 <= first.agreement <= 100
