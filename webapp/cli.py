"""The command-line interface: `python -m webapp …` runs the same engine headless.

    debate TOPIC [options]   run a debate, streaming it to the terminal
    rematch ID --swap-sides  run a finished or stopped debate again with the positions exchanged
    resume ID                continue a paused, failed or interrupted debate
    list [--json]            stored debates, newest first
    show ID [--json|--markdown|--text]
    export ID PATH           .md, .json or .txt, chosen by the extension
    delete ID [--yes]        remove a debate, its whole log and its share links
    judges [--json]          judge health per judge model, from every stored verdict
    leaderboard [--json] [--format F] [--tag T] [--judge MODEL] [--since DATE] [--until DATE] [--series]
                [--by judges|audience|people]
                             Bradley-Terry ratings per model with 95% intervals, and head-to-head records
    formats [--json]         the built-in format declarations
    diagram [--format F]     the state machine as a Mermaid diagram
    users add NAME --role admin|operator|viewer [--no-password]
    users list [--json]      accounts (never a password hash)
    users set-role NAME ROLE
    users disable NAME | users enable NAME
    users passwd NAME        set a new password
    migrate-store --from sqlite:PATH --to postgresql://…
                             copy every debate, account, share link, audit row, saved profile and
                             template and tournament to another store, verifying counts and checksums
    tournament --models A,B,C --topics FILE [--format F] [--swap-sides] [--budget USD] [--concurrency N]
    tournament --resume ID [--budget USD]   continue a stopped or interrupted tournament
    webhooks add URL --events debate.completed,debate.error [--slack]
                             register an endpoint; prints its signing secret once (`secret: whsec_…`)
    webhooks list [--json] | webhooks remove ID
    webhooks deliveries [--json] [--limit N] | webhooks redeliver ID
    tokens create --user NAME [--role ROLE] [--expires DAYS] [--name LABEL]   a personal API token
                             for the HTTP API, printed once (`token: rst_…`)
    tokens list [--user NAME] [--json] | tokens revoke ID
    worker [--lease S] [--poll S]   run debates for web processes (see README, "Scaling out"), until
                             SIGTERM or Ctrl-C
    check [URL|PRESET ...] [--model M] [--json]
                             whether each OpenAI-compatible server answers, and which structured-output
                             mode it accepts (one tiny probe); default: every local preset

Passwords are read from the first line of stdin when it is not a terminal, otherwise prompted for
twice without echo. Everything the CLI does is recorded with the actor `cli` (in the debate's log
and, for commands, in the audit trail).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import re
import shlex
import signal
import sys
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from webapp import export
from webapp.access import token_commands
from webapp.access.gate import Gate, check_username
from webapp.access.passwords import WeakPassword, check_password
from webapp.access.roles import CLI, Role
from webapp.bus import BusPublisher, open_bus
from webapp.engine import audience
from webapp.engine.api import Command
from webapp.engine.engine import DebateNotFound, Engine
from webapp.engine.families import self_preference_notes
from webapp.engine.formats import FORMATS, get_format
from webapp.engine.judge_health import RELIABILITY_RULE, judge_health
from webapp.engine.machine import TERMINAL_STATES, State, TransitionNotAllowed, to_mermaid
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError, config_notes
from webapp.engine.series import NotEnded, series_result, series_states
from webapp.engine.state import DebateState
from webapp.hygiene import strip_controls
from webapp.models import DebateConfig
from webapp.settings import Settings, get_settings
from webapp.store import StoreError
from webapp.store.accounts import Accounts, UnknownUser, UserRow
from webapp.store.comments import CommentStore
from webapp.terminal import (
    LineReader,
    TerminalView,
    ask_answers,
    ask_turn,
    exact_output,
    print_costs,
    print_timing,
    print_users,
    print_verdict,
    terminal_output,
)
from webapp.tournament import commands as tournament_commands
from webapp.webhooks import Webhooks
from webapp.webhooks.events import EVENTS as WEBHOOK_EVENTS
from webapp.webhooks.guard import WebhookRefused
from webapp.webhooks.manage import UnknownWebhook, WebhookAdmin
from webapp.wording import counted

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 3
ACTOR = CLI.actor  # what the debate's log and the audit trail record for everything done here
SPEC_SPLIT = re.compile(r",(?=\s*[A-Za-z_]+\s*=)")
WEBHOOK_DRAIN_SECONDS = 20.0  # at most, a command that ran debates waits at its end for their webhooks (it
# returns as soon as none is due: a busy machine must not drop them, an idle one does not wait)


class UsageError(Exception):
    """A bad command line or config; the message names the field."""


# --- parsing -----------------------------------------------------------------------------------


def parse_spec(text: str, what: str) -> dict[str, Any]:
    """`name=Ada,provider=demo,persona=calm, but firm` → dict (commas inside values are kept)."""
    out: dict[str, Any] = {}
    for part in SPEC_SPLIT.split(text.strip()):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise UsageError(f"{what}: expected key=value pairs separated by commas, got {part.strip()!r}")
        key = key.strip().replace("-", "_")
        if key in out:
            raise UsageError(f"{what}: {key!r} given twice")
        out[key] = value.strip()
    return out


def load_config_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--config: cannot read {path}: {exc.strerror}") from None
    try:
        if path.suffix.lower() == ".toml":
            return tomllib.loads(raw.decode("utf-8"))
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise UsageError("--config: the JSON file must hold an object")
            return data
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--config: {path} is not valid {path.suffix[1:].upper()}: {exc}") from None
    raise UsageError("--config: use a .toml or .json file")


def format_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "config"
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def build_config(args: argparse.Namespace, settings: Settings | None = None) -> DebateConfig:
    """The debate config from `--config` and the flags; what neither gives comes from `settings`
    (`ROSTRUM_MAX_RETRIES`), then from the model's defaults."""
    data: dict[str, Any] = load_config_file(Path(args.config)) if args.config else {}
    if settings is not None:
        data.setdefault("max_retries", settings.max_retries)
    if args.topic is not None:
        data["topic"] = args.topic
    for flag, key in (("format", "format"), ("rounds", "rounds"), ("seed", "seed"), ("questions", "questions"),
                      ("word_limit", "word_limit")):
        value = getattr(args, flag, None)
        if value is not None:
            data[key] = value
    if args.participant:
        data["participants"] = [parse_spec(s, f"--participant #{i + 1}") for i, s in enumerate(args.participant)]
    judge = dict(data.get("judge") or {})
    if args.judge:
        judge["judges"] = [parse_spec(s, f"--judge #{i + 1}") for i, s in enumerate(args.judge)]
    if args.no_judge:
        judge["enabled"] = False
    if args.judge_swap_sides:
        judge["swap_sides"] = True
    if judge:
        data["judge"] = judge
    budget = dict(data.get("budget") or {})
    if args.cost_limit is not None:
        budget["cost_limit"] = args.cost_limit
    if args.warn_at is not None:
        budget["warn_at"] = args.warn_at
    if budget:
        data["budget"] = budget
    if args.timeout is not None:
        data["timeouts"] = {**dict(data.get("timeouts") or {}), "turn": args.timeout}
    if args.no_clarification:
        data["clarification"] = False
    if getattr(args, "human_turn_seconds", None) is not None:
        data["human_turn_seconds"] = args.human_turn_seconds
    if getattr(args, "tag", None):
        given = data.get("tags") or []
        data["tags"] = [*(given.split(",") if isinstance(given, str) else given), *args.tag]
    if "topic" not in data:
        raise UsageError("topic: give the debate topic as an argument or in --config")
    try:
        return DebateConfig.model_validate(data)
    except ValidationError as exc:
        raise UsageError(format_validation(exc)) from None


# --- commands ----------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def opened(db: str, settings: Settings | None = None, runs: bool = False) -> AsyncIterator[Engine]:
    """The engine on `db` for one command, closed however the command ends. With `runs` (a command
    that runs debates), the webhooks of what it commits are queued and sent, and at the end what is due
    gets a few seconds to go out (what does not is sent by the web app or a worker later)."""
    settings = settings or get_settings()
    engine = await Engine.open(db, settings=settings)
    # A debate this command runs streams to web processes on the live bus (when Redis is configured).
    bus = open_bus(settings.redis_url)
    await bus.start()
    publisher = BusPublisher(engine, bus)
    webhooks = Webhooks(engine, settings) if runs else None
    if webhooks is not None:
        await webhooks.start()
    try:
        yield engine
    finally:
        if webhooks is not None:
            await webhooks.close(drain=WEBHOOK_DRAIN_SECONDS)
        publisher.close()
        await bus.close()
        await engine.close()


def _settings(args: argparse.Namespace) -> Settings | None:
    """The one settings object `main` read for this command (None when called without `main`)."""
    return getattr(args, "settings", None)


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
    seat = state.awaiting or {}
    name = state.config.participant(str(seat.get("speaker", ""))).name
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
        err = state.error or {}
        out.write(f"Error: {err.get('provider', '?')}: {err.get('message', 'unknown error')}\n")
    if status not in TERMINAL_STATES:
        out.write(f"The transcript so far ({counted(len(state.turns), 'turn')}) is saved. "
                  f"Continue with: python -m webapp resume {state.id}\n")
        return EXIT_FAILED
    return EXIT_STOPPED


def write_export(state: DebateState, path: Path, talk: export.Talk | None = None,
                 people: dict[str, Any] | None = None) -> None:
    exporter = export.writer_for(path.suffix)
    if exporter is None:
        raise UsageError(f"export: unknown file type {path.suffix or '(none)'}; use .md, .json or .txt")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(exporter(state, talk, people), encoding="utf-8")


async def cmd_debate(args: argparse.Namespace, out: TextIO) -> int:
    config = build_config(args, _settings(args))
    async with opened(args.db, _settings(args), runs=True) as engine:
        try:
            config = engine.validate(config)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        for note in config_notes(config):  # settings that will have no effect: said, not refused
            _error(f"note: {note}")
        for warning in self_preference_notes(config):  # a judge of a debater's family: said, not refused
            _error(f"warning: {warning}")
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
    async with opened(args.db, _settings(args), runs=True) as engine:
        original = await engine.store.find_id(args.id)
        if original is None:
            raise DebateNotFound(args.id)
        try:
            session = await Gate(engine, CLI).rematch(original, start=False)  # `drive` starts it
        except (ConfigError, NotEnded) as exc:
            raise UsageError(f"rematch: {exc}") from None
        config = session.state.config
        for note in config_notes(config):
            _error(f"note: {note}")
        for warning in self_preference_notes(config):
            _error(f"warning: {warning}")
        out.write(f"Debate {session.id} — {get_format(config.format).title}, the rematch of {original} with sides "
                  f"swapped (series {config.series})\nTopic: {config.topic}\nParticipants: {_cast_line(config)}\n")
        code = await drive(session, args, out)
        result = series_result(await series_states(engine, session.state))
        if result is not None:
            out.write(f"Series {config.series}: {result.headline}\n")
        return code


async def cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, _settings(args), runs=True) as engine:
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


async def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, _settings(args)) as engine:
        rows, total = await engine.list_debates(limit=args.limit)
    if args.json:
        exact_output(out).write(json.dumps([r.model_dump(mode="json") for r in rows], indent=2) + "\n")
        return EXIT_OK
    if not rows:
        out.write("No debates yet. Start one: python -m webapp debate \"Your topic\"\n")
        return EXIT_OK
    for r in rows:
        out.write(f"{r.id}  {r.created_at:%Y-%m-%d %H:%M}  {r.status:<24} {r.format:<16} ${r.cost_usd:<8.4f} "
                  f"{r.topic[:60]}\n")
    if total > len(rows):
        out.write(f"… {total - len(rows)} more (use --limit)\n")
    return EXIT_OK


async def _load_state(args: argparse.Namespace) -> tuple[DebateState, export.Talk, dict[str, Any]]:
    """The debate, its comments and reaction counts per turn (`webapp.store.comments`), and its audience
    vote and people's verdicts (`webapp.engine.audience`): both kept beside the log."""
    async with opened(args.db, _settings(args)) as engine:
        state = (await engine.session(args.id)).state
        talk = await CommentStore(engine.store).for_debate(state.id)
        return state, talk, await audience.read_people(engine.store, state)


async def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    state, talk, people = await _load_state(args)
    writer = export.writer_for("json" if args.json else "txt" if args.text else "md")
    assert writer is not None  # the three names are FORMATS' own
    text = writer(state, talk, people)
    (exact_output(out) if args.json else out).write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


async def cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    state, talk, people = await _load_state(args)
    write_export(state, Path(args.path), talk, people)
    out.write(f"Exported {state.id} to {args.path}\n")
    return EXIT_OK


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _kappa(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


async def cmd_judges(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, _settings(args)) as engine:
        report = await judge_health(engine.store).report()
    if args.json:
        exact_output(out).write(json.dumps(report.public(), indent=2) + "\n")
        return EXIT_OK
    if not report.judges:
        out.write("No verdicts yet: judge health is computed from the stored verdicts.\n")
        return EXIT_OK
    out.write(f"Judge health over {counted(report.debates, 'judged debate')}\n\n")
    out.write(f"{'judge':<32} {'rulings':>7}  {'parse failures':<15} {'picked 1st / 2nd':<18} "
              f"{'flipped on swap':<16} {'agreement':<15} kappa\n")
    for j in report.judges:
        failures = f"{j.failed} ({_pct(j.failure_rate)})"
        order = f"{_pct(j.first_rate)} / {_pct(j.second_rate)} ({j.ordered})" if j.ordered else "–"
        swap = f"{j.flipped} of {j.rejudged} ({_pct(j.flip_rate)})" if j.rejudged else "–"
        agreement = f"{_pct(j.agreement)} ({j.compared})" if j.compared else "–"
        out.write(f"{j.judge[:32]:<32} {j.rulings:>7}  {failures:<15} {order:<18} {swap:<16} {agreement:<15} "
                  f"{_kappa(j.kappa)}\n")
    notes = report.unreliable_notes()
    if notes:
        out.write(f"\nUnreliable judges ({RELIABILITY_RULE})\n")
        for judge, note in notes.items():
            out.write(f"  {judge}: {note}\n")
    with_people = [j for j in report.judges if j.people_debates]
    if with_people:
        out.write("\nAgreement with the people's verdicts (their majority)\n")
        for j in with_people:
            out.write(f"  {j.judge}: {counted(j.people_debates, 'debate')}, identical winners "
                      f"{_pct(j.people_agreement)}, kappa {_kappa(j.people_kappa)}\n")
    if report.pairs:
        out.write("\nPairs of judges on the same debates\n")
        for pair in report.pairs:
            out.write(f"  {pair.judges[0]} + {pair.judges[1]}: {counted(pair.debates, 'debate')}, identical winners "
                      f"{_pct(pair.agreement)}, kappa {_kappa(pair.kappa)}\n")
    return EXIT_OK


def _leaderboard_filters(args: argparse.Namespace) -> Any:
    from webapp.results.leaderboard import LeaderboardFilters

    if args.format is not None and args.format not in FORMATS:
        raise UsageError(f"--format: unknown format {args.format!r}; choose one of: {', '.join(FORMATS)}")
    try:
        return LeaderboardFilters(format=args.format, tag=args.tag, judge=args.judge, since=args.since,
                                  until=args.until, series_only=args.series, rated_by=args.by)
    except ValidationError as exc:
        raise UsageError(format_validation(exc).replace("since:", "--since:").replace("until:", "--until:")) from None


async def cmd_leaderboard(args: argparse.Namespace, out: TextIO) -> int:
    # Imported here: numpy and scipy load only for this command, not for every `python -m webapp`.
    from webapp.results.leaderboard import leaderboard

    filters = _leaderboard_filters(args)
    async with opened(args.db, _settings(args)) as engine:
        board = await leaderboard(engine.store, filters)
    if args.json:
        exact_output(out).write(json.dumps(board.public(), indent=2) + "\n")
        return EXIT_OK
    if not board.ratings:
        out.write("No rated debates: the leaderboard counts completed, judged debates between two models"
                  f"{' (with these filters)' if filters != type(filters)() else ''}.\n")
        return EXIT_OK
    out.write(f"Leaderboard over {counted(board.comparisons, board.unit)} ({counted(board.debates, 'debate')}), "
              "Bradley-Terry ratings "
              "with 95% bootstrap intervals; avg cost is the whole debate's (both sides and the judges)\n\n")

    def table(lines: Any) -> None:
        out.write(f"{'#':>3} {'model':<36} {'rating':>7} {'95% interval':>15} {'debates':>7}  {'W-L-T':<10} avg cost\n")
        for r in lines:
            interval = f"{r.low:.0f}–{r.high:.0f}"
            out.write(f"{r.rank:>3} {strip_controls(r.model)[:36]:<36} {r.rating:>7.0f} {interval:>15} {r.debates:>7}  "
                      f"{f'{r.wins}-{r.losses}-{r.ties}':<10} ${r.avg_cost_usd:.4f}\n")

    table(board.ratings)
    for line in board.words:  # in words, for each pair of neighbours
        out.write(f"  {strip_controls(line.words)}\n")
    style = board.style
    if style.length_effect is not None:
        out.write(f"\nStyle-controlled (word-count difference as a covariate): length effect "
                  f"{style.length_effect:+.2f} "
                  f"(95% {style.length_low:+.2f} to {style.length_high:+.2f}; > 0: the longer side wins more)\n")
    else:
        out.write(f"\nStyle-controlled (word-count difference as a covariate): length effect: too few debates "
                  f"(n = {board.comparisons})\n")
    table(style.ratings)
    if board.pairs:
        out.write("\nHead to head (wins-losses-ties of the first; panel split)\n")
        for p in board.pairs:
            out.write(f"  {strip_controls(p.a)} vs {strip_controls(p.b)}: {p.wins}-{p.losses}-{p.ties}, "
                      f"split {_pct(p.split_share)}\n")
    return EXIT_OK


def _confirm(question: str, out: TextIO) -> bool:
    out.write(f"{question} [y/N] ")
    out.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


async def cmd_delete(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, _settings(args)) as engine:
        debate_id = await engine.store.find_id(args.id)
        row = await engine.store.get_row(debate_id) if debate_id else None
        if debate_id is None or row is None:
            raise DebateNotFound(args.id)
        if not args.yes:
            if sys.stdin is None or not sys.stdin.isatty():
                raise UsageError(f"delete: not deleting {debate_id} without confirmation; stdin is not a terminal, "
                                 "so pass --yes")
            if not _confirm(f"Delete debate {debate_id} ({row.status}: {row.topic[:60]!r}) with its whole log and "
                            "share links? This cannot be undone.", out):
                out.write("Not deleted.\n")
                return EXIT_FAILED
        await Gate(engine, CLI).delete(debate_id)
    out.write(f"Deleted {debate_id} ({row.topic[:60]}).\n")
    return EXIT_OK


# --- users -------------------------------------------------------------------------------------


def read_password(username: str) -> str:
    """A new password: the first line of stdin when it is not a terminal (only the line break is
    removed), otherwise typed twice without echo. Refused here if too short, before any hashing."""
    try:
        if sys.stdin is None:
            raise UsageError("password: stdin is closed; pipe the password as its first line, "
                             f"e.g. printf '%s\\n' \"$PW\" | python -m webapp users … {username}")
        if not sys.stdin.isatty():
            line = sys.stdin.readline()
            if not line:
                raise UsageError("password: stdin is empty; pipe the password as its first line, "
                                 f"e.g. printf '%s\\n' \"$PW\" | python -m webapp users … {username}")
            password = line.removesuffix("\n").removesuffix("\r")
            return check_password(password)
        password = check_password(getpass.getpass(f"New password for {username}: "))
        if getpass.getpass("Repeat it: ") != password:
            raise UsageError("password: the two passwords do not match; nothing was changed")
        return password
    except WeakPassword as exc:
        raise UsageError(f"password: {exc}; nothing was changed") from None
    except (EOFError, KeyboardInterrupt):
        raise UsageError("password: none given; nothing was changed") from None


async def _existing_user(accounts: Accounts, name: str) -> UserRow:
    row = await accounts.user(name.strip())
    if row is None:
        raise UsageError(f"users: no user named {name.strip()!r} (see: python -m webapp users list)")
    return row


async def cmd_users(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, _settings(args)) as engine:
        gate = Gate(engine, CLI)  # records every change in the audit trail as `cli`
        accounts = gate.accounts
        try:
            return await _users(args, out, gate, accounts)
        except (WeakPassword, UnknownUser, ValueError) as exc:  # bad name, name taken, the last admin
            message = str(exc)
            raise UsageError(message if message.startswith(("username", "password")) else
                             f"users {args.users_command}: {message}") from None


async def _users(args: argparse.Namespace, out: TextIO, gate: Gate, accounts: Accounts) -> int:
    command = args.users_command
    if command == "list":
        users = await accounts.users()
        if args.json:
            exact_output(out).write(json.dumps([u.public() for u in users], indent=2) + "\n")
        elif not users:
            out.write("No users yet. Create the first admin: python -m webapp users add NAME --role admin\n")
        else:
            print_users(users, out)
        return EXIT_OK
    if command == "add":
        name = check_username(args.name)  # a bad or taken name is refused before asking for a password
        existing = await accounts.user(name)  # names are compared without case
        if existing is not None:
            raise UsageError(f"users add: a user named {existing.username!r} already exists")
        password = None if args.no_password else read_password(name)
        row = await gate.add_user(name, Role(args.role), password)
        how = "signs in with a password" if password is not None else "signs in only through the proxy header"
        out.write(f"Added {row.username} ({row.role}); {how}.\n")
        return EXIT_OK
    row = await _existing_user(accounts, args.name)
    if command == "set-role":
        await gate.set_role(row.username, Role(args.role))
        out.write(f"{row.username}: {row.role} → {args.role}\n")
    elif command in ("disable", "enable"):
        await gate.set_disabled(row.username, command == "disable")
        out.write(f"{row.username}: {command}d" + (" (they can no longer sign in)" if command == "disable" else "")
                  + "\n")
    elif command == "passwd":
        await gate.set_password(row.username, read_password(row.username))
        out.write(f"{row.username}: password changed\n")
    return EXIT_OK


def cmd_formats(args: argparse.Namespace, out: TextIO) -> int:
    if args.json:
        data = [
            {
                "id": f.id,
                "title": f.title,
                "description": f.description,
                "termination": f.termination.model_dump(),
                "phases": [
                    {"id": p.id, "title": p.title, "speakers": [s.side if s.act == "speak" else f"{s.side}:{s.act}"
                                                               for s in p.speakers],
                     "turns_per_speaker": p.turns_per_speaker, "repeat": p.repeat, "parallel": p.parallel,
                     "scope": p.scope, "word_limit": p.word_limit}
                    for p in f.phases
                ],
            }
            for f in FORMATS.values()
        ]
        exact_output(out).write(json.dumps(data, indent=2) + "\n")
        return EXIT_OK
    for f in FORMATS.values():
        rounds = ""
        if f.has_rounds:
            t = f.termination
            rounds = f" — rounds {t.min_rounds}–{t.max_rounds} (default {t.default_rounds}, {t.kind})"
        out.write(f"{f.id}: {f.title}{rounds}\n  {f.description}\n")
        for p in f.phases:
            mode = "parallel" if p.parallel else "in turn"
            who = ", ".join(s.side if s.act == "speak" else f"{s.side} {s.act}s" for s in p.speakers)
            scope = " [each round]" if p.scope == "round" else ""
            out.write(f"    - {p.title}: {who} ({mode}){scope}\n")
    return EXIT_OK


def cmd_diagram(args: argparse.Namespace, out: TextIO) -> int:
    phases = None
    if args.format:
        try:
            fmt = get_format(args.format)
        except KeyError as exc:
            raise UsageError(f"--format: {exc}") from None
        phases = [(p.id, p.title) for p in fmt.phases]
    out.write(to_mermaid(phases) + "\n")
    return EXIT_OK


async def cmd_migrate_store(args: argparse.Namespace, out: TextIO) -> int:
    from webapp.store.protocol import redacted
    from webapp.store.transfer import TransferError, migrate_store, parse_target

    try:
        source, target = parse_target(args.source), parse_target(args.target)
        out.write(f"copying {redacted(source)} to {redacted(target)}\n")

        def progress(line: str) -> None:
            out.write(f"  {line}\n")

        report = await migrate_store(source, target, progress=progress)
    except TransferError as exc:
        _error(f"error: {exc}")
        return EXIT_FAILED
    out.write(report.summary() + "\n")
    return EXIT_OK


async def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    """Check servers like Settings' "Check": their /models, then one tiny structured-output probe."""
    from webapp.providers.presets import PRESETS, get_preset
    from webapp.providers.probe import check_server, probe_structured

    targets = args.targets or [p.name for p in PRESETS.values() if p.local]
    ok, reports = True, []
    for target in targets:
        preset = get_preset(target)
        if preset is None and not re.match(r"^https?://", target):
            raise UsageError(f"check: {target!r} is neither a URL (http://…) nor a preset "
                             f"({', '.join(PRESETS)})")
        url = preset.default_url if preset is not None else target
        server = await check_server(url)
        model = args.model or (server.models[0] if server.models else None)
        found = None
        if server.answers and model and not server.problem:
            found = await probe_structured(url, model, preset=preset)
        ok = ok and found is not None and found.mode is not None
        reports.append({"target": target, "server": server.model_dump(mode="json"),
                        "structured": found.model_dump(mode="json") if found else None})
        if not args.json:
            out.write(f"{target}: {server.describe()}\n")
            if found is not None:
                out.write(f"  {found.describe()}\n")
    if args.json:
        exact_output(out).write(json.dumps(reports, indent=2) + "\n")
    return EXIT_OK if ok else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m webapp", description="Rostrum: debates between LLMs.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=None,
                        help="database file or postgresql:// URL (default: ROSTRUM_DB or data/rostrum.sqlite3)")
    sub = parser.add_subparsers(dest="command", required=True)

    debate = sub.add_parser("debate", parents=[common], help="run a debate, streaming it live")
    debate.add_argument("topic", nargs="?")
    debate.add_argument("--format", help=f"one of: {', '.join(FORMATS)}")
    debate.add_argument("--rounds", type=int)
    debate.add_argument("--questions", type=int, help="cross-examination questions per side")
    debate.add_argument("--config", help="a .toml or .json file with the debate config")
    debate.add_argument("--participant", action="append", metavar="SPEC",
                        help="name=Ada,provider=demo,model=demo,position=pro,persona=… (repeatable)")
    debate.add_argument("--judge", action="append", metavar="SPEC", help="provider=demo,model=demo (repeatable)")
    debate.add_argument("--no-judge", action="store_true", help="skip the verdict")
    debate.add_argument("--judge-swap-sides", action="store_true",
                        help="judge twice, the second time with the order reversed (a flipped judge is undecided)")
    debate.add_argument("--cost-limit", type=float, metavar="USD")
    debate.add_argument("--warn-at", type=float, metavar="USD")
    debate.add_argument("--stop-at-warning", action="store_true", help="stop instead of continuing at warn-at")
    debate.add_argument("--seed", type=int)
    debate.add_argument("--word-limit", type=int)
    debate.add_argument("--timeout", type=float, metavar="S",
                        help="turn timeout in seconds (default 120; 900 for local servers)")
    debate.add_argument("--no-clarification", action="store_true", help="collaborative: skip the questions")
    debate.add_argument("--human-turn-seconds", type=int, metavar="S",
                        help="a human seat's time per turn in seconds (default 600; 0: no limit)")
    debate.add_argument("--tag", action="append", metavar="TAG", help="a topic tag (repeatable)")
    debate.add_argument("--export", metavar="PATH", help="write the transcript (.md, .json, .txt) at the end")

    rematch = sub.add_parser("rematch", parents=[common],
                             help="run a finished or stopped debate again with the participants' positions exchanged")
    rematch.add_argument("id")
    rematch.add_argument("--swap-sides", action="store_true",
                         help="each debater takes the other's position and place in the speaking order")
    rematch.add_argument("--export", metavar="PATH")
    rematch.add_argument("--stop-at-warning", action="store_true")

    resume = sub.add_parser("resume", parents=[common], help="continue a paused, failed or interrupted debate")
    resume.add_argument("id")
    resume.add_argument("--export", metavar="PATH")
    resume.add_argument("--stop-at-warning", action="store_true")

    lst = sub.add_parser("list", parents=[common], help="stored debates")
    lst.add_argument("--json", action="store_true")
    lst.add_argument("--limit", type=int, default=50)

    show = sub.add_parser("show", parents=[common], help="print a debate")
    group = show.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true")
    group.add_argument("--markdown", action="store_true")
    group.add_argument("--text", action="store_true")
    show.add_argument("id")

    export = sub.add_parser("export", parents=[common], help="write a debate to a file")
    export.add_argument("id")
    export.add_argument("path")

    formats = sub.add_parser("formats", help="the built-in formats")
    formats.add_argument("--json", action="store_true")

    diagram = sub.add_parser("diagram", help="the state machine as Mermaid")
    diagram.add_argument("--format")

    move = sub.add_parser("migrate-store", help="copy everything to another store (e.g. SQLite to PostgreSQL)")
    move.add_argument("--from", dest="source", required=True, metavar="SOURCE",
                      help="sqlite:PATH (or a path), or a postgresql:// URL")
    move.add_argument("--to", dest="target", required=True, metavar="TARGET",
                      help="a postgresql:// URL, or sqlite:PATH; must hold no debates or accounts yet")

    judges = sub.add_parser("judges", parents=[common],
                            help="judge health: parse failures, order bias, flips on swap, agreement")
    judges.add_argument("--json", action="store_true")

    board = sub.add_parser("leaderboard", parents=[common],
                           help="Bradley-Terry ratings per model (95%% intervals), head-to-head records")
    board.add_argument("--json", action="store_true")
    board.add_argument("--format", help=f"only debates of this format ({', '.join(FORMATS)})")
    board.add_argument("--tag", help="only debates with this topic tag")
    board.add_argument("--judge", metavar="MODEL", help="only debates this judge model ruled on (provider:model)")
    board.add_argument("--since", metavar="DATE", help="only debates created on or after this date (YYYY-MM-DD)")
    board.add_argument("--until", metavar="DATE", help="only debates created on or before this date (YYYY-MM-DD)")
    board.add_argument("--series", action="store_true",
                       help="only side-swapped series, each rated once as a pair")
    board.add_argument("--by", choices=("judges", "audience", "people"), default="judges",
                       help="who decides each debate: the AI judges (default), the audience's swing, or the "
                            "people's verdicts")

    delete = sub.add_parser("delete", parents=[common], help="remove a debate with its log and share links")
    delete.add_argument("id")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    users = sub.add_parser("users", help="accounts for signing in to the web app")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    roles = [r.value for r in Role]
    add = users_sub.add_parser("add", parents=[common], help="create an account (password from stdin or a prompt)")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=roles)
    add.add_argument("--no-password", action="store_true",
                     help="no password: the account signs in only through the proxy's identity header")
    users_list = users_sub.add_parser("list", parents=[common], help="every account (never a password hash)")
    users_list.add_argument("--json", action="store_true")
    set_role = users_sub.add_parser("set-role", parents=[common], help="change an account's role")
    set_role.add_argument("name")
    set_role.add_argument("role", choices=roles)
    for name, text in (("disable", "stop an account from signing in"), ("enable", "let a disabled account in again"),
                       ("passwd", "set a new password (from stdin or a prompt)")):
        users_sub.add_parser(name, parents=[common], help=text).add_argument("name")
    tournament_commands.add_parser(sub, common)
    check = sub.add_parser("check", help="whether OpenAI-compatible servers answer, and their structured-output mode")
    check.add_argument("targets", nargs="*", metavar="URL|PRESET",
                       help="a server's OpenAI-compatible URL (…/v1) or a preset name (default: every local preset)")
    check.add_argument("--model", help="the model to probe (default: the first the server lists)")
    check.add_argument("--json", action="store_true")
    hooks = sub.add_parser("webhooks", help="signed HTTP notifications of debate and tournament events")
    hooks_sub = hooks.add_subparsers(dest="webhooks_command", required=True, metavar="COMMAND")
    hook_add = hooks_sub.add_parser("add", parents=[common], help="register an endpoint (prints its secret once)")
    hook_add.add_argument("url")
    hook_add.add_argument("--events", required=True, help=f"comma-separated: {', '.join(WEBHOOK_EVENTS)}")
    hook_add.add_argument("--slack", action="store_true", help="send Slack-compatible messages ({\"text\": …})")
    hooks_sub.add_parser("list", parents=[common], help="the endpoints (never a secret)") \
        .add_argument("--json", action="store_true")
    hooks_sub.add_parser("remove", parents=[common], help="remove an endpoint and its deliveries").add_argument("id")
    hook_log = hooks_sub.add_parser("deliveries", parents=[common], help="recent deliveries, newest first")
    hook_log.add_argument("--json", action="store_true")
    hook_log.add_argument("--limit", type=int, default=20)
    hooks_sub.add_parser("redeliver", parents=[common], help="send a delivery again").add_argument("id")
    token_commands.add_parser(sub, common)
    worker = sub.add_parser("worker", parents=[common], help="run debates for web processes (leases, jobs)")
    worker.add_argument("--lease", type=float, default=15.0,
                        help="seconds a debate stays this worker's without renewal (default 15)")
    worker.add_argument("--poll", type=float, default=1.0,
                        help="seconds between reads of the jobs table when no ring comes (default 1)")
    return parser


async def cmd_tournament(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, _settings(args), runs=True) as engine:
        try:
            row = await tournament_commands.run(engine, args, ACTOR, out)
        except tournament_commands.TournamentUsage as exc:
            raise UsageError(str(exc)) from None
    return EXIT_OK if row.status == "completed" else EXIT_STOPPED


async def cmd_tokens(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, _settings(args)) as engine:
        try:
            await token_commands.run(engine, args, exact_output(out) if getattr(args, "json", False) else out)
        except token_commands.TokenUsage as exc:
            raise UsageError(str(exc)) from None
    return EXIT_OK


async def cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    """Run debates for web processes: take debates by lease, answer their jobs, until SIGTERM/SIGINT."""
    from webapp.workers import Worker

    settings = _settings(args) or get_settings()
    async with opened(args.db, settings, runs=True) as engine:
        worker = Worker(engine, redis_url=settings.redis_url, lease=args.lease, poll=args.poll)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await worker.start()
        out.write(f"worker {worker.name} ready (lease {args.lease:g} s)\n")
        out.flush()
        try:
            await stop.wait()
        finally:
            await worker.close()
    return EXIT_OK


async def cmd_webhooks(args: argparse.Namespace, out: TextIO) -> int:
    settings = _settings(args) or get_settings()
    async with opened(args.db, settings) as engine:
        admin = WebhookAdmin(Gate(engine, CLI), settings.webhook_allow_private)  # audited as `cli`
        command = args.webhooks_command
        try:
            if command == "add":
                done = await admin.add(args.url, args.events, "slack" if args.slack else "json")
                out.write(f"Added webhook {done.endpoint.id}: {done.endpoint.url} "
                          f"({', '.join(done.endpoint.events)}{', Slack format' if args.slack else ''})\n")
                out.write(f"secret: {done.secret}\n")
                out.write("Keep the secret: it signs every delivery and is not shown again.\n")
            elif command == "list":
                endpoints = await admin.endpoints()
                if args.json:
                    exact_output(out).write(json.dumps([e.public() for e in endpoints], indent=2) + "\n")
                elif not endpoints:
                    out.write("No webhooks. Add one: python -m webapp webhooks add URL --events debate.completed\n")
                for e in [] if args.json else endpoints:
                    out.write(f"{e.id}  {e.url}  {','.join(e.events)}  {e.format}  by {e.created_by}\n")
            elif command == "remove":
                removed = await admin.remove(args.id)
                out.write(f"Removed webhook {removed.id} ({removed.url})\n")
            elif command == "deliveries":
                rows, total = await admin.deliveries(limit=args.limit)
                if args.json:
                    exact_output(out).write(json.dumps([r.model_dump(mode="json") for r in rows], indent=2) + "\n")
                else:
                    out.write(f"{total} deliver{'y' if total == 1 else 'ies'}\n")
                    for r in rows:
                        code = r.last_status if r.last_status is not None else "—"
                        error = f"  last error: {r.last_error}" if r.last_error else ""
                        out.write(f"{r.id}  {r.event}  {r.subject}  {r.status}  attempts {r.attempts}  "
                                  f"HTTP {code}{error}\n")
            else:
                again = await admin.redeliver(args.id)
                out.write(f"Delivery {again.id} ({again.event}) will be sent again\n")
        except (WebhookRefused, UnknownWebhook, ValueError) as exc:
            raise UsageError(f"webhooks {command}: {exc}") from None
    return EXIT_OK


COMMANDS = {"debate": cmd_debate, "rematch": cmd_rematch, "resume": cmd_resume,
            "list": cmd_list, "show": cmd_show, "export": cmd_export,
            "judges": cmd_judges, "leaderboard": cmd_leaderboard, "delete": cmd_delete, "users": cmd_users,
            "tournament": cmd_tournament, "worker": cmd_worker, "webhooks": cmd_webhooks, "tokens": cmd_tokens}


def settings_problem(exc: ValidationError) -> str:
    """A bad ROSTRUM_* setting, named as the variable a person sets."""
    parts = []
    for err in exc.errors():
        name = "ROSTRUM_" + "_".join(str(p) for p in err["loc"][:1]).upper()
        parts.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
    return "invalid setting: " + "; ".join(parts)


def _error(message: str) -> None:
    """A line on stderr, without control characters (it may quote a topic or a provider's words)."""
    sys.stderr.write(strip_controls(message) + "\n")


def dash_topic_problem(args: argparse.Namespace, extra: list[str]) -> str | None:
    """A topic starting with `-` reads as an unknown option: say so, naming it, and how to pass it."""
    if getattr(args, "command", None) != "debate" or args.topic is not None:
        return None
    topic = next((arg for arg in extra if arg.startswith("-")), None)
    if topic is None:
        return None
    return (f"topic: {topic!r} starts with '-', so it was read as an option; put -- before the topic, after "
            f"every option: python -m webapp debate [options] -- {shlex.quote(topic)}")


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = terminal_output(out or sys.stdout)  # no control characters reach the terminal (JSON: exact_output)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        problem = dash_topic_problem(args, extra)
        if problem is None:
            parser.error(strip_controls(f"unrecognized arguments: {' '.join(extra)}"))
        _error(f"error: {problem}")
        return EXIT_USAGE
    try:  # a bad setting is reported here, not as a traceback from deep inside the engine
        if args.command in COMMANDS:
            settings = get_settings()  # one settings object for the command and its engine, even with --db
            args.settings = settings
            args.db = args.db or str(settings.db)
    except ValidationError as exc:
        _error(f"error: {settings_problem(exc)}")
        return EXIT_USAGE
    try:
        if args.command == "formats":
            return cmd_formats(args, out)
        if args.command == "diagram":
            return cmd_diagram(args, out)
        if args.command == "migrate-store":
            return asyncio.run(cmd_migrate_store(args, out))
        if args.command == "check":
            return asyncio.run(cmd_check(args, out))
        return asyncio.run(COMMANDS[args.command](args, out))
    except UsageError as exc:
        _error(f"error: {exc}")
        return EXIT_USAGE
    except DebateNotFound as exc:
        _error(f"error: {exc}")
        return EXIT_USAGE
    except StoreError as exc:  # corrupt, locked by another process, read-only, disk full, unwritable directory
        _error(f"error: {exc}")
        _error(f"hint: {exc.advice}")
        return EXIT_FAILED
    except TransitionNotAllowed as exc:
        _error(f"error: {exc}")
        return EXIT_FAILED
