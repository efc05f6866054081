"""`debate`, `rematch` and `resume`: run a debate in the terminal to its end, or until it needs a person."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.cli.common import ACTOR, EXIT_FAILED, EXIT_OK, EXIT_STOPPED, UsageError, opened, say_error, settings_of
from webapp.cli.config import build_config
from webapp.cli.stored import write_export
from webapp.engine.api import Command
from webapp.engine.engine import DebateNotFound
from webapp.engine.families import self_preference_notes
from webapp.engine.formats import get_format
from webapp.engine.public import TERMINAL_STATES, DebateSession, DebateState, State, TransitionNotAllowed
from webapp.engine.schedule import ConfigError, config_notes
from webapp.engine.series import NotEnded, series_result, series_states
from webapp.models import DebateConfig
from webapp.store.accounts import Accounts
from webapp.terminal import (
    LineReader,
    TerminalView,
    ask_answers,
    ask_turn,
    print_costs,
    print_timing,
    print_verdict,
    terminal_output,
)
from webapp.wording import counted


async def _until(interrupted: asyncio.Event, work: Awaitable[Any], also: asyncio.Event | None = None) -> Any:
    """The result of `work`, or None as soon as `interrupted` (or `also`) is set (then `work` is cancelled)."""
    task = asyncio.ensure_future(work)
    waiters = [asyncio.ensure_future(event.wait()) for event in (interrupted, also) if event is not None]
    try:
        await asyncio.wait({task, *waiters}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, *waiters):
            pending.cancel()
        await asyncio.gather(task, *waiters, return_exceptions=True)
    if interrupted.is_set() or (also is not None and also.is_set()) or task.cancelled():
        return None
    return task.result()


async def drive(session: DebateSession, args: argparse.Namespace, out: TextIO,
                begin: Callable[[], Awaitable[None]] | None = None) -> int:
    """Run a debate to its end (or until it needs a person who is not there) and report.
    `begin` (resuming, say) runs once the terminal view listens, so it misses nothing."""
    out = terminal_output(out)
    view = TerminalView(session, out)
    unsubscribe = session.subscribe(view)
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    lines = LineReader(sys.stdin)

    pausing: list[asyncio.Task[None]] = []

    def on_sigint() -> None:
        interrupted.set()
        pausing.append(loop.create_task(_pause_quietly(session)))

    with contextlib.suppress(NotImplementedError, RuntimeError):  # no signal handlers on this platform/thread
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        if begin is not None:
            await begin()
        session.ensure_running()
        while True:
            status = await session.join()
            if interrupted.is_set():
                await asyncio.gather(*pausing, return_exceptions=True)
                out.write("\nPaused (Ctrl-C).\n")
                break
            if status is State.AWAITING_ACK:
                if getattr(args, "stop_at_warning", False):
                    await session.stop(reason="stopped at the cost warning", actor=ACTOR)
                else:
                    out.write("  [cost warning acknowledged; continuing — use --stop-at-warning to stop here]\n")
                    await session.acknowledge_warning(actor=ACTOR)
                continue
            if status is State.AWAITING_CLARIFICATION:
                # Waiting for a person: Ctrl-C must still work (the answers are read off the loop).
                answers = await _until(interrupted, ask_answers(session.state, out, lines))
                if interrupted.is_set():
                    await asyncio.gather(*pausing, return_exceptions=True)
                    out.write("\nInterrupted (Ctrl-C) before the questions were answered; nothing was sent.\n")
                    break
                if answers is None:
                    out.write(
                        "\nCannot ask the clarification questions: stdin is closed or empty. The debate waits for "
                        "the answers: resume it on a terminal (or pipe the answers in, one per line), or answer "
                        "them on the debate's page in the web app. A new debate can skip the questions with "
                        "--no-clarification.\n")
                    break
                await session.answer_clarification(answers, actor=ACTOR)
                continue
            if status is State.AWAITING_TURN:
                if not await _take_seat(session, out, lines, interrupted):
                    if interrupted.is_set():
                        await asyncio.gather(*pausing, return_exceptions=True)
                        out.write("\nInterrupted (Ctrl-C) before the turn was sent; nothing was sent.\n")
                    break
                continue
            break
    finally:
        unsubscribe()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
    state = session.state
    view.end_stream()
    if session.storage_problem:
        out.write(f"\nStorage is unavailable ({session.storage_problem}): the debate is halted; what was already "
                  f"saved is kept. Once the database can be written, continue with: python -m webapp resume "
                  f"{session.id}\n")
        return EXIT_FAILED
    print_verdict(state, out)
    if state.turns or state.verdict:
        print_costs(state, out)
        print_timing(state, out)
    if getattr(args, "export", None):
        write_export(state, Path(args.export))
        out.write(f"\nExported to {args.export}\n")
    return report_end(state, out)


async def _take_seat(session: DebateSession, out: TextIO, lines: LineReader, interrupted: asyncio.Event) -> bool:
    """A human seat's turn from the terminal; False when the debate must go on waiting (stdin closed,
    Ctrl-C, or the seat belongs to someone on the web app). The time running out meanwhile is fine."""
    state = session.state
    name = state.config.participant(state.seat.speaker if state.seat is not None else "").name
    holder = session.seat_holder()
    if holder is not None and holder != ACTOR:
        out.write(f"\nThe debate waits for {name}'s turn; the seat is {holder}'s, who sends it on the debate's page "
                  f"in the web app. It is saved: continue afterwards with: python -m webapp resume {session.id}\n")
        return False
    moved_on = asyncio.Event()  # the time ran out (or someone else sent it) while the person typed

    def watch(_: object) -> None:
        if session.status is not State.AWAITING_TURN:
            moved_on.set()

    unsubscribe = session.subscribe(watch)
    try:
        text = await _until(interrupted, ask_turn(state, out, lines), also=moved_on)
    finally:
        unsubscribe()
    if moved_on.is_set():
        out.write("\nThis turn is no longer awaited (the time ran out, or it was sent elsewhere); "
                  "what was typed was not sent.\n")
        return True
    if interrupted.is_set():
        return False
    if text is None:
        out.write(
            f"\nCannot take {name}'s turn (a human seat): stdin is closed or empty. The debate waits for the "
            f"turn: resume it on a terminal (or pipe the turn in, ending with a line holding only '.'), or send it "
            f"on the debate's page in the web app.\n")
        return False
    accounts = Accounts(session.store)
    try:
        await session.send(Command.SEND_TURN, actor=ACTOR, text=text)
    except (TransitionNotAllowed, ValueError) as exc:
        await accounts.audit(ACTOR, "send_turn", session.id, outcome="failed", detail=str(exc)[:500])
        out.write(f"\nThe turn was not sent: {exc}\n")
        return session.status is not State.AWAITING_TURN
    await accounts.audit(ACTOR, "send_turn", session.id, detail={"words": len(text.split())})
    return True


async def _pause_quietly(session: DebateSession) -> None:
    try:
        await session.pause(actor=ACTOR)
    except TransitionNotAllowed:
        await session.shutdown()


def report_end(state: DebateState, out: TextIO) -> int:
    status = state.status
    why = f" ({state.ended_because})" if state.ended_because else ""
    out.write(f"\nDebate {state.id}: {status.value}{why}\n")
    if status is State.COMPLETED:
        return EXIT_OK
    if status is State.ERROR:
        err = state.error
        provider, message = (err.provider, err.message) if err is not None else ("?", "unknown error")
        out.write(f"Error: {provider}: {message}\n")
    if status not in TERMINAL_STATES:
        out.write(f"The transcript so far ({counted(len(state.turns), 'turn')}) is saved. "
                  f"Continue with: python -m webapp resume {state.id}\n")
        return EXIT_FAILED
    return EXIT_STOPPED


async def cmd_debate(args: argparse.Namespace, out: TextIO) -> int:
    config = build_config(args, settings_of(args))
    async with opened(args.db, settings_of(args), runs=True) as engine:
        try:
            config = engine.validate(config)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        for note in config_notes(config):  # settings that will have no effect: said, not refused
            say_error(f"note: {note}")
        for warning in self_preference_notes(config):  # a judge of a debater's family: said, not refused
            say_error(f"warning: {warning}")
        debate_id = await engine.create(config, actor=ACTOR)
        await Accounts(engine.store).audit(ACTOR, "start", debate_id, detail={"topic": config.topic[:200]})
        session = await engine.session(debate_id)  # `drive` starts it once the terminal view listens
        fmt = get_format(config.format)
        out.write(f"Debate {debate_id} — {fmt.title}\nTopic: {config.topic}\nParticipants: {_cast_line(config)}\n")
        return await drive(session, args, out)


def _cast_line(config: DebateConfig) -> str:
    return ", ".join(f"{p.name} ({p.position}, {p.provider}:{p.model})" for p in config.participants)


async def cmd_rematch(args: argparse.Namespace, out: TextIO) -> int:
    if not args.swap_sides:
        raise UsageError("rematch: say what changes: --swap-sides (the participants exchange positions)")
    async with opened(args.db, settings_of(args), runs=True) as engine:
        original = await engine.store.find_id(args.id)
        if original is None:
            raise DebateNotFound(args.id)
        try:
            session = await Gate(engine, CLI).rematch(original, start=False)  # `drive` starts it
        except (ConfigError, NotEnded) as exc:
            raise UsageError(f"rematch: {exc}") from None
        config = session.state.config
        for note in config_notes(config):
            say_error(f"note: {note}")
        for warning in self_preference_notes(config):
            say_error(f"warning: {warning}")
        out.write(f"Debate {session.id} — {get_format(config.format).title}, the rematch of {original} with sides "
                  f"swapped (series {config.series})\nTopic: {config.topic}\nParticipants: {_cast_line(config)}\n")
        code = await drive(session, args, out)
        result = series_result(await series_states(engine, session.state))
        if result is not None:
            out.write(f"Series {config.series}: {result.headline}\n")
        return code


async def cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, settings_of(args), runs=True) as engine:
        session = await engine.session(args.id)
        if session.state.status in TERMINAL_STATES:
            out.write(f"Debate {session.id} has already ended ({session.state.status.value}).\n")
            return EXIT_OK if session.state.status is State.COMPLETED else EXIT_STOPPED
        kept = counted(len(session.state.turns), "turn")
        out.write(f"Resuming {session.id} ({session.state.status.value}, {kept} kept)\n")

        async def begin() -> None:
            try:
                _, result = await engine.continue_debate(session.id, actor=ACTOR)
            except Exception as exc:
                await Accounts(engine.store).audit(ACTOR, "resume", session.id, outcome="failed",
                                                   detail=str(exc)[:500])
                raise
            await Accounts(engine.store).audit(ACTOR, "resume", session.id)
            out.write(f"{result.message}\n")

        return await drive(session, args, out, begin=begin)
