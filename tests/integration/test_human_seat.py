"""A human seat through the engine: the debate waits for the person in a persisted state, takes their
turn as a command (word limit kept, who wrote it recorded, $0), skips it with a note when the time
runs out, and can be paused, resumed and stopped while it waits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from webapp.engine.api import Command
from webapp.engine.engine import Engine
from webapp.engine.machine import State, TransitionNotAllowed
from webapp.engine.runner import DebateSession
from webapp.engine.state import DebateState
from webapp.engine.stream import LiveEvent
from webapp.models import DebateConfig, EventKind
from webapp.providers.demo import OneProvider, RecordingDemoProvider

TOPIC = "Cities should ban private cars from their centres"


def config(seat: str | None = None, seconds: int = 600, **extra: object) -> DebateConfig:
    return DebateConfig.model_validate({
        "topic": TOPIC, "format": "classic", "questions": 1, "rounds": 1, "human_turn_seconds": seconds,
        "participants": [
            {"name": "Ada", "provider": "human", "position": "pro", **({"seat": seat} if seat else {})},
            {"name": "Bot", "provider": "demo", "position": "con"},
        ],
        **extra,
    })


@pytest.fixture
async def engine(tmp_path: Path):
    source = OneProvider(RecordingDemoProvider("demo-instant", speed=0))
    opened = await Engine.open(tmp_path / "db.sqlite3", providers=source, backoff_base=0.01)
    yield opened
    await opened.close()


def entered(session: DebateSession, state: State) -> asyncio.Future[None]:
    """Resolves when a transition into `state` is committed (and broadcast)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def listen(message: object) -> None:
        if (isinstance(message, LiveEvent) and message.event.data.get("to") == state.value
                and not done.done()):
            done.set_result(None)

    unsubscribe = session.subscribe(listen)
    done.add_done_callback(lambda _: unsubscribe())
    return done


def test_a_human_participant_needs_no_model_and_judges_cannot_be_people() -> None:
    cfg = config()
    ada = cfg.participants[0]
    assert ada.is_human and ada.model == "human"
    with pytest.raises(ValueError, match="judge must be a model"):
        DebateConfig.model_validate({"topic": TOPIC, "judge": {"judges": [{"provider": "human"}]}})
    with pytest.raises(ValueError, match="seat is only for provider human"):
        DebateConfig.model_validate({"topic": TOPIC, "participants": [{"name": "X", "seat": "ada"}]})


async def test_the_debate_waits_for_the_seat_then_takes_the_persons_turn(engine: Engine) -> None:
    session = await engine.start(config(word_limit=20))
    assert await session.join() is State.AWAITING_TURN
    seat = session.state.seat
    assert seat is not None and seat.speaker == session.state.config.participants[0].id
    assert seat.word_limit == 20 and seat.time_limit_s == 600
    assert session.state.seat_deadline is not None
    assert Command.SEND_TURN in session.allowed_commands and Command.PAUSE in session.allowed_commands
    assert not session.running  # nobody drives a waiting debate; the log holds it

    words = " ".join(f"w{i}" for i in range(30))
    await session.send(Command.SEND_TURN, actor="ada", text=words, assisted_by="demo:demo")
    turn = next(t for t in session.state.turns if t.key == seat.key)
    assert turn.by == "ada" and turn.assisted_by == "demo:demo" and turn.cost_usd == 0.0
    assert len(turn.text.split()) <= 21 and any("drafted with demo:demo" in n for n in turn.notes)
    status = await session.join()
    # A seat filled once stays with that person ("whoever takes it first").
    while status is State.AWAITING_TURN:
        with pytest.raises(TransitionNotAllowed, match="ada's to fill"):
            await session.send(Command.SEND_TURN, actor="bob", text="not mine")
        await session.send(Command.SEND_TURN, actor="ada", text="My next point.")
        status = await session.join()
    assert status is State.COMPLETED
    assert session.state.verdict is not None and session.state.verdict.available
    assert not any("human" in label for label, usd in session.state.ledger.by_model.items() if usd)
    rebuilt = DebateState.from_events(await engine.events(session.id))
    assert [t.model_dump() for t in rebuilt.turns] == [t.model_dump() for t in session.state.turns]
    assert rebuilt.machine.context.model_dump() == session.state.machine.context.model_dump()


async def test_a_named_seat_refuses_anyone_else(engine: Engine) -> None:
    session = await engine.start(config(seat="ada"))
    assert await session.join() is State.AWAITING_TURN
    assert session.seat_holder() == "ada" and not session.may_take_seat("bob")
    with pytest.raises(TransitionNotAllowed, match="ada's to fill"):
        await session.send(Command.SEND_TURN, actor="bob", text="hello")
    owed = session.state.seat
    assert owed is not None and session.status is State.AWAITING_TURN
    assert owed.key not in session.state.turn_keys


async def test_the_turn_is_skipped_with_a_note_when_the_time_runs_out(engine: Engine) -> None:
    session = await engine.start(config(seconds=1))
    assert await session.join() is State.AWAITING_TURN
    seat = session.state.seat
    assert seat is not None
    moved_on = entered(session, State.DEBATING)
    await asyncio.wait_for(moved_on, timeout=30)
    turn = next(t for t in session.state.turns if t.key == seat.key)
    assert turn.skipped and any("did not send this turn within 1 seconds" in n for n in turn.notes)
    assert "Ada" not in turn.text  # judges read turns anonymised
    assert session.state.transitions[-1].event == "TURN_TIMEOUT"


async def test_pause_resume_and_stop_while_waiting(engine: Engine) -> None:
    session = await engine.start(config())
    assert await session.join() is State.AWAITING_TURN
    await session.send(Command.PAUSE, actor="ada")
    assert session.status is State.PAUSED and session.state.seat_deadline is None
    with pytest.raises(TransitionNotAllowed):
        await session.send(Command.SEND_TURN, actor="ada", text="too early")
    await session.send(Command.RESUME, actor="ada")
    assert session.status is State.AWAITING_TURN and session.state.seat is not None
    await session.send(Command.STOP, actor="ada", verdict=False)
    assert await session.join() is State.STOPPED
    assert session.state.seat is None and session.state.seat_deadline is None


async def test_a_restarted_process_still_waits_and_keeps_the_clock(tmp_path: Path) -> None:
    source = OneProvider(RecordingDemoProvider("demo-instant", speed=0))
    first = await Engine.open(tmp_path / "db.sqlite3", providers=source)
    session = await first.start(config())
    assert await session.join() is State.AWAITING_TURN
    debate_id, owed, since = session.id, session.state.seat, session.state.awaiting_since
    await first.close()  # like a crash: nothing recorded
    second = await Engine.open(tmp_path / "db.sqlite3", providers=source)
    try:
        assert await second.recover_interrupted() == []  # a waiting debate is not interrupted
        again = await second.session(debate_id)
        assert again.status is State.AWAITING_TURN and again.state.seat == owed
        assert again.state.awaiting_since == since
        await again.send(Command.SEND_TURN, actor="ada", text="After the restart.")
        assert any(t.text == "After the restart." for t in again.state.turns)
    finally:
        await second.close()


async def test_the_turn_event_is_committed_before_it_is_broadcast(engine: Engine) -> None:
    session = await engine.start(config())
    assert await session.join() is State.AWAITING_TURN
    seen: list[int] = []

    def listen(message: object) -> None:
        if isinstance(message, LiveEvent) and message.event.kind is EventKind.TURN:
            seen.append(message.event.seq)

    session.subscribe(listen)
    await session.send(Command.SEND_TURN, actor="ada", text="Committed first.")
    stored = [e.seq for e in await engine.events(session.id) if e.kind is EventKind.TURN]
    assert seen and seen[0] in stored


async def test_draft_with_a_model_streams_a_draft_and_records_its_cost(engine: Engine) -> None:
    session = await engine.start(config(seat="ada"))
    assert await session.join() is State.AWAITING_TURN
    assert session.draft_models() == ["demo:demo"]
    with pytest.raises(TransitionNotAllowed, match="not yours"):
        await session.draft_seat_turn("demo:demo", "bob", lambda _: None)
    with pytest.raises(ValueError, match="not one of this debate's models"):
        await session.draft_seat_turn("openai:gpt-4o", "ada", lambda _: None)
    seen: list[str] = []
    made = await session.draft_seat_turn("demo:demo", "ada", seen.append)
    draft = made.text
    assert made.model == "demo:demo" and made.warning is None  # no limits set: nothing to say about money
    assert draft and len(seen) > 1 and seen[-1].strip() == draft  # streamed, growing
    assert session.status is State.AWAITING_TURN  # nothing was sent
    note = session.state.notes[-1]
    assert note.purpose == "draft" and note.calls[0].model == "demo:demo"
    await session.send(Command.SEND_TURN, actor="ada", text=draft + " Edited.", assisted_by="demo:demo")
    turn = next(t for t in session.state.turns if t.by == "ada")
    assert turn.assisted_by == "demo:demo" and turn.text.endswith("Edited.") and turn.by == "ada"


async def test_the_json_export_says_who_wrote_a_seats_turn_and_with_which_model(engine: Engine) -> None:
    import json

    from webapp.export import writer_for

    session = await engine.start(config())
    assert await session.join() is State.AWAITING_TURN
    await session.send(Command.SEND_TURN, actor="ada", text="Exported.", assisted_by="demo:demo")
    to_json = writer_for(".json")
    assert to_json is not None
    turns = json.loads(to_json(session.state))["turns"]
    mine = next(t for t in turns if t["text"] == "Exported.")
    assert mine["by"] == "ada" and mine["assisted_by"] == "demo:demo" and mine["cost_usd"] == 0.0
    assert all("by" not in t for t in turns if t["text"] != "Exported.")
