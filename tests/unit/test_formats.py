"""Formats are data: each built-in format runs exactly as declared, every speaker sees what the
format says it sees (checked on the prompts the demo provider received), and invalid configurations
are refused with a message naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from webapp.engine.engine import Engine
from webapp.engine.formats import FORMATS, get_format
from webapp.engine.machine import State
from webapp.engine.prompts import describe_position
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError, plan, prepare_config
from webapp.models import Budget, DebateConfig, Participant
from webapp.providers.base import ProviderRequest
from webapp.providers.demo import OneProvider

TOPIC = "Cities should ban private cars from their centres"


class Source(OneProvider):
    """One shared instant demo model for every participant and judge."""

    def turn_requests(self) -> dict[str, ProviderRequest]:
        """Turn key -> the request that produced it (each turn is asked exactly once here)."""
        out: dict[str, ProviderRequest] = {}
        for request in self.provider.received:
            if request.purpose == "turn":
                key = request.context["turn_key"]
                assert key not in out, f"{key} was requested twice"
                out[key] = request
        return out


@pytest.fixture
def source() -> Source:
    return Source()


@pytest.fixture
async def engine(tmp_path: Path, source: Source):
    eng = await Engine.open(tmp_path / "db.sqlite3", providers=source, backoff_base=0.01)
    yield eng
    await eng.close()


async def run(engine: Engine, **config: Any) -> DebateSession:
    session = await engine.start(DebateConfig(topic=TOPIC, **config))
    assert await session.join() is State.COMPLETED
    return session


def order(session: DebateSession) -> list[tuple[str, str, str]]:
    return [(t.phase, t.speaker, t.act) for t in session.state.turns]


# --- every format, generically ------------------------------------------------------------------

ALL_FORMATS = sorted(FORMATS)


@pytest.mark.parametrize("format_id", ALL_FORMATS)
async def test_format_runs_exactly_as_declared(engine: Engine, source: Source, format_id: str):
    extra = {"clarification": False} if format_id == "collaborative" else {}
    session = await run(engine, format=format_id, **extra)
    state = session.state
    fmt = get_format(format_id)
    rounds = max(t.round for t in state.turns)
    steps = plan(fmt, state.config, rounds=rounds)

    # Turn order: the stored turns are the plan's steps, in order (parallel turns in any order).
    turns = list(state.turns)
    assert len(turns) == sum(len(s.turns) for s in steps)
    for step in steps:
        taken, turns = turns[: len(step.turns)], turns[len(step.turns) :]
        assert {t.key for t in taken} == {slot.key for slot in step.turns}
        for turn in taken:
            slot = next(s for s in step.turns if s.key == turn.key)
            assert (turn.phase, turn.round, turn.speaker, turn.act, turn.visible) == (
                slot.phase, slot.round, slot.speaker, slot.act, slot.visible)

    # Phase order: the declaration's phases, the round block repeated once per round played.
    groups = [(t.phase, t.round) for t in state.turns]
    groups = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
    first_block = next((i for i, p in enumerate(fmt.phases) if p.scope == "round"), len(fmt.phases))
    block = [p.id for p in fmt.phases if p.scope == "round"]
    expected = [(p.id, 1) for p in fmt.phases[:first_block]]
    expected += [(phase, r) for r in range(1, rounds + 1) for phase in block]
    expected += [(p.id, 1) for p in fmt.phases[first_block:] if p.scope == "once"]
    assert groups == expected
    assert list(dict.fromkeys(t.phase for t in state.turns)) == [p.id for p in fmt.phases]

    # Every speaker is told its position, in the system prompt and in the instructions.
    requests = source.turn_requests()
    assert set(requests) == {t.key for t in state.turns}
    for turn in state.turns:
        participant = state.config.participant(turn.speaker)
        request = requests[turn.key]
        assert request.context["speaker"] == turn.speaker and request.context["phase"] == turn.phase
        assert request.context["act"] == turn.act
        assert f"Your position: {describe_position(participant)}" in request.system
        assert f"Your position: {describe_position(participant)}" in request.messages[-1].content

    assert state.verdict is not None and state.verdict.available


@pytest.mark.parametrize("format_id", [f for f in ALL_FORMATS if f != "collaborative"])
async def test_each_speaker_sees_every_earlier_visible_turn_and_nothing_else(
    engine: Engine, source: Source, format_id: str
):
    """seen_turns are exactly the turns before this one that the speaker may see: public turns and
    its own private notes, minus the other turns of a parallel step (those are written at once)."""
    session = await run(engine, format=format_id)
    state = session.state
    fmt = state.format
    requests = source.turn_requests()
    for i, turn in enumerate(state.turns):
        parallel = fmt.phase(turn.phase).parallel
        expected = [
            t.key for t in state.turns[:i]
            if (t.speaker == turn.speaker or (t.visible and t.act != "prepare"))
            and not (parallel and t.phase == turn.phase and t.round == turn.round)
        ]
        assert requests[turn.key].context["seen_turns"] == expected, turn.key


# --- classic ------------------------------------------------------------------------------------

AFF, NEG = "affirmative", "negative"


def classic_order(questions: int, rounds: int = 1) -> list[tuple[str, str, str]]:
    out = [("opening", AFF, "speak"), ("opening", NEG, "speak")]
    out += [("rebuttal", AFF, "speak"), ("rebuttal", NEG, "speak")] * rounds
    out += [("cross-aff", AFF, "ask"), ("cross-aff", NEG, "answer")] * questions
    out += [("cross-neg", NEG, "ask"), ("cross-neg", AFF, "answer")] * questions
    out += [("closing", AFF, "speak"), ("closing", NEG, "speak")]
    return out


@pytest.mark.parametrize(("questions", "rounds"), [(None, None), (2, None), (1, 2)])
async def test_classic_order_affirmative_first_and_cross_examination(
    engine: Engine, questions: int | None, rounds: int | None
):
    config: dict[str, Any] = {"format": "classic"}
    if questions is not None:
        config["questions"] = questions
    if rounds is not None:
        config["rounds"] = rounds
    session = await run(engine, **config)
    got = order(session)
    assert sorted(got[:2]) == [("preparation", AFF, "prepare"), ("preparation", NEG, "prepare")]
    assert got[2:] == classic_order(questions or 3, rounds or 1)
    assert [t.round for t in session.state.turns if t.phase == "rebuttal"] == sorted(
        list(range(1, (rounds or 1) + 1)) * 2)


async def test_classic_context_rebuttal_cross_examination_and_closing(engine: Engine, source: Source):
    session = await run(engine, format="classic")
    turns = session.state.turns
    requests = source.turn_requests()
    key = {(t.phase, t.speaker, t.act, t.index): t.key for t in turns}

    def seen(turn_key: str) -> set[str]:
        return set(requests[turn_key].context["seen_turns"])

    opening = {AFF: key["opening", AFF, "speak", 0], NEG: key["opening", NEG, "speak", 1]}
    rebuttal = {AFF: key["rebuttal", AFF, "speak", 0], NEG: key["rebuttal", NEG, "speak", 1]}
    # A rebuttal sees the opponent's opening (and answers it).
    assert opening[NEG] in seen(rebuttal[AFF]) and opening[AFF] in seen(rebuttal[NEG])
    assert requests[rebuttal[AFF]].context["opponent_last"]["key"] == opening[NEG]
    assert requests[rebuttal[NEG]].context["opponent_last"]["key"] == rebuttal[AFF]
    # A cross-examination question sees the opponent's opening and rebuttal.
    first_aff_question = key["cross-aff", AFF, "ask", 0]
    first_neg_question = key["cross-neg", NEG, "ask", 0]
    assert {opening[NEG], rebuttal[NEG]} <= seen(first_aff_question)
    assert {opening[AFF], rebuttal[AFF]} <= seen(first_neg_question)
    # An answer answers the question just asked.
    for turn in turns:
        if turn.act == "answer":
            question = turns[turns.index(turn) - 1]
            assert question.act == "ask" and question.speaker != turn.speaker
            assert requests[turn.key].context["opponent_last"]["key"] == question.key
    # A closing sees every earlier statement the speaker may see: all public turns, its own notes.
    for side in (AFF, NEG):
        closing = next(t for t in turns if t.phase == "closing" and t.speaker == side)
        earlier = turns[: turns.index(closing)]
        expected = {t.key for t in earlier if t.visible or t.speaker == side}
        assert seen(closing.key) == expected
        assert len(expected) >= 16


@pytest.mark.parametrize("show_preparation", [False, True])
async def test_classic_preparation_is_parallel_and_private(engine: Engine, source: Source, show_preparation: bool):
    session = await run(engine, format="classic", show_preparation=show_preparation)
    turns = session.state.turns
    requests = source.turn_requests()
    prep = {t.speaker: t for t in turns if t.phase == "preparation"}
    assert set(prep) == {AFF, NEG}
    assert all(t.act == "prepare" and t.visible is show_preparation for t in prep.values())
    # Parallel: neither preparation saw anything, and they were asked before either finished.
    assert all(requests[t.key].context["seen_turns"] == [] for t in prep.values())
    assert [step.parallel for step in plan(session.state.format, session.state.config)][:1] == [True]
    # Private: the author sees its own notes later; the opponent never does, in any prompt.
    for side, other in ((AFF, NEG), (NEG, AFF)):
        for turn in turns:
            if turn.phase == "preparation":
                continue
            context = requests[turn.key].context
            if turn.speaker == side:
                assert prep[side].key in context["seen_turns"]
                assert prep[other].key not in context["seen_turns"]
                assert context.get("opponent_last", {}).get("key") != prep[other].key
                assert prep[other].text not in requests[turn.key].messages[-1].content
    # The judge rules on the debate, not on private notes.
    verdict_requests = [r for r in source.provider.received if r.purpose == "verdict"]
    assert verdict_requests
    if not show_preparation:
        assert all(prep[AFF].text not in r.messages[-1].content for r in verdict_requests)


# --- the other formats --------------------------------------------------------------------------


async def test_six_phase_rebuttal_and_closing_con_first_synthesis_last(engine: Engine):
    session = await run(engine, format="six-phase")
    got = order(session)
    expected = []
    for phase in ("opening", "constructive-economic", "constructive-ethical", "constructive-practical"):
        expected += [(phase, "pro", "speak"), (phase, "con", "speak")]
    expected += [("cross-examination", "pro", "ask"), ("cross-examination", "con", "answer"),
                 ("cross-examination", "con", "ask"), ("cross-examination", "pro", "answer")]
    expected += [("rebuttal", "con", "speak"), ("rebuttal", "pro", "speak")]
    expected += [("closing", "con", "speak"), ("closing", "pro", "speak")]
    expected += [("synthesis", "moderator", "synthesize")]
    assert got == expected


@pytest.mark.parametrize(("rounds", "played"), [(None, 3), (1, 1), (10, 10)])
async def test_oxford_rounds_default_three_range_one_to_ten(engine: Engine, rounds: int | None, played: int):
    session = await run(engine, format="oxford", **({"rounds": rounds} if rounds else {}))
    turns = session.state.turns
    assert [(t.phase, t.round) for t in turns[:2]] == [("opening", 1), ("opening", 1)]
    rebuttals = [t for t in turns if t.phase == "rebuttal"]
    assert [t.round for t in rebuttals] == [r for r in range(1, played + 1) for _ in range(2)]
    assert [t.speaker for t in rebuttals] == ["proposition", "opposition"] * played
    assert session.state.total_rounds == played


@pytest.mark.parametrize("count", [3, 5, 8])
async def test_roundtable_takes_three_to_eight_participants(engine: Engine, count: int):
    cast = [Participant(name=f"Voice {i}", position=f"view {i}") for i in range(count)]
    session = await run(engine, format="roundtable", participants=cast, rounds=2)
    speakers = [t.speaker for t in session.state.turns]
    ids = [p.id for p in session.state.config.participants]
    assert speakers == ids * 2
    assert [t.round for t in session.state.turns] == [1] * count + [2] * count


async def test_structured_phases_are_parallel(engine: Engine, source: Source):
    session = await run(engine, format="structured")
    fmt = session.state.format
    assert all(p.parallel for p in fmt.phases)
    steps = plan(fmt, session.state.config)
    assert [s.phase for s in steps] == ["opening", "rebuttal-1", "rebuttal-2", "closing"]
    assert all(s.parallel and len(s.turns) == 2 for s in steps)
    requests = source.turn_requests()
    for turn in session.state.turns:  # a speaker never sees what the other says in the same phase
        same_phase = {t.key for t in session.state.turns if t.phase == turn.phase}
        assert not same_phase & set(requests[turn.key].context["seen_turns"])


@pytest.mark.parametrize("rounds", [1, 4])
async def test_round_limited_plays_exactly_its_rounds(engine: Engine, rounds: int):
    session = await run(engine, format="round-limited", rounds=rounds)
    assert [t.round for t in session.state.turns] == [r for r in range(1, rounds + 1) for _ in range(2)]


@pytest.mark.parametrize("format_id", ["free-form", "convergence"])
async def test_judge_driven_termination_stays_under_the_hard_cap(engine: Engine, format_id: str):
    # Unbounded, the demo judge lets these run for three rounds; a cap of two wins.
    free = await run(engine, format=format_id)
    assert max(t.round for t in free.state.turns) == 3
    capped = await run(engine, format=format_id, rounds=2)
    assert max(t.round for t in capped.state.turns) == 2
    assert get_format(format_id).termination.max_rounds >= 3


def test_hard_caps_are_declared():
    for fmt in FORMATS.values():
        term = fmt.termination
        assert 1 <= term.min_rounds <= term.default_rounds <= term.max_rounds
        assert fmt.has_rounds or term.max_rounds == 1
        assert 1 <= fmt.min_participants <= fmt.max_participants <= 8
        assert fmt.min_participants <= len(fmt.cast) <= fmt.max_participants
        ids = [p.id for p in fmt.phases]
        assert len(ids) == len(set(ids))
    assert get_format("round-limited").termination.max_rounds == 20
    assert (get_format("oxford").termination.default_rounds, get_format("oxford").termination.max_rounds) == (3, 10)
    assert (get_format("roundtable").min_participants, get_format("roundtable").max_participants) == (3, 8)


# --- invalid configurations ---------------------------------------------------------------------


def _cast(*positions: str) -> list[Participant]:
    return [Participant(name=f"P{i}", position=p) for i, p in enumerate(positions)]


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        ({"format": "oxford", "rounds": 11}, "rounds", "1 to 10"),
        ({"format": "classic", "rounds": 6}, "rounds", "1 to 5"),
        ({"format": "round-limited", "rounds": 21}, "rounds", "1 to 20"),
        ({"format": "structured", "rounds": 2}, "rounds", "leave rounds empty"),
        ({"format": "no-such-format"}, "format", "unknown format"),
        ({"format": "classic", "participants": _cast("pro", "pro")}, "participants", "'con'"),
        ({"format": "six-phase", "participants": _cast("pro", "con", "pro")}, "participants", "'moderator'"),
        ({"format": "roundtable", "participants": _cast("a", "b")}, "participants", "at least 3"),
        ({"format": "lincoln-douglas", "participants": _cast("pro", "con", "con")}, "participants", "at most 2"),
        ({"format": "oxford", "participants": _cast("moderator", "moderator")}, "participants", "moderator"),
        # a participant no phase gives the floor to is refused (a judge would still score them)
        ({"format": "classic", "participants": _cast("pro", "con", "skeptic")}, "participants[2].position",
         "P2 (skeptic) would never speak: Classic gives turns only to the positions 'con' and 'pro'"),
        ({"format": "six-phase", "participants": _cast("pro", "skeptic", "con", "moderator")},
         "participants[1].position", "would never speak"),
        ({"format": "oxford", "participants": _cast("pro", "con", "moderator")}, "participants[2].position",
         "Oxford gives turns to every position except moderator"),
    ],
)
async def test_invalid_config_is_refused_naming_the_field(engine: Engine, config: dict, field: str, words: str):
    with pytest.raises(ConfigError) as info:
        prepare_config(DebateConfig(topic=TOPIC, **config))
    assert info.value.field == field
    assert words in info.value.message
    assert str(info.value).startswith(f"{field}: ")
    # The engine refuses it the same way and stores nothing.
    with pytest.raises(ConfigError):
        await engine.start(DebateConfig(topic=TOPIC, **config))
    assert (await engine.list_debates())[1] == 0


@pytest.mark.parametrize(
    ("config", "loc", "words"),
    [
        ({"topic": TOPIC, "rounds": 0}, ("rounds",), "greater than or equal to 1"),
        ({"topic": ""}, ("topic",), "at least 1 character"),
        ({"topic": "   "}, ("topic",), "at least 1 character"),
        ({"topic": TOPIC, "participants": _cast(*"abcdefghi")}, ("participants",), "at most 8"),
        ({"topic": TOPIC, "budget": {"cost_limit": -1}}, ("budget", "cost_limit"), "greater than 0"),
        ({"topic": TOPIC, "budget": {"warn_at": -0.5}}, ("budget", "warn_at"), "greater than or equal to 0"),
        ({"topic": TOPIC, "budget": {"warn_at": 5, "cost_limit": 1}}, ("budget",), "cost_limit"),
        ({"topic": TOPIC, "questions": 0}, ("questions",), "greater than or equal to 1"),
    ],
)
def test_invalid_values_are_refused_by_the_model_naming_the_field(config: dict, loc: tuple, words: str):
    with pytest.raises(pydantic.ValidationError) as info:
        DebateConfig(**config)
    errors = info.value.errors()
    assert errors[0]["loc"] == loc
    assert words in errors[0]["msg"]
    if loc == ("budget",):
        assert "warn_at" in errors[0]["msg"]


def test_budget_accepts_warning_equal_to_limit():
    assert Budget(warn_at=1, cost_limit=1).cost_limit == 1


def test_default_cast_fills_every_side():
    for format_id, fmt in FORMATS.items():
        config = prepare_config(DebateConfig(topic=TOPIC, format=format_id))
        assert len(config.participants) == len(fmt.cast)
        assert fmt.sides <= {p.position for p in config.participants}
        assert plan(fmt, config)
