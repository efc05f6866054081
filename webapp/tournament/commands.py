"""The `tournament` command of the CLI: create a tournament (or continue one) and play it here,
printing each debate as it starts and ends, then the progress and the standings."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from webapp.engine.engine import Engine
from webapp.engine.formats import FORMATS
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError
from webapp.models import JudgeConfig, JudgeSpec
from webapp.tournament.plan import Contender, Slot, Tournament, sample_configs, schedule
from webapp.tournament.progress import progress, standings
from webapp.tournament.runner import TournamentRunner
from webapp.tournament.store import TournamentBusy, TournamentRow, TournamentStore
from webapp.wording import counted


class TournamentUsage(ValueError):
    """A bad command line; the message names the option."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    parser = sub.add_parser("tournament", parents=[common],
                            help="a round robin of models over topics (or --resume ID to continue one)")
    parser.add_argument("--models", help="A,B,C: provider:model each (a bare name is a demo model)")
    parser.add_argument("--topics", metavar="FILE", help="a text file, one topic a line (# starts a comment line)")
    parser.add_argument("--format", default="classic", help=f"one of: {', '.join(FORMATS)}")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--swap-sides", action="store_true", help="play each pairing twice, sides exchanged")
    parser.add_argument("--budget", type=float, metavar="USD",
                        help="total for the tournament: checked (estimated) before each debate starts")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N", help="debates at once (default 1)")
    parser.add_argument("--judge", action="append", metavar="PROVIDER:MODEL",
                        help="the judge (repeat for a panel; default demo:demo)")
    parser.add_argument("--no-judge", action="store_true", help="no verdicts (no standings either)")
    parser.add_argument("--max-tokens", type=int, help="each debater's output allowance per turn (default 1024)")
    parser.add_argument("--base-url", metavar="URL", help="the server of the compatible:… models (…/v1)")
    parser.add_argument("--name")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--resume", metavar="ID", help="continue a stopped or interrupted tournament")


def _problem(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'tournament'}: {e['msg']}" for e in exc.errors())


def read_topics(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TournamentUsage(f"--topics: cannot read {path}: {exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def build_tournament(args: argparse.Namespace, actor: str) -> Tournament:
    """The tournament the flags describe (validated; each slot's debate config checked too)."""
    if not args.models or not args.topics:
        raise TournamentUsage("give --models A,B,C and --topics FILE (or --resume ID)")
    data: dict[str, object] = {"format": args.format, "swap_sides": args.swap_sides, "concurrency": args.concurrency,
                               "created_by": actor}
    try:
        models = [Contender.parse(m) for m in args.models.split(",") if m.strip()]
        if args.base_url:
            models = [m.model_copy(update={"base_url": args.base_url}) if m.provider == "compatible" else m
                      for m in models]
        data["models"] = models
        if args.judge or args.no_judge:
            judges = [Contender.parse(j) for j in args.judge or ["demo:demo"]]
            data["judge"] = JudgeConfig(judges=[JudgeSpec(provider=j.provider, model=j.model) for j in judges],
                                        enabled=not args.no_judge)
        data["topics"] = read_topics(Path(args.topics))
        for flag in ("rounds", "budget", "max_tokens", "name", "seed"):
            value = getattr(args, flag)
            if value is not None:
                data["budget_usd" if flag == "budget" else flag] = value
        return Tournament.model_validate(data)
    except ValidationError as exc:
        raise TournamentUsage(_problem(exc)) from None
    except KeyError as exc:  # an unknown format
        raise TournamentUsage(f"--format: {exc.args[0]}") from None


def check_debates(engine: Engine, tournament: Tournament) -> None:
    """Every slot's debate must be valid before the first starts (a missing key, rounds out of range)."""
    for config in sample_configs(tournament):
        try:
            engine.validate(config)
        except ConfigError as exc:
            raise TournamentUsage(str(exc)) from None


def describe(tournament: Tournament, slot: Slot) -> str:
    pro, con = tournament.models[slot.pro].label, tournament.models[slot.con].label
    return f"{pro} (pro) vs {con} (con) on topic {slot.topic + 1}"


async def run(engine: Engine, args: argparse.Namespace, actor: str, out: TextIO) -> TournamentRow:
    """Create or continue the tournament, play it here and print where it ended."""
    store = TournamentStore(engine.store)
    if args.resume:
        row = await store.get(args.resume)
        if row is None:
            raise TournamentUsage(f"--resume: no tournament with id {args.resume!r}")
        tournament = row.tournament
        if args.budget is not None:
            tournament = await store.set_budget(tournament.id, args.budget)
        out.write(f"Tournament {tournament.id} — {tournament.name} (continued)\n")
    else:
        tournament = build_tournament(args, actor)
        check_debates(engine, tournament)
        tournament = await store.create(tournament)
        out.write(f"Tournament {tournament.id} — {tournament.name}\n")
    total = len(schedule(tournament))
    budget = f", budget ${tournament.budget_usd:.2f}" if tournament.budget_usd is not None else ""
    out.write(f"{counted(total, 'debate')}, {tournament.concurrency} at a time{budget}\n")

    def on_debate(slot: Slot, session: DebateSession, ended: bool) -> None:
        if ended:
            out.write(f"  ended   {session.id}: {session.status.value} — {describe(tournament, slot)}\n")
        else:
            out.write(f"  playing {session.id}: {describe(tournament, slot)}\n")
        out.flush()

    runner = TournamentRunner(engine, tournament.id, actor=actor, on_debate=on_debate)
    loop = asyncio.get_running_loop()
    pausing: list[asyncio.Task[None]] = []

    def on_sigint() -> None:  # Ctrl-C: no further debate, the playing ones paused; `--resume` continues
        if not runner.stop_requested:
            out.write("\nStopping (Ctrl-C): pausing the debates playing now…\n")
            runner.request_stop("stopped with Ctrl-C")
            pausing.append(loop.create_task(runner.pause_playing(actor)))

    with contextlib.suppress(NotImplementedError, RuntimeError):  # no signal handlers on this platform/thread
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        row = await runner.run()
    except TournamentBusy as exc:
        raise TournamentUsage(str(exc)) from None
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await asyncio.gather(*pausing, return_exceptions=True)
    await report(store, row, out)
    return row


async def report(store: TournamentStore, row: TournamentRow, out: TextIO) -> None:
    state = await progress(store, row)
    budget = f" of ${row.tournament.budget_usd:.2f}" if row.tournament.budget_usd is not None else ""
    out.write(f"\nTournament {row.id}: {row.status}{f' ({row.stop_reason})' if row.stop_reason else ''}\n")
    out.write(f"Debates done: {state.done}/{state.total} · spent ${state.spent:.4f}{budget}\n")
    table = standings(row.tournament, state.debates)
    if any(s.played for s in table):
        out.write("Standings (wins-losses-ties):\n")
        for s in table:
            out.write(f"  {s.label}: {s.wins}-{s.losses}-{s.ties}\n")
    if row.status != "completed":
        budget_usd = row.tournament.budget_usd
        more = state.add_to_finish(budget_usd) if budget_usd is not None else None
        if budget_usd is not None and more is not None:
            out.write(f"Add ${more:.4f} to finish: --budget {budget_usd + more:.4f} would let every remaining "
                      "debate fit\n")
        out.write(f"Continue with: python -m webapp tournament --resume {row.id} [--budget USD]\n")
