"""Rematches with sides swapped: the swapped cast, the series link and query, the gate, the series
result, and `python -m webapp rematch ID --swap-sides`."""

from __future__ import annotations

import io
import json
import re
import sqlite3
from pathlib import Path

import pytest

from webapp.access.gate import Gate
from webapp.access.roles import CLI, PermissionDenied, Principal, Role
from webapp.cli import EXIT_OK, EXIT_USAGE, main
from webapp.engine.engine import Engine
from webapp.engine.formats import get_format
from webapp.engine.machine import State
from webapp.engine.schedule import ConfigError, plan, prepare_config
from webapp.engine.series import NotEnded, rematch_config, series_result, series_states, swapped_participants
from webapp.engine.state import DebateState
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider
from webapp.store.accounts import Accounts

TOPIC = "Should cities ban private cars from their centres?"


def cfg(fmt: str = "classic", cast: list[tuple[str, str]] | None = None, **extra: object) -> DebateConfig:
    people = [{"name": n, "position": p, "model": f"model-{i}", "color": ["#111111", "#222222", "#333333",
                                                                          "#444444"][i]}
              for i, (n, p) in enumerate(cast or [])]
    return prepare_config(DebateConfig.model_validate({"topic": TOPIC, "format": fmt, "participants": people,
                                                       **extra}))


# --- the swapped cast --------------------------------------------------------------------------------


def test_two_debaters_exchange_positions_and_keep_id_model_and_colour() -> None:
    original = cfg("classic", [("Ada", "pro"), ("Bo", "con")])
    swapped = swapped_participants(original)
    assert [(p.id, p.name, p.position, p.model, p.color) for p in swapped] == [
        ("bo", "Bo", "pro", "model-1", "#222222"), ("ada", "Ada", "con", "model-0", "#111111")]


def test_seat_names_stay_with_their_seat() -> None:
    original = cfg("classic")  # the format's cast: Affirmative (pro), Negative (con), both demo
    original = DebateConfig.model_validate({**original.model_dump(), "participants": [
        {**original.participants[0].model_dump(), "model": "m-a"}, {**original.participants[1].model_dump(),
                                                                    "model": "m-b"}]})
    swapped = swapped_participants(original)
    assert [(p.name, p.position, p.model, p.id) for p in swapped] == [
        ("Affirmative", "pro", "m-b", "negative"), ("Negative", "con", "m-a", "affirmative")]


def test_more_debaters_rotate_by_one_seat_and_a_moderator_stays() -> None:
    original = cfg("six-phase", [("Ada", "pro"), ("Bo", "con"), ("Mo", "moderator")])
    assert [(p.name, p.position) for p in swapped_participants(original)] == [
        ("Bo", "pro"), ("Ada", "con"), ("Mo", "moderator")]
    round_table = cfg("roundtable", [("A", "optimist"), ("B", "skeptic"), ("C", "pragmatist")])
    assert [(p.name, p.position) for p in swapped_participants(round_table)] == [
        ("C", "optimist"), ("A", "skeptic"), ("B", "pragmatist")]


def test_one_debater_cannot_be_swapped() -> None:
    config = DebateConfig.model_validate({"topic": TOPIC, "participants": [{"name": "Solo"}]})
    with pytest.raises(ConfigError, match="at least two debaters"):
        swapped_participants(config)


@pytest.mark.parametrize("fmt", ["classic", "oxford", "lincoln-douglas", "structured"])
def test_the_rematch_hears_the_same_positions_in_the_same_order_from_the_other_models(fmt: str) -> None:
    original = cfg(fmt, [("Ada", "pro"), ("Bo", "con")])
    rematch = rematch_config(original, "abc123")
    assert (rematch.rematch_of, rematch.series) == ("abc123", "abc123")

    def spoken(config: DebateConfig) -> list[tuple[str, str, str]]:
        return [(slot.phase, config.participant(slot.speaker).position, config.participant(slot.speaker).model)
                for step in plan(get_format(fmt), config) for slot in step.turns]

    before, after = spoken(original), spoken(rematch)
    assert [(phase, position) for phase, position, _ in before] == [(ph, pos) for ph, pos, _ in after]
    assert all(b[2] != a[2] for b, a in zip(before, after, strict=True))  # every slot: the other model


def test_a_rematch_of_a_rematch_stays_in_the_first_debates_series() -> None:
    second = rematch_config(cfg("classic", [("Ada", "pro"), ("Bo", "con")]), "first")
    third = rematch_config(second, "second")
    assert (third.series, third.rematch_of) == ("first", "second")
    assert [p.name for p in third.participants] == ["Ada", "Bo"]  # swapped back


# --- through the engine and the gate ------------------------------------------------------------------


@pytest.fixture
async def engine(tmp_path: Path):
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(), backoff_base=0.01)
    yield engine
    await engine.close()


async def finished(engine: Engine, topic: str = TOPIC) -> str:
    config = DebateConfig.model_validate({"topic": topic, "format": "round-limited", "rounds": 1,
                                          "participants": [{"name": "Ada", "position": "pro", "model": "demo"},
                                                           {"name": "Bo", "position": "con",
                                                            "model": "demo-instant"}]})
    session = await engine.start(config)
    assert await session.join() is State.COMPLETED
    return session.id


async def test_the_gate_starts_the_rematch_in_the_series_and_audits_it(engine: Engine) -> None:
    first = await finished(engine)
    session = await Gate(engine, CLI).rematch(first)
    assert await session.join() is State.COMPLETED
    config = session.state.config
    assert (config.rematch_of, config.series) == (first, first)
    assert [(p.name, p.position) for p in config.participants] == [("Bo", "pro"), ("Ada", "con")]
    assert await engine.store.series_ids(first) == [first, session.id]
    assert await engine.store.series_ids(session.id) == [session.id]  # named by the first debate's id
    rows, _ = await Accounts(engine.store).audit_page()
    rematch = next(r for r in rows if r.action == "rematch")
    assert (rematch.actor, rematch.debate_id, rematch.outcome) == ("cli", session.id, "ok")
    assert json.loads(rematch.detail)["rematch_of"] == first
    # A third debate joins the same series; another debate stays out of it.
    third = await Gate(engine, CLI).rematch(session.id)
    await third.join()
    other = await finished(engine, "Another topic entirely")
    assert await engine.store.series_ids(first) == [first, session.id, third.id]
    assert other not in await engine.store.series_ids(first)
    states = await series_states(engine, engine.sessions[first].state if first in engine.sessions else
                                 DebateState.from_events(await engine.store.events(first)))
    assert [s.id for s in states] == [first, session.id, third.id]


async def test_a_viewer_is_refused_and_a_running_debate_cannot_be_rematched(engine: Engine) -> None:
    first = await finished(engine)
    viewer = Principal(name="vera", role=Role.VIEWER, kind="local")
    with pytest.raises(PermissionDenied):
        await Gate(engine, viewer).rematch(first)
    idle = await engine.create(DebateConfig(topic="Not started"))
    with pytest.raises(NotEnded, match="has not ended"):
        await Gate(engine, CLI).rematch(idle)
    rows, _ = await Accounts(engine.store).audit_page()
    assert [(r.actor, r.action, r.outcome) for r in rows if r.action in ("create", "rematch")] == [
        ("cli", "rematch", "failed"), ("vera", "create", "refused")]
    assert await engine.store.series_ids(first) == [first]  # nothing was created


# --- the series result ---------------------------------------------------------------------------------


async def series(engine: Engine) -> tuple[DebateState, DebateState]:
    first = await finished(engine)
    second = await Gate(engine, CLI).rematch(first)
    assert await second.join() is State.COMPLETED
    states = await series_states(engine, second.state)
    assert len(states) == 2
    return states[0], states[1]


def set_winner(state: DebateState, winner: str | None) -> None:
    assert state.verdict is not None
    state.verdict = state.verdict.model_copy(update={"winner": winner})


async def test_the_same_model_winning_on_both_sides(engine: Engine) -> None:
    first, second = await series(engine)
    set_winner(first, "ada")  # pro in the first debate
    set_winner(second, "ada")  # con in the rematch
    result = series_result([first, second])
    assert result is not None and result.kind == "same-model"
    assert result.headline == "Ada (demo:demo) won both sides"


async def seat_named_series(engine: Engine, models: tuple[str, str]) -> tuple[DebateState, DebateState]:
    """A series whose debaters are named only by their seats (the Oxford format's cast)."""
    config = DebateConfig.model_validate({"topic": TOPIC, "format": "oxford", "participants": [
        {"name": "Proposition", "position": "pro", "model": models[0]},
        {"name": "Opposition", "position": "con", "model": models[1]}]})
    first = await engine.start(config)
    assert await first.join() is State.COMPLETED
    second = await Gate(engine, CLI).rematch(first.id)
    assert await second.join() is State.COMPLETED
    states = await series_states(engine, second.state)
    return states[0], states[1]


async def test_a_seat_name_does_not_name_the_participant_across_the_series(engine: Engine) -> None:
    first, second = await seat_named_series(engine, ("demo", "demo-instant"))
    winner = first.config.participants[1].id  # Opposition in the first debate, Proposition in the rematch
    set_winner(first, winner)
    set_winner(second, winner)
    assert second.config.participant(winner).name == "Proposition"  # the rematch's banner: "Proposition wins"
    result = series_result([first, second])
    assert result is not None and result.kind == "same-model"
    # Not "Opposition (demo:demo-instant) won both sides" beside a banner saying "Proposition wins".
    assert result.headline == "demo:demo-instant won both sides"
    assert "Opposition" not in result.headline and "Proposition" not in result.headline


async def test_two_debaters_of_one_model_are_said_to_share_it(engine: Engine) -> None:
    first, second = await seat_named_series(engine, ("demo", "demo"))
    winner = first.config.participants[0].id
    set_winner(first, winner)
    set_winner(second, winner)
    result = series_result([first, second])
    assert result is not None
    assert result.headline == ("demo:demo, first Proposition won both sides; both sides ran demo:demo, "
                               "so no model beat another")


async def test_the_same_position_winning_twice_means_the_position_decided(engine: Engine) -> None:
    first, second = await series(engine)
    set_winner(first, "ada")  # pro
    set_winner(second, "bo")  # pro in the rematch
    result = series_result([first, second])
    assert result is not None and result.kind == "same-position"
    assert result.headline == "Each side won once: the position (pro), not the model, decided"


async def test_ties_mixed_pending_and_unjudged(engine: Engine) -> None:
    first, second = await series(engine)
    set_winner(first, None)
    set_winner(second, None)
    assert series_result([first, second]).headline == "Every debate of the series was a tie"  # type: ignore[union-attr]
    set_winner(second, "ada")
    mixed = series_result([first, second])
    assert mixed is not None and mixed.kind == "mixed"
    assert mixed.headline == "No clear result: Ada (demo:demo) won once, one tie"
    assert series_result([first]) is None  # a debate alone is no series
    pending = await Gate(engine, CLI).rematch(second.id, start=False)  # created, not started
    result = series_result([first, second, pending.state])
    assert result is not None and result.headline == "Pending: the rematch has not finished (idle)"
    await pending.stop(verdict=False)
    assert await pending.join() is State.STOPPED
    result = series_result([first, second, pending.state])
    assert result is not None and result.headline == "No series result: the rematch ended without a verdict"


# --- the index ----------------------------------------------------------------------------------------


async def test_the_series_query_uses_its_index(engine: Engine, tmp_path: Path) -> None:
    await finished(engine)
    with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM _rostrum_migrations")}
        assert "006_debate_series" in names
        plan_rows = conn.execute("EXPLAIN QUERY PLAN SELECT id FROM debates WHERE id = ? OR "
                                 "json_extract(config, '$.series') = ? ORDER BY created_at, rowid", ("x", "x"))
        assert any("debates_series" in row[3] for row in plan_rows)


# --- the CLI ------------------------------------------------------------------------------------------


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_cli_rematch_swaps_sides_and_reports_the_series(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    db = str(tmp_path / "cli.sqlite3")
    code, out = run("debate", TOPIC, "--format", "round-limited", "--rounds", "1", "--db", db,
                    "--participant", "name=Ada,model=demo,position=pro",
                    "--participant", "name=Bo,model=demo-instant,position=con")
    assert code == EXIT_OK
    first = re.search(r"Debate ([0-9a-f]{12})", out).group(1)  # type: ignore[union-attr]
    assert run("rematch", first, "--db", db)[0] == EXIT_USAGE
    assert "--swap-sides" in capsys.readouterr().err
    assert run("rematch", "nosuchid", "--swap-sides", "--db", db)[0] == EXIT_USAGE
    code, out = run("rematch", first[:6], "--swap-sides", "--db", db)
    assert code == EXIT_OK, out
    assert f"the rematch of {first} with sides swapped (series {first})" in out
    assert "Participants: Bo (pro, demo:demo-instant), Ada (con, demo:demo)" in out
    assert re.search(rf"Series {first}: (Each side won once|.* won both sides|No clear result|Every debate)", out)
    with sqlite3.connect(db) as conn:
        configs = [json.loads(r[0]) for r in conn.execute("SELECT config FROM debates ORDER BY created_at")]
    assert [(c["series"], c["rematch_of"]) for c in configs] == [(None, None), (first, first)]


def test_cli_warns_about_a_judge_of_a_debaters_family_and_still_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    db = str(tmp_path / "cli.sqlite3")
    code, _ = run("debate", TOPIC, "--format", "round-limited", "--rounds", "1", "--db", db,
                  "--participant", "name=Ada,model=llama3.1,position=pro",
                  "--participant", "name=Bo,model=qwen2.5,position=con",
                  "--judge", "model=llama3.3", "--judge", "model=gemma2")
    assert code == EXIT_OK  # a warning, not a refusal
    err = capsys.readouterr().err
    assert ("warning: judge.judges[0]: the judge demo:llama3.3 is of the Meta Llama family, like Ada; judges tend "
            "to prefer their own family's answers") in err
    assert "judge.judges[1]" not in err  # gemma2: another family
